"""When the answer is in: a sequential rule for alternated stretches (`abtui run --alternate`).

The alternation runs in *blocks*: each block holds every value once, in an order drawn at
random (abtui.measure.alternate.schedule). Each complete block gives, per pair and compared
value, one sample: the log ratio of that value's stretch to the base's stretch in the same
block. Drift, warm-up and slowly varying noise are nearly the same within a block and cancel;
periodic interference lands on either value by the draw, so it cannot alias with the schedule.
The rule is a paired t on these block log ratios, looked at once per complete block:

- A maximum number of blocks (`max_runs`, N) is fixed in advance; look n (n complete blocks)
  is at information fraction n / N, and only complete blocks are looked at, so each look the
  spending was computed for is taken at most once.
- Lan-DeMets alpha spending (O'Brien-Fleming-like by default, Pocock-like on request) gives one
  z boundary per look, from the joint distribution of the looks' statistics (independent
  increments), integrated numerically on a grid (Armitage, McPherson and Rowe's recursion).
- At look n the interval is a repeated confidence interval: the paired t interval of the mean
  block log ratio (n − 1 degrees of freedom) at the nominal level that look's boundary gives,
  2 (1 − Φ(z_n)). The difference is significant when that interval excludes 0: the interval
  and the verdict are one procedure, so they never disagree.
- Family-wise error: the live rule judges K = pairs × (values − 1) comparisons. Each starts
  with α / K (Bonferroni); when one turns significant its α is passed on to the others (Holm's
  step-down, in the graphical form Maurer and Bretz (2013) proved for group-sequential
  designs: the remaining comparisons' boundaries are those of a design at the larger α, at the
  current and later looks). The chance that any of the K says "significant" when none differs
  stays at most α, whatever the correlation between pairs.

Blocks still needed (`more`): the fewest further blocks after which the repeated interval's
half-width, at that later look's own boundary and t quantile, is at most the larger of half of
ln(1 + min_effect) (then the interval excludes 0 or lies within ±min_effect, whatever the mean)
and |mean| less two standard errors (then it turns significant if the difference is that
large). It plans with the spread's 80 % upper confidence bound, and only from FORECAST_FROM
blocks on (a spread from 2 or 3 blocks is often far too small, and only the runs where it is
too small would be promised anything). Never 0 while undecided (at least 1); None when not
within the maximum.

An early stop (significant before the last look) tends to overstate |Δ|: the look that
crossed is the one where the noise helped. The line says so ("stopped early: Δ may overstate
the effect"): at a true +3 % (3 % noise) the Δ at an early stop overstates it by 21 % on
average (docs/sequential.md says why it is not adjusted).

Measured by simulation of these functions (tests/bench/bench_seq.py, `make bench seq`; the full
table in docs/sequential.md). False claims of the family, 2 pairs × 2 values, no difference, 20
blocks at most; old = strict ABAB, Welch on the stretches, a look after every flip, no family
control:

    scenario                          old      new
    independent noise 1 / 3 / 10 %    0.117 / 0.108 / 0.106   0.046 / 0.052 / 0.055
    linear drift -5 %                 0.005    0.054
    AR(1) noise phi 0.9 / 0.97        0.000 / 0.000           0.042 / 0.044
    periodic load, 2 x the stretch    0.964    0.037
    periodic load, 2.1 x              0.817    0.031
    periodic load, 3 / 4 / 6 / 0.7 x  0.000 / 0.000 / 0.051 / 0.000   0.036 / 0.041 / 0.030 / 0.035
    stalls                            0.021    0.012

One comparison alone (1 pair x 2 values) under a load on exactly every other stretch, so every
block's ratio is +-c: 0.073 at 8 blocks (the t overstates two-point samples; averaged over the
stretch, 0.047-0.060).

Power, a true +3 % at 3 % noise a stretch, one comparison, 20 blocks: 0.807 (old 0.848, with
its 11 % false claims); with a -5 % drift 0.810 (old 0.745). "About k more" resolved within k:
0.98 of claims.

These rates are over the order's draw, not per order: `--seed N` replays one order, and under
a given periodic load a given order's rate can be far higher (`seq_false_claim_per_seed`: the
lab test's shape, 2 pairs x 2 values, 10 blocks, a 2-stretch load; over seeds 0-999 the
average 0.023, 99th percentile 0.130, max 0.170 with the stretch's length drawn 1.0-1.1 and a
flip adding 0-0.3; with every stretch exactly 1.0 long the average 0.039 and the 99th
percentile 0.910; seed 1 at 1.1 long 0.162). No rule fixes that: the randomisation is what
makes any rule valid. A sign-flip rule on the same looks and spending, exact over the draw
for any noise (`seq_signflip_sequential`), still lets single seeds claim 0.63 and 0.40 of the
time (stretch 1.0 and 1.1 long; this rule 0.95 and 0.53), spends only 0.5-2 % of the 5 % at
10 blocks (its early increments buy no sign pattern), and finds a +3 % difference at 20
blocks 0.792 of the time against 0.804, under the 0.8 budget: the rule stays the paired t.
A claim is checked by a run with a new order, not a replay.

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
# the first look: two complete blocks (a variance of the block log ratios)
FIRST_LOOK = 2
# boundaries are capped here (a look that may spend next to nothing): Φ's tail beyond is ~1e-15
Z_MAX = 8.0
GRID = 401
# "about k more blocks" plans with the spread's upper confidence bound at this level
SPREAD_UPPER = 0.8
# ... and only from this many blocks on: before, the spread is too poorly known to plan with
FORECAST_FROM = 4


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


@functools.lru_cache(maxsize=32)
def _design(max_runs: int, alpha: float, spending: str) -> Design:
    if max_runs < FIRST_LOOK:
        raise ValueError(f"max_runs {max_runs}: at least {FIRST_LOOK} stretches per side")
    looks = np.arange(FIRST_LOOK, max_runs + 1) / max_runs
    return Design(max_runs, alpha, spending, tuple(float(x) for x in
                                                    boundaries(looks.tolist(), alpha, spending)))


def cumulative(d: Any) -> tuple[Any, Any, Any, Any]:
    """Every look's paired statistics from block log ratios (last axis: blocks in order):
    mean, standard error, degrees of freedom and n (blocks), for n = FIRST_LOOK … blocks.
    One formula for the live rule (a 1-D array: its last look is the current one) and the
    simulations (arrays of runs)."""
    d = np.asarray(d, dtype=float)
    n = np.arange(1, d.shape[-1] + 1)
    mean = np.cumsum(d, -1) / n
    with np.errstate(invalid="ignore", divide="ignore"):
        var = np.maximum(np.cumsum(d * d, -1) - n * mean**2, 0.0) / np.maximum(n - 1, 1)
    k = FIRST_LOOK - 1
    se = np.sqrt(var[..., k:] / n[k:])
    return mean[..., k:], se, n[k:] - 1, n[k:]


def half_width(design: Design, se: Any, df: Any, n: Any) -> Any:
    """The repeated interval's half-width (log scale) at look n: Student's t at the look's
    nominal level; unbounded at a look whose level is below 2^(1 − n), the chance that all n
    blocks fall on one side by the draw of their orders alone (`attainable`)."""
    from scipy.stats import t as student_t

    level = design.nominal(n)
    return np.where(attainable(n, level), student_t.isf(level / 2, df) * se, np.inf)


def attainable(n: Any, level: Any) -> Any:
    """Whether a look at n blocks may claim anything at this two-sided level. The order of
    each block is drawn at random, so with no difference at all, interference that lands on
    one stretch of each block (a timer at twice the stretch) makes every block's log ratio
    ±c, its sign the draw's: all n of one sign 2^(1 − n) of the time, and Student's t is then
    unbounded. The randomisation test, exact here, can never reject below that level: nor may
    the rule (measured, 2 pairs × 2 values: false claims under interference at 2 and 4 times
    the stretch fell from 0.074 and 0.058 to 0.043 and 0.035, power kept)."""
    return np.asarray(level) >= 2.0 ** (1 - np.asarray(n, dtype=float))


def within(mean: Any, half: Any, min_effect: float) -> Any:
    """The repeated interval lies inside ±min_effect (percent, on the log scale)."""
    edge = math.log1p(min_effect / 100)
    lo = -math.log1p(-min_effect / 100) if min_effect < 100 else math.inf
    return (mean - half > -lo) & (mean + half < edge)


def more_blocks(design: Design, sd: Any, n: Any, min_effect: float, mean: Any = 0.0) -> Any:
    """Further blocks (≥ 1) until the repeated interval's half-width, at each later look's own
    boundary and t quantile (a look that may claim nothing: never), is at most the larger of
    half of ln(1 + min_effect) (then it resolves, whatever the mean) and a low estimate of
    |mean| (|mean| less 2 standard errors: then it turns significant if the difference is as
    large as that). The spread of the block log ratios is taken at the upper SPREAD_UPPER
    confidence bound of `sd` (n − 1 degrees of freedom: a spread estimated from few blocks is
    often too small, and an estimate from it promises too soon). -1 when not by the last look.
    Numpy: arrays of sd, n and mean give arrays."""
    from scipy.stats import chi2
    from scipy.stats import t as student_t

    looks = np.arange(FIRST_LOOK, design.max_runs + 1)
    level = design.nominal(looks)
    factor = np.where(attainable(looks, level),
                      student_t.isf(level / 2, looks - 1) / np.sqrt(looks), np.inf)
    factor = np.minimum.accumulate(factor)  # non-increasing: the first look that suffices
    sd, n, mean = np.broadcast_arrays(np.asarray(sd, dtype=float), np.asarray(n),
                                      np.asarray(mean, dtype=float))
    df = np.maximum(n - 1, 1)
    upper = sd * np.sqrt(df / chi2.ppf(1 - SPREAD_UPPER, df))
    target = np.maximum(math.log1p(min_effect / 100) / 2,
                        np.abs(mean) - 2 * upper / np.sqrt(np.maximum(n, 1)))
    with np.errstate(divide="ignore", invalid="ignore"):
        need = target / upper
    first = np.searchsorted(-factor, -need, side="left")  # first look with factor <= need
    at = np.where(first < looks.size, looks[np.minimum(first, looks.size - 1)], -1)
    at = np.where(np.isfinite(need), at, FIRST_LOOK)  # sd 0: any look resolves it
    more = np.maximum(at, n + 1) - n
    return np.where((at < 0) | (n >= design.max_runs) | (n < FORECAST_FROM), -1, more)


# The boundaries come from the z statistics' joint distribution; the rule looks at t statistics
# (the spread estimated at each look), whose looks are less correlated: matched look by look to
# the nominal level, the rule's measured rate was 1.06-1.16 x the α spent (4 to 40 looks, α 0.05
# and 0.0125, 60 000 simulated runs each). The design spends α / T_LOOKS, which brings it to
# 1.02 α for 20 looks (0.0512 at α 0.05, 0.0509 for a family of 4; 40 000 runs), at a cost in
# power of half a point (a 3 % difference at 3 % noise: 0.815 instead of 0.821).
T_LOOKS = 1.05


@dataclass(frozen=True, slots=True)
class Family:
    """The comparisons the live rule judges together, and their α: each α / (K − rejected)
    (Holm's step-down passing α on to the comparisons still open)."""

    size: int
    max_runs: int = DEFAULT_MAX_RUNS
    alpha: float = stats.ALPHA
    spending: str = "obrien-fleming"

    def design(self, rejected: int = 0) -> Design:
        """The design one open comparison is judged by, with `rejected` already significant."""
        return Design.make(self.max_runs,
                           self.alpha / max(1, self.size - rejected) / T_LOOKS, self.spending)


@dataclass(frozen=True, slots=True)
class Assessment:
    """Where one comparison stands after the complete blocks so far."""

    delta: stats.Delta | None
    n: int  # complete blocks with both values
    significant: bool
    more: int | None  # blocks still to go to resolve min_effect (≥ 1), None: beyond the maximum
    max_runs: int
    min_effect: float = DEFAULT_MIN_EFFECT
    within: bool = False  # not significant, the interval inside ±min_effect

    @property
    def early(self) -> bool:
        """Significant before the last look: the Δ may overstate the effect."""
        return self.significant and self.n < self.max_runs

    @property
    def verdict(self) -> str:
        """`+6.2%` (significant), `~` (not, so far) or `?` (too few blocks to look)."""
        if self.significant and self.delta is not None:
            return f"{self.delta.pct:+.1f}%"
        return "~" if self.n >= FIRST_LOOK else "?"

    def line(self, blocks: int | None = None) -> str:
        """`Δ -81.2% [-84.0, -78.1], -81.2% significant (3 blocks; stopped early: Δ may
        overstate the effect)` or `Δ … ~ (4 blocks), about 6 more blocks to resolve 1%`.

        `blocks`: the complete blocks of the schedule so far (the count an alternation's
        header gives). A comparison judged on fewer says so with that count: one decided at
        an earlier look says at which, and one that left blocks out (its stretch on this
        pair counted under half its time: a stop, a failed run) how many."""
        ns = self._blocks(blocks)
        if self.delta is None:
            return f"? ({ns})"
        text = f"Δ {self._delta_text()}, {self.verdict}"
        if self.significant:
            early = "; stopped early: Δ may overstate the effect" if self.early else ""
            return f"{text} significant ({ns}{early})"
        text += f" ({ns})"
        if self.within:
            return f"{text}, no difference of {self.min_effect:g}% or more"
        if self.n >= FIRST_LOOK:
            if self.more is None and self.n < FORECAST_FROM:
                return f"{text}, too few blocks yet to say how many more resolve " \
                       f"{self.min_effect:g}%"
            if self.more is None:
                return f"{text}, not resolved to {self.min_effect:g}% within the maximum " \
                       f"of {self.max_runs} blocks at this spread"
            return f"{text}, about {self.more} more block{'s' if self.more != 1 else ''} " \
                   f"to resolve {self.min_effect:g}%"
        return text

    def _delta_text(self) -> str:
        """The Δ with its interval; at the first looks the spending boundary is so wide that
        the interval reaches -100 % and beyond a million percent, which says nothing a
        reader can use (`[-100.0, +inf]`): then only that it is not bounded yet."""
        d = self.delta
        assert d is not None
        if d.low is not None and d.high is not None and d.low <= -99.95 and d.high >= 1e6:
            return f"{d.pct:+.1f}% (interval not bounded yet)"
        return str(d)

    def _blocks(self, blocks: int | None) -> str:
        """How many blocks this comparison stands on, against the schedule's `blocks`."""
        if blocks is None or blocks <= self.n:
            return f"{self.n} block{'s' if self.n != 1 else ''}"
        of = f"{self.n} of {blocks} block{'s' if blocks != 1 else ''}"
        if self.significant:
            return f"decided at {of}"
        return f"{of}: {blocks - self.n} left out, a stretch under half its time"


def _pct(x: float) -> float:
    return math.expm1(x) * 100 if x < 700 else math.inf


def assess(ratios: Sequence[float], design: Design, min_effect: float = DEFAULT_MIN_EFFECT
           ) -> Assessment:
    """The look these block log ratios (value vs base, one per complete block) make: the
    paired repeated interval, the verdict from it, and the blocks still needed."""
    d = np.asarray([x for x in ratios if math.isfinite(x)], dtype=float)
    n = d.size
    if n == 0:
        return Assessment(None, 0, False, None, design.max_runs, min_effect)
    if n < FIRST_LOOK:
        pct = _pct(float(d.mean()))
        return Assessment(stats.Delta(pct, why=f"fewer than {FIRST_LOOK} blocks"), n, False,
                          None, design.max_runs, min_effect)
    mean, se, df, _n = (float(x[-1]) for x in cumulative(d))
    half = float(half_width(design, se, df, n)) if se > 0 else 0.0
    significant = bool(abs(mean) > half) if se > 0 else mean != 0
    delta = stats.Delta(_pct(mean), _pct(mean - half), _pct(mean + half))
    inside = not significant and bool(within(mean, half, min_effect))
    more = None
    if not significant and not inside:
        got = int(more_blocks(design, se * math.sqrt(n), n, min_effect, mean))
        more = got if got > 0 else None
    return Assessment(delta, n, significant, more, design.max_runs, min_effect, inside)


@dataclass(frozen=True, slots=True)
class Simulated:
    """The live rule run on simulated block log ratios (runs × K comparisons × N blocks):
    `decided` the look (n) at which each comparison turned significant (0: never), `sign` of
    its mean there, `estimate` its log ratio there; per look (runs × K × looks) `within` and
    `more` (as Assessment says them, -1: none) while undecided."""

    decided: NDArray[np.int64]
    estimate: NDArray[np.float64]
    within: NDArray[np.bool_]
    more: NDArray[np.int64]
    looks: NDArray[np.int64]


def simulate(d: Any, family: Family, min_effect: float = DEFAULT_MIN_EFFECT) -> Simulated:
    """The live rule (Holm over the family, the paired repeated interval at each look,
    `within`, `more_blocks`) on block log ratios d[run, comparison, block], vectorised over
    runs: what Verdicts says live, for the statistics bench and the tests."""
    d = np.asarray(d, dtype=float)
    runs, k = d.shape[0], d.shape[1]
    mean, se, df, looks = cumulative(d)
    designs = [family.design(r) for r in range(k)]
    half = np.stack([half_width(g, se, df, looks) for g in designs])  # levels × runs × K × L
    crossed = np.abs(mean)[None] > half
    decided = np.zeros((runs, k), dtype=np.int64)
    estimate = np.full((runs, k), np.nan)
    inside = np.zeros(mean.shape, dtype=bool)
    more = np.full(mean.shape, -1, dtype=np.int64)
    idx = np.arange(runs)
    for li, n in enumerate(looks):
        while True:  # Holm: a rejection passes its α on, at this same look
            level = np.minimum((decided > 0).sum(1), k - 1)
            new = (decided == 0) & crossed[level, idx, :, li]
            if not new.any():
                break
            decided[new] = n
            estimate[new] = mean[..., li][new]
        level = np.minimum((decided > 0).sum(1), k - 1)
        h = half[level, idx, :, li]
        open_ = decided == 0
        inside[..., li] = open_ & within(mean[..., li], h, min_effect)
        for r in np.unique(level):
            rows = level == r
            got = more_blocks(designs[r], se[rows, :, li] * math.sqrt(n), n, min_effect,
                              mean[rows, :, li])
            more[rows, :, li] = np.where(open_[rows] & ~inside[rows, :, li], got, -1)
    return Simulated(decided, estimate, inside, more, looks)
