"""When the answer is in: a sequential rule for alternated stretches (`abtui run --alternate`).

A knob flipped back and forth (ABAB…) gives one run-level value per stretch and per pair. After
every completed round (n stretches on each side) the rule looks at the Δ of the means and its
interval (abtui.reports.stats: Welch's t on the log ratio). Looking after every round at the
usual 95 % interval and stopping at the first one that excludes 0 would claim a difference far
more often than 5 % of the time when there is none; the rule keeps that rate at `alpha`:

- A maximum number of stretches per side (`max_runs`, N) is fixed in advance; look n is at
  information fraction n / N.
- Lan-DeMets alpha spending (O'Brien-Fleming-like by default, Pocock-like on request) says how
  much of `alpha` may be spent by each look; the boundaries (one z per look) follow from the
  joint distribution of the looks' statistics (independent increments), integrated numerically
  on a grid (Armitage, McPherson and Rowe's recursion).
- At look n the interval is a repeated confidence interval: the Δ's t interval at the nominal
  level that look's boundary gives (2 (1 − Φ(z_n))), with Welch's degrees of freedom. The
  difference is significant, and the rule stops, when that interval excludes 0. With
  O'Brien-Fleming spending early looks demand overwhelming evidence and the last one is close
  to the fixed-sample 95 % interval.

Stretches still needed (`needed`): how many stretches per side in all would detect a true
difference of `min_effect` with probability POWER at the last look's boundary, from the spread
(coefficient of variation) of the stretches so far: n = (z_N + z_POWER)² (cv_a² + cv_b²) /
ln(1 + min_effect)², less those taken.

scipy is imported lazily (the console starts without it).
"""

from __future__ import annotations

import functools
import math
from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import numpy as np

from abtui.core.model import DEFAULT_MAX_RUNS, DEFAULT_MIN_EFFECT
from abtui.reports import stats

if TYPE_CHECKING:
    from numpy.typing import NDArray

SPENDING = ("obrien-fleming", "pocock")
POWER = 0.8
# the first look: two stretches on each side (a variance on each side)
FIRST_LOOK = 2
# boundaries are capped here (a look that may spend next to nothing): Φ's tail beyond is ~1e-15
Z_MAX = 8.0
GRID = 401


def spent(t: NDArray[np.float64], alpha: float, spending: str) -> NDArray[np.float64]:
    """Lan-DeMets spending function: the part of `alpha` (two-sided) spent by information
    fraction t, half on each side, each side spending alpha / 2 by the one-sided function (as
    ldbounds and gsDesign do): O'Brien-Fleming-like 2 − 2 Φ(z_{1−α/4} / √t) a side, Pocock-like
    α/2 ln(1 + (e − 1) t) a side."""
    from scipy.special import ndtr, ndtri

    t = np.clip(np.asarray(t, dtype=float), 1e-12, 1.0)
    if spending == "obrien-fleming":
        return 4.0 - 4.0 * ndtr(ndtri(1 - alpha / 4) / np.sqrt(t))
    if spending == "pocock":
        return alpha * np.log1p((math.e - 1) * t)
    raise ValueError(f"spending {spending!r}: expected one of {', '.join(SPENDING)}")


def boundaries(fractions: Sequence[float], alpha: float = stats.ALPHA,
               spending: str = "obrien-fleming") -> NDArray[np.float64]:
    """Two-sided z boundaries, one per look at these increasing information fractions, such
    that under no difference the chance of crossing by look k is spent(t_k).

    The score S_k = Z_k √t_k has independent normal increments; the density of S_k on the
    paths not stopped yet is carried from look to look on a grid (trapezoid rule), and each
    boundary found by root finding on the probability of crossing there."""
    from scipy.optimize import brentq
    from scipy.special import ndtr, ndtri

    t = np.asarray(fractions, dtype=float)
    inc = np.diff(np.concatenate([[0.0], spent(t, alpha, spending)]))
    z = np.empty(t.size)
    z[0] = min(Z_MAX, float(ndtri(1 - inc[0] / 2))) if inc[0] > 0 else Z_MAX
    s, w = _grid(z[0] * math.sqrt(t[0]))
    mass = w * _phi(s / math.sqrt(t[0])) / math.sqrt(t[0])  # sub-density × weight
    for k in range(1, t.size):
        sd, root_t = math.sqrt(t[k] - t[k - 1]), math.sqrt(t[k])

        def crossing(c: float, s: Any = s, mass: Any = mass, sd: float = sd,
                     root_t: float = root_t) -> float:
            b = c * root_t
            return float(np.sum(mass * (ndtr((-b - s) / sd) + ndtr((s - b) / sd))))

        target = float(inc[k])
        z[k] = Z_MAX if target <= crossing(Z_MAX) else \
            brentq(lambda c, target=target: crossing(c) - target, 0.0, Z_MAX, xtol=1e-9)
        x, w = _grid(z[k] * root_t)
        mass = w * (_phi((x[:, None] - s) / sd) @ mass) / sd
        s = x
    return z


def _phi(x: Any) -> Any:
    return np.exp(-0.5 * np.square(x)) / math.sqrt(2 * math.pi)


def _grid(half: float) -> tuple[NDArray[np.float64], NDArray[np.float64]]:
    """GRID points across (−half, half) and their trapezoid weights."""
    x = np.linspace(-half, half, GRID)
    w = np.full(GRID, x[1] - x[0])
    w[[0, -1]] /= 2
    return x, w


@dataclass(frozen=True, slots=True)
class Design:
    """The rule for at most `max_runs` stretches per side, looks from FIRST_LOOK on."""

    max_runs: int
    alpha: float
    spending: str
    z: tuple[float, ...]  # the boundary at look n is z[n - FIRST_LOOK]

    @classmethod
    def make(cls, max_runs: int = DEFAULT_MAX_RUNS, alpha: float = stats.ALPHA,
             spending: str = "obrien-fleming") -> Design:
        return _design(max_runs, alpha, spending)

    def nominal(self, n: Any) -> Any:
        """The two-sided nominal level at look n (n stretches per side; beyond the last look,
        the last look's): what the interval there is drawn at."""
        from scipy.special import ndtr

        i = np.clip(np.asarray(n) - FIRST_LOOK, 0, len(self.z) - 1)
        return 2 * (1 - ndtr(np.asarray(self.z)[i]))

    def crossed(self, log_ratio: Any, se: Any, df: Any, n: Any) -> Any:
        """Whether the repeated interval at look n excludes 0 (numpy: scalars or arrays)."""
        from scipy.stats import t as student_t

        q = student_t.isf(self.nominal(n) / 2, df)
        with np.errstate(invalid="ignore"):
            return (np.asarray(n) >= FIRST_LOOK) & (np.abs(log_ratio) > q * se)

    @property
    def last_z(self) -> float:
        return self.z[-1]


@functools.lru_cache(maxsize=32)
def _design(max_runs: int, alpha: float, spending: str) -> Design:
    if max_runs < FIRST_LOOK:
        raise ValueError(f"max_runs {max_runs}: at least {FIRST_LOOK} stretches per side")
    looks = np.arange(FIRST_LOOK, max_runs + 1) / max_runs
    return Design(max_runs, alpha, spending, tuple(float(x) for x in
                                                    boundaries(looks.tolist(), alpha, spending)))


def needed(base: Sequence[float], other: Sequence[float], min_effect: float,
           z_final: float) -> int | None:
    """Stretches per side in all that would detect a true Δ of `min_effect` percent with
    probability POWER at a boundary of `z_final`, from the spread so far (None below 2 a side
    or without a positive mean)."""
    from scipy.special import ndtri

    a, b = stats.summarize(base), stats.summarize(other)
    if a.cv is None or b.cv is None or not min_effect > 0 or not (a.mean and b.mean):
        return None
    if a.mean <= 0 or b.mean <= 0:
        return None
    spread = a.cv**2 + b.cv**2
    n = (z_final + float(ndtri(POWER))) ** 2 * spread / math.log1p(min_effect / 100) ** 2
    return max(FIRST_LOOK, math.ceil(n))


@dataclass(frozen=True, slots=True)
class Assessment:
    """Where one configuration stands against its base after the stretches so far."""

    delta: stats.Delta | None
    n_base: int
    n_other: int
    significant: bool
    total_needed: int | None  # stretches per side in all to resolve min_effect (needed())
    max_runs: int
    min_effect: float = DEFAULT_MIN_EFFECT

    @property
    def within(self) -> bool:
        """Not significant, and the repeated interval lies within ±min_effect: no difference
        that matters (the interval is valid at any look, so this can be said at any look)."""
        d = self.delta
        return not self.significant and d is not None and d.low is not None and \
            d.high is not None and -self.min_effect < d.low and d.high < self.min_effect

    @property
    def n(self) -> int:
        return min(self.n_base, self.n_other)

    @property
    def more(self) -> int | None:
        """Stretches per side still to go to resolve min_effect (0: enough taken)."""
        return None if self.total_needed is None else max(0, self.total_needed - self.n)

    @property
    def verdict(self) -> str:
        """`+6.2%` (significant), `~` (not, so far) or `?` (too few stretches to look)."""
        if self.significant and self.delta is not None:
            return f"{self.delta.pct:+.1f}%"
        return "~" if self.n >= FIRST_LOOK else "?"

    def line(self) -> str:
        """`Δ -81.2% [-84.0, -78.1], -81.2% significant (n=3+3)` or `… ~ (n=4+4), about 6 more
        stretches per side to resolve 1%`."""
        ns = f"n={self.n_base}+{self.n_other}"
        if self.delta is None:
            return f"? ({ns})"
        text = f"Δ {self.delta}, {self.verdict}"
        text += " significant" if self.significant else ""
        text += f" ({ns})"
        more = self.more
        if self.within:
            text += f", no difference of {self.min_effect:g}% or more"
        elif not self.significant and more is not None:
            beyond = " (beyond the maximum)" if self.total_needed is not None and \
                self.total_needed > self.max_runs else ""
            text += f", about {more} more stretch{'es' if more != 1 else ''} per side " \
                    f"to resolve the minimum effect{beyond}"
        return text


def assess(base: Sequence[float], other: Sequence[float], design: Design,
           min_effect: float = DEFAULT_MIN_EFFECT) -> Assessment:
    """The repeated interval and verdict at the look these stretches make (n = the smaller
    side), and how many stretches per side would resolve `min_effect` percent."""
    a, b = [float(x) for x in base if math.isfinite(x)], \
        [float(x) for x in other if math.isfinite(x)]
    n = min(len(a), len(b))
    level = 1 - float(design.nominal(max(n, FIRST_LOOK)))
    d = stats.delta(a, b, confidence=level)
    significant = False
    sa, sb = stats.summarize(a), stats.summarize(b)
    if n >= FIRST_LOOK and sa.mean and sb.mean and sa.mean > 0 and sb.mean > 0 \
            and sa.stdev is not None and sb.stdev is not None:
        lr, se, df = stats.log_ratio_stats(sa.mean, sa.stdev**2, sa.n, sb.mean, sb.stdev**2,
                                           sb.n)
        significant = bool(design.crossed(lr, se, df, n)) if se > 0 else lr != 0
    return Assessment(d, len(a), len(b), significant,
                      needed(a, b, min_effect, design.last_z), design.max_runs, min_effect)
