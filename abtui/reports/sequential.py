"""When the answer is in: a sequential rule for alternated stretches (`abtui run --alternate`).

The alternation runs in *blocks* whose order is drawn at random (abtui.measure.alternate
.schedule): for two values four stretches, each value twice, in one of the six balanced
orders (BALANCED); for more a permutation. Each complete block gives, per pair and compared
value, one sample: the mean log rate of that value's stretches in the block less the base's
(`contrasts`; a block with a stretch that moved nothing is left out: deaths are judged on
their own, abtui.reports.deaths, and a first-order carryover is fitted beside the ratios,
abtui.reports.carryover).
Drift, warm-up and slowly varying noise are nearly the same within a block and cancel;
periodic interference lands on either value by the draw. The rule is a paired t on these
block log ratios, looked at once per complete block:

- A maximum number of blocks (N) is fixed in advance; look n is at information fraction
  n / N, and only complete blocks are looked at, so each look the spending was computed for
  is taken at most once.
- Lan-DeMets alpha spending gives one z boundary per look, from the joint distribution of
  the looks' statistics (independent increments), integrated numerically on a grid
  (Armitage, McPherson and Rowe's recursion). The default spends O'Brien-Fleming-like, except
  that the first look whose randomisation floor is within reach spends that floor at once
  (`spending_at`): an obvious effect is called at the 3rd block of four (12 stretches).
- At look n the interval is a repeated confidence interval: the paired t interval of the mean
  block log ratio at the nominal level that look's boundary gives, its spread pooled within
  and between blocks of four (`cumulative`) and never below what the figures' printed
  precision allows (`resolution`). The difference is significant when that interval excludes
  0 and the randomisation test over the blocks' possible arrangements agrees at the same
  level (`randomisation_p`: exact over the draw of the orders, whatever the noise); a look
  below the randomisation floor 2 A^(−n) claims nothing (`attainable`).
- Family-wise error: the live rule judges K = pairs × (values − 1) comparisons. Each starts
  with α / K (Bonferroni); when one turns significant its α is passed on to the others
  (Holm's step-down, in the graphical form Maurer and Bretz (2013) proved for group-sequential
  designs). The chance that any of the K says "significant" when none differs stays at most
  α, whatever the correlation between pairs.

Blocks still needed (`more`): the fewest further blocks after which the repeated interval's
half-width, at that later look's own boundary and t quantile, is at most the larger of half
of ln(1 + min_effect) and |mean| less two standard errors; planned with the spread's 80 %
upper confidence bound, once it has three degrees of freedom. Never 0 while undecided.

The live Δ is the ratio of geometric means, paired by block (DELTA_LABEL "Δgeo"); the cells'
and the gate's Δ are ratios of means, and each line names its own.

Measured by simulation of these functions driven by the project's own schedule and boundary
(tests/bench/bench_seq.py; docs/sequential.md has the tables): A/A family false claims at most
0.056 over 70 scenarios (1 × 2, 2 × 2 and 1 × 3 families; periodic loads of 2–7 stretches and
one block with flips of up to 3 stretches, dead stretches, 3-digit rates, drift, AR(1),
stalls; last round's rule 0.07–0.29 in the periodic ones); restarting the runs at every
boundary under periodic loads of 2–7 stretches, and a value with no effect of its own and an
after-effect of 3–10 % (blocks and crossover), each within 0.06; power at 3 % / 3 % 0.804
within 20 stretches a value, 0.793 with a −5 % drift, 0.708 with one dead stretch of 40 (an
A/A run's printed |Δ| then 0.6 % at the median); a value dying in 35 % of its stretches
called worse 0.77 of the time, never "no difference"; a difference of ten times the noise
called after a median of 12 stretches (2 pairs × 2 values). The rates are over the draw of
the order, not per seed: `--seed N` replays one order's luck.

scipy is imported lazily (the console starts without it).
"""

from __future__ import annotations

import dataclasses
import functools
import math
from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, NamedTuple

import numpy as np

from abtui.core.model import DEFAULT_MAX_RUNS, DEFAULT_MIN_EFFECT
from abtui.core.numbers import sig
from abtui.core.orders import BALANCED
from abtui.reports import carryover, deaths, stats
from abtui.reports.stats import pct_of_log as _pct

if TYPE_CHECKING:
    from numpy.typing import NDArray

SPENDING = ("floor+obrien-fleming", "obrien-fleming", "pocock")
# the first look: two complete blocks (a variance of the block log ratios)
FIRST_LOOK = 2
# boundaries are capped here (a look that may spend next to nothing): Φ's tail beyond is ~1e-15
Z_MAX = 8.0
GRID = 401
# the live Δ: the ratio of geometric means, paired by block (exp of the mean block log ratio
# less one); the cells' and the gate's Δ is a ratio of arithmetic means: each says which
DELTA_KIND = "geometric"
DELTA_LABEL = "Δgeo"
# an early stop's note only when |Δ| (log) is under this many half-widths of its interval
MATERIAL = 2.0
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
    if spending.startswith("hsd:"):  # Hwang, Shih and DeCani (1990), gamma after the colon
        gamma = float(spending[4:])
        return alpha * np.expm1(-gamma * t) / math.expm1(-gamma) if gamma else alpha * t
    raise ValueError(f"spending {spending!r}: expected one of {', '.join(SPENDING)}")


def boundaries(fractions: Sequence[float], alpha: float = stats.ALPHA,
               spending: str = "obrien-fleming", arrangements: int = 0
               ) -> NDArray[np.float64]:
    """Two-sided z boundaries, one per look at these increasing information fractions, such
    that under no difference the chance of crossing by look k is spent(t_k).

    The score S_k = Z_k √t_k has independent normal increments; the density of S_k on the
    paths not stopped yet is carried from look to look on a grid (trapezoid rule), and each
    boundary found by root finding on the probability of crossing there."""
    from scipy.optimize import brentq
    from scipy.special import ndtr, ndtri

    t = np.asarray(fractions, dtype=float)
    inc = np.diff(np.concatenate([[0.0], spending_at(t, alpha, spending, arrangements)]))
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


def spending_at(t: Any, alpha: float, spending: str, arrangements: int = 0) -> Any:
    """The α spent by each look at fractions t (the looks FIRST_LOOK … of a design).
    `floor+obrien-fleming` (the default): O'Brien-Fleming-like, except that the first look
    at which the randomisation floor (`attainable`, `arrangements` a block) is at most
    FLOOR_SHARE of α spends that floor at once (just above it), and the looks after spend
    the rest in O'Brien-Fleming's proportions: an effect far beyond the noise can be called
    at the first look the design allows (three blocks of four, twelve stretches) instead of
    waiting for the spending to reach the floor (five blocks)."""
    t = np.asarray(t, dtype=float)
    if not spending.startswith("floor+"):
        return spent(t, alpha, spending)
    base = spent(t, alpha, spending[len("floor+"):])
    if arrangements <= 2:  # AB or BA: the floor allows nothing before the 7th block
        return base
    n = FIRST_LOOK + np.arange(t.size)
    floor = 2.0 * float(max(arrangements, 2)) ** (-n.astype(float)) * (1 + FLOOR_MARGIN)
    fits = np.nonzero((floor <= FLOOR_SHARE * alpha) & (floor > base))[0]
    if fits.size == 0:
        return base
    lump = floor[fits[0]]
    return np.where(np.arange(t.size) >= fits[0], lump + (alpha - lump) * base / alpha, base)


# the floor's lump: at most this share of α, and this much above the floor itself
FLOOR_SHARE = 0.5
FLOOR_MARGIN = 0.02


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
    arrangements: int = 2  # equally likely arrangements of a block (attainable)

    @classmethod
    def make(cls, max_runs: int = DEFAULT_MAX_RUNS, alpha: float = stats.ALPHA,
             spending: str = SPENDING[0], arrangements: int = 2) -> Design:
        return _design(max_runs, alpha, spending, arrangements)

    def nominal(self, n: Any) -> Any:
        """The two-sided nominal level at look n (n stretches per side; beyond the last look,
        the last look's): what the interval there is drawn at."""
        from scipy.special import ndtr

        i = np.clip(np.asarray(n) - FIRST_LOOK, 0, len(self.z) - 1)
        return 2 * (1 - ndtr(np.asarray(self.z)[i]))


@functools.lru_cache(maxsize=32)
def _design(max_runs: int, alpha: float, spending: str, arrangements: int) -> Design:
    if max_runs < FIRST_LOOK:
        raise ValueError(f"max_runs {max_runs}: at least {FIRST_LOOK} stretches per side")
    looks = np.arange(FIRST_LOOK, max_runs + 1) / max_runs
    z = boundaries(looks.tolist(), alpha, spending, arrangements)
    return Design(max_runs, alpha, spending, tuple(float(x) for x in z), arrangements)


def cumulative(d: Any, floor: Any = 0.0, tss: Any = None) -> tuple[Any, Any, Any, Any]:
    """Every look's paired statistics from block log ratios (last axis: blocks in order):
    mean, standard error, degrees of freedom and n (blocks), for n = FIRST_LOOK … blocks.
    One formula for the live rule (a 1-D array: its last look is the current one) and the
    simulations (arrays of runs). `floor`: the smallest spread of a block's log ratio the
    figures' printed precision allows (broadcast against d without its last axis): the
    spread is never taken below it. `tss` (blocks of four, two values: each block's sum of
    squares about its mean, as d): the spread is the two-way model's, pooled within and
    between blocks (3n − 1 degrees of freedom, not n − 1: the replicates in a block say
    how noisy a stretch is), for the statistic; its validity is the randomisation check's."""
    d = np.asarray(d, dtype=float)
    n = np.arange(1, d.shape[-1] + 1)
    mean = np.cumsum(d, -1) / n
    with np.errstate(invalid="ignore", divide="ignore"):
        if tss is None:
            df = n - 1
            var = np.maximum(np.cumsum(d * d, -1) - n * mean**2, 0.0) / np.maximum(df, 1)
        else:
            df = n - 1 + POOLED_DF * n
            var = np.maximum(np.cumsum(np.asarray(tss, dtype=float), -1) - n * mean**2,
                             0.0) / df
    var = np.where(var <= 1e-12 * mean**2, 0.0, var)  # equal ratios: zero, not rounding
    var = np.maximum(var, np.square(np.asarray(floor, dtype=float))[..., None])
    k = FIRST_LOOK - 1
    se = np.sqrt(var[..., k:] / n[k:])
    return mean[..., k:], se, df[k:], n[k:]


# blocks of four: the degrees of freedom each block adds to the pooled spread beyond one
POOLED_DF = 2


# a block's log ratio under each order: the mean ln rate of the 1s less the 0s'
_BALANCED_WEIGHTS = np.asarray(BALANCED, dtype=float) - 0.5
# the randomisation check: every pattern of the blocks' arrangements up to this many, else
# this many drawn (seeded: the live rule and the bench draw the same)
EXACT = 50_000
DRAWS = 4_000
DRAW_SEED = 33


def randomisation_p(options: Any, floor: Any = 0.0, tss: Any = None) -> Any:
    """The randomisation p of the paired t (two-sided) at the last block: `options`
    (events × blocks × arrangements), each block's log ratio under each arrangement its
    order could have taken, the drawn one first (as `contrasts` gives them, the observed one
    rearranged to index 0 by `observed_first`). The share of arrangement patterns whose |t|
    (the spread never below `floor`) is at least the observed one: exact over the draw of
    the orders for any noise, however few values the ratios take. Every pattern when there
    are at most EXACT, else DRAWS drawn."""
    c = np.asarray(options, dtype=float)
    events, n, a = c.shape
    floor = np.broadcast_to(np.asarray(floor, dtype=float), (events,))
    if a ** n <= EXACT:
        pick = np.indices((a,) * n).reshape(n, -1).T  # patterns × blocks
    else:
        pick = np.random.default_rng(DRAW_SEED).integers(0, a, (DRAWS, n))
        pick[0] = 0

    total = None if tss is None else np.asarray(tss, dtype=float).sum(-1)

    def t(x: Any, f: Any, total: Any) -> Any:  # cumulative's statistic at the last block
        mean = x.mean(-1)
        with np.errstate(divide="ignore", invalid="ignore"):
            var = x.var(-1, ddof=1) if total is None else \
                np.maximum(total - n * mean**2, 0.0) / (n - 1 + POOLED_DF * n)
            return np.abs(mean) / np.sqrt(np.maximum(var, np.square(f)) / n)

    observed = t(c[:, :, 0], floor, total)
    out = np.empty(events)
    for at in range(0, events, 16):
        x = c[at:at + 16][:, np.arange(n)[None, :], pick]  # events × patterns × blocks
        got = t(x, floor[at:at + 16, None], None if total is None else total[at:at + 16, None])
        out[at:at + 16] = np.mean(got >= observed[at:at + 16, None] * (1 - 1e-9), axis=1)
    return out


def observed_first(options: Any, d: Any) -> Any:
    """`options` with, in each block, the arrangement whose ratio is the observed `d` moved
    to index 0 (the arrangements are a group: the pattern's distribution is the same)."""
    c = np.asarray(options, dtype=float)
    hit = np.argmin(np.abs(c - np.asarray(d, dtype=float)[..., None]), -1)
    first = np.take_along_axis(c, hit[..., None], -1)
    rest = np.where(np.arange(c.shape[-1]) == hit[..., None], c[..., :1], c)
    return np.concatenate([first, rest[..., 1:]], -1)


# iperf3 prints rates with 3 significant digits (text mode): a figure is known to half a unit
# of its third digit, 0.05–0.5 % of it
DIGITS = 3


def resolution(rate: Any) -> Any:
    """The relative half-step of a rate printed with DIGITS significant digits."""
    r = np.asarray(rate, dtype=float)
    with np.errstate(divide="ignore", invalid="ignore"):
        step = 10.0 ** (np.floor(np.log10(np.where(r > 0, r, 1.0))) - (DIGITS - 1))
        return np.where(r > 0, 0.5 * step / np.where(r > 0, r, 1.0), 0.0)


def log_rates(rates: Any) -> Any:
    """ln of stretch rates (last axis: stretches), nan for no sample and for a stretch that
    moved nothing (rate 0): a dead stretch is evidence about its value, counted apart
    (abtui.reports.deaths), not a rate inside the log ratios."""
    r = np.asarray(rates, dtype=float)
    with np.errstate(invalid="ignore", divide="ignore"):
        return np.log(np.where(r > 0, r, np.nan))


def contrasts(rates: Any, pos: Any) -> Contrasts:
    """Block log ratios and their resolution floor from stretch rates (…, stretches: runs,
    pairs) and the schedule's `pos` (blocks × values × stretches of a value in the block, as
    abtui.measure.alternate.design.positions gives; with a leading runs axis when each run has its
    own order): per compared value (values 1…), the mean ln rate of its stretches in the
    block less the base's (…, compared, blocks), nan where a stretch has no sample; and per
    compared value the floor (…, compared): the mean over blocks of the precision of the two
    means' figures (`resolution`, at its widest: each figure off by its whole half-step),
    below which no spread is taken; and the block's log ratio under each arrangement the
    schedule could have drawn (…, compared, blocks, arrangements), for `randomisation_p`."""
    r = np.asarray(rates, dtype=float)
    pos = np.asarray(pos, dtype=np.int64)
    shape = pos.shape[-3:]
    idx = pos.reshape((*pos.shape[:-3], -1))
    while idx.ndim < r.ndim:
        idx = idx[..., None, :]

    def gather(x: Any) -> Any:
        got = np.take_along_axis(x, np.broadcast_to(idx, x.shape[:-1] + idx.shape[-1:]), -1)
        return got.reshape(x.shape[:-1] + shape).mean(-1)  # … × blocks × values

    logs = log_rates(r)
    dead = deaths.counts(r == 0, pos, BALANCED)
    carry = carryover.sums(logs, pos)
    means, res = gather(logs), gather(resolution(r))
    d = np.moveaxis(means[..., 1:] - means[..., :1], -2, -1)  # … × compared × blocks
    width = np.moveaxis(res[..., 1:] + res[..., :1], -2, -1)
    width = np.where(np.isnan(d), 0.0, width)
    count = np.maximum((~np.isnan(d)).sum(-1), 1)
    if shape[-2:] == (2, 2):  # two values, blocks of four: the six balanced orders' ratios
        slots = np.sort(idx.reshape((*idx.shape[:-1], -1, 4)), -1).reshape(idx.shape)
        x = np.take_along_axis(logs, np.broadcast_to(slots, logs.shape[:-1] +
                                                     slots.shape[-1:]), -1)
        x = x.reshape((*logs.shape[:-1], -1, 4))  # … × blocks × the block's stretches
        options = (x @ _BALANCED_WEIGHTS.T)[..., None, :, :]  # … × 1 × blocks × 6
        tss = ((x - x.mean(-1, keepdims=True)) ** 2).sum(-1)[..., None, :]
        return Contrasts(d, width.sum(-1) / count, options, tss, dead, carry)
    # a block of one permutation: the two values swapped, or not
    return Contrasts(d, width.sum(-1) / count, np.stack([d, -d], -1), None, dead, carry)


class Contrasts(NamedTuple):
    """What `contrasts` gives: block log ratios d (…, compared, blocks); their resolution
    floor (…, compared); each block's ratio under every arrangement (…, compared, blocks,
    arrangements); blocks of four: each block's sum of squares about its mean (…, 1,
    blocks), else None; the blocks' deaths (deaths.counts: the value's less the base's, the
    same under every arrangement, both values' together); the carryover fit's sums
    (carryover.sums)."""

    d: Any
    floor: Any
    options: Any
    tss: Any
    dead: Any = None
    carry: Any = None


def crossed(first: Any, second: Any, pos: Any, second_pos: Any) -> Contrasts:
    """A crossover's contrasts (blocks of four, two values): stretch rates of its two pairs
    (…, stretches), the second having run the mirror of the first's order (the other value
    in every stretch; `pos` and `second_pos` as `contrasts` takes them). Each stretch's
    half log ratio of the first pair to the second, ½ (ln r₁ − ln r₂), a dead stretch taken
    as `log_rates` takes it on its own pair, is one series in the first pair's order: its
    block log ratio is the mean of the two pairs' (a pair's own level cancels in it, and a
    disturbance shared in time, which hits one value of one pair and the other of the other
    at once, cancels between them), and so does its spread within the block (the two-way
    model's, as a pair's alone), unlike the pairs' own spreads; its arrangements are the
    first pair's order's (the second's mirrored with it). The floor is the mean of the
    pairs' (each ratio's printed precision)."""
    half = (log_rates(first) - log_rates(second)) / 2
    got = contrasts(np.exp(half), pos)
    floor = (contrasts(first, pos).floor + contrasts(second, second_pos).floor) / 2
    one = deaths.counts(np.asarray(first, dtype=float) == 0, pos, BALANCED)
    two = deaths.counts(np.asarray(second, dtype=float) == 0, pos, BALANCED)
    # the second pair ran the mirror: its value's deaths are where the first ran the base
    dead = (one[0] - two[0], one[1] - two[1], one[2] + two[2])
    return Contrasts(got.d, floor, got.options, got.tss, dead, got.carry)



def half_width(design: Design, se: Any, df: Any, n: Any) -> Any:
    """The repeated interval's half-width (log scale) at look n: Student's t at the look's
    nominal level; unbounded at a look whose level is below 2^(1 − n), the chance that all n
    blocks fall on one side by the draw of their orders alone (`attainable`)."""
    from scipy.stats import t as student_t

    level = design.nominal(n)
    se = np.asarray(se, dtype=float)
    # a zero spread (identical ratios, at no floor) is no certainty: it never claims
    return np.where(attainable(n, level, design.arrangements) & (se > 0),
                    student_t.isf(level / 2, df) * se, np.inf)


def attainable(n: Any, level: Any, arrangements: int = 2) -> Any:
    """Whether a look at n blocks may claim anything at this two-sided level. The order of
    each block is drawn at random, so with no difference at all, interference that lands on
    one stretch of each block (a timer at twice the stretch) makes every block's log ratio
    ±c, its sign the draw's: all n of one sign 2^(1 − n) of the time, and Student's t is then
    unbounded. The randomisation test, exact here, can never reject below that level: nor may
    the rule (measured, 2 pairs × 2 values: false claims under interference at 2 and 4 times
    the stretch fell from 0.074 and 0.058 to 0.043 and 0.035, power kept). With A equally
    likely `arrangements` of a block (six: the balanced orders of four stretches, or the
    places of two values in a permutation of three), the floor is 2 A^(−n)."""
    return np.asarray(level) >= 2.0 * float(arrangements) ** (-np.asarray(n, dtype=float))


def within(mean: Any, half: Any, min_effect: float) -> Any:
    """The repeated interval lies inside ±min_effect (percent, on the log scale)."""
    edge = math.log1p(min_effect / 100)
    lo = -math.log1p(-min_effect / 100) if min_effect < 100 else math.inf
    return (mean - half > -lo) & (mean + half < edge)


def more_blocks(design: Design, sd: Any, n: Any, min_effect: float, mean: Any = 0.0,
                pooled: bool = False, holds: bool = False) -> Any:
    """Further blocks (≥ 1) until the repeated interval's half-width, at each later look's own
    boundary and t quantile (a look that may claim nothing: never), is at most the larger of
    half of ln(1 + min_effect) (then it resolves, whatever the mean) and a low estimate of
    |mean| (|mean| less 2 standard errors: then it turns significant if the difference is as
    large as that). The spread of the block log ratios is taken at the upper SPREAD_UPPER
    confidence bound of `sd` (n − 1 degrees of freedom: a spread estimated from few blocks is
    often too small, and an estimate from it promises too soon). -1 when not by the last look.
    Numpy: arrays of sd, n and mean give arrays. `pooled`: the spread has cumulative's
    pooled degrees of freedom (3n − 1). `holds`: until |mean| itself would be significant
    (a forecast if the Δ holds, not a low estimate of it: what an undecided large Δ needs)."""
    from scipy.stats import chi2
    from scipy.stats import t as student_t

    looks = np.arange(FIRST_LOOK, design.max_runs + 1)
    level = design.nominal(looks)
    extra = POOLED_DF if pooled else 0
    factor = np.where(attainable(looks, level, design.arrangements),
                      student_t.isf(level / 2, looks - 1 + extra * looks) / np.sqrt(looks),
                      np.inf)
    factor = np.minimum.accumulate(factor)  # non-increasing: the first look that suffices
    sd, n, mean = np.broadcast_arrays(np.asarray(sd, dtype=float), np.asarray(n),
                                      np.asarray(mean, dtype=float))
    df = np.maximum(n - 1 + extra * n, 1)
    upper = sd * np.sqrt(df / chi2.ppf(1 - SPREAD_UPPER, df))
    target = np.abs(mean) if holds else np.maximum(
        math.log1p(min_effect / 100) / 2, np.abs(mean) - 2 * upper / np.sqrt(np.maximum(n, 1)))
    with np.errstate(divide="ignore", invalid="ignore"):
        need = target / upper
    first = np.searchsorted(-factor, -need, side="left")  # first look with factor <= need
    at = np.where(first < looks.size, looks[np.minimum(first, looks.size - 1)], -1)
    at = np.where(np.isfinite(need), at, FIRST_LOOK)  # sd 0: any look resolves it
    more = np.maximum(at, n + 1) - n
    return np.where((at < 0) | (n >= design.max_runs) | (df < FORECAST_FROM - 1), -1, more)


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
    max_runs: int = DEFAULT_MAX_RUNS  # blocks at most
    alpha: float = stats.ALPHA
    spending: str = SPENDING[0]
    arrangements: int = 2

    def design(self, rejected: int = 0, split: bool = False) -> Design:
        """The design one open comparison's log ratios are judged by, with `rejected` already
        significant; `split`: at a look at which its deaths can reach their share of the α
        (deaths.DEATH_SHARE), the rest."""
        return split_design(Design.make(self.max_runs,
                                        self.alpha / max(1, self.size - rejected) / T_LOOKS,
                                        self.spending, self.arrangements), split)

    def prepare(self) -> None:
        """Every design the family may judge by, and Student's t, made now: the first use of
        each costs about a second of CPU (the boundaries' root finding, scipy.stats' import),
        which the first look paid on the console's event loop (1.7 s on a quiet machine, 5 s
        under load: a frozen screen). A live alternation runs this in a thread while its
        first block runs (abtui.measure.alternate.drive.prepare_looks); the designs are cached."""
        from scipy.stats import t  # noqa: F401  (imported once, for half_width)

        for rejected in range(self.size):
            self.design(rejected)
            self.design(rejected, split=True)
            death_design(self.design(rejected))


def split_design(design: Design, split: bool = True) -> Design:
    """The log ratios' design when the deaths take their share of `design`'s α."""
    if not split:
        return design
    return Design.make(design.max_runs, design.alpha * (1 - deaths.DEATH_SHARE),
                       design.spending, design.arrangements)


def death_design(design: Design) -> Design:
    """The deaths' design: their share of `design`'s α (before the t statistics' T_LOOKS
    correction, which an exact randomisation p does not need), spent O'Brien-Fleming-like."""
    return Design.make(design.max_runs, design.alpha * T_LOOKS * deaths.DEATH_SHARE,
                       "obrien-fleming", design.arrangements)


class Carry(NamedTuple):
    """A carryover the fit shows (carryover.shown): what a stretch after the value runs
    against one after the base (percent, interval at the fit's level), the direct effect
    adjusted for it (at the look's level), and whether that adjusted effect is significant
    with the log ratios' sign (else no difference is claimed)."""

    pct: float
    low: float
    high: float
    adjusted: stats.Delta
    separated: bool
    shown: bool = True  # False: none shown, but the adjusted effect does not confirm the claim

    def text(self, value: str = "the value", base: str = "the base") -> str:
        tail = "" if self.separated else ": a difference not separated from it"
        if not self.shown:
            return f"a carryover not excluded (a stretch after {value} runs {self.pct:+.1f}% " \
                   f"[{self.low:+.1f}, {self.high:+.1f}] against one after {base}); adjusted " \
                   f"for it {DELTA_LABEL} {self.adjusted}{tail}"
        return f"carryover: a stretch after {value} runs {self.pct:+.1f}% [{self.low:+.1f}, " \
               f"{self.high:+.1f}] against one after {base}; adjusted for it {DELTA_LABEL} " \
               f"{self.adjusted}{tail}"


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
    dead: int = 0  # stretches of either value that moved nothing (judged apart: deaths)
    # significant with the interval's near end within half of Δ: an early stop's Δ may then
    # overstate the effect materially (far beyond its boundary, the look's selection is not)
    close: bool = False
    # blocks from which "about k more" is said: FORECAST_FROM, or 2 when the spread is pooled
    # within blocks (blocks of four: 5 degrees of freedom at 2 blocks, as 6 blocks of two)
    forecast_from: int = FORECAST_FROM
    # significant by its deaths alone (deaths.p_values): the value died more (+1) or less (-1)
    by_deaths: int = 0
    carry: Carry | None = None  # a carryover the fit shows
    spread: float | None = None  # the block log ratios' standard deviation, as a % change
    # undecided with a Δ past min_effect: blocks until the Δ as estimated would turn
    # significant, if it holds (more_blocks' `holds`); None: not by the maximum
    if_holds: int | None = None

    @property
    def early(self) -> bool:
        """Significant before the last look, near its boundary: the Δ may overstate the
        effect."""
        return self.significant and self.n < self.max_runs and self.close

    @property
    def verdict(self) -> str:
        """`+6.2%` (significant), `dies more` / `dies less` (significant by its deaths
        alone), `~` (no difference of min_effect or more: the interval within it),
        `undecided` (neither, so far: a large Δ may still be resolving) or `?` (too few
        blocks to look)."""
        if self.by_deaths:
            return "dies more" if self.by_deaths > 0 else "dies less"
        if self.significant and self.delta is not None:
            return f"{self.delta.pct:+.1f}%"
        if self.n < FIRST_LOOK:
            return "?"
        return "~" if self.within else "undecided"

    def line(self, blocks: int | None = None, names: tuple[str, str] | None = None) -> str:
        """`Δgeo -12.2% [-14.0, -8.1] significant (3 blocks; stopped early: Δ may overstate
        the effect)` or `Δgeo … ~ (4 blocks), about 6 more blocks to resolve 1%`.

        `blocks`: the complete blocks of the schedule so far (the count an alternation's
        header gives). A comparison judged on fewer says so with that count: one decided at
        an earlier look says at which, and one that left blocks out (its stretch on this
        pair was cut short by a stop or had no sample) how many. `names`: the value and the
        base, for a carryover's note."""
        ns = self._blocks(blocks)
        carry = "" if self.carry is None else f"; {self.carry.text(*(names or ()))}"
        if self.by_deaths:
            rate = f"{DELTA_LABEL} {self._delta_text()} on the stretches that moved; " \
                if self.delta is not None else ""
            whole = blocks if blocks is not None else self.n
            return f"{rate}significant: {self.verdict} ({whole} block" \
                   f"{'s' if whole != 1 else ''}){carry}"
        if self.delta is None:
            return f"? ({ns})"
        if self.significant:
            early = "; stopped early: Δ may overstate the effect" if self.early else ""
            return f"{DELTA_LABEL} {self._delta_text()} significant ({ns}{early}){carry}"
        text = f"{DELTA_LABEL} {self._delta_text()} {self.verdict} ({ns}){carry}"
        if self.within:
            return f"{text}, no difference of {self.min_effect:g}% or more"
        if self.n >= FIRST_LOOK:
            at = "this spread" if self.spread is None else f"±{sig(self.spread)}% a block"
            if self.more is None and self.n < self.forecast_from:
                return f"{text}, too few blocks yet to say how many more resolve " \
                       f"{self.min_effect:g}%"
            if self._beyond():  # a Δ past min_effect: how long it needs, if it holds
                k = self.if_holds
                if k is None:
                    return f"{text}, not significant within the maximum of " \
                           f"{self.max_runs} blocks at {at}, even if Δ holds"
                return f"{text}, about {k} more block{'s' if k != 1 else ''} to be " \
                       f"significant if Δ holds, at {at}"
            if self.more is None:
                return f"{text}, not resolved to {self.min_effect:g}% within the maximum " \
                       f"of {self.max_runs} blocks at {at}"
            return f"{text}, about {self.more} more block{'s' if self.more != 1 else ''} " \
                   f"to resolve {self.min_effect:g}% at {at}"
        return text

    def _beyond(self) -> bool:
        """The Δ lies past ±min_effect (its hint is then about turning significant)."""
        d = self.delta
        return d is not None and math.isfinite(d.pct) and d.pct > -100 and \
            abs(math.log1p(d.pct / 100)) > math.log1p(self.min_effect / 100)

    def _delta_text(self) -> str:
        """The Δ with its interval (stats.delta_text: an interval not bounded yet says so)."""
        assert self.delta is not None
        return str(self.delta)

    def _blocks(self, blocks: int | None) -> str:
        """How many blocks this comparison stands on, against the schedule's `blocks`."""
        if blocks is None or blocks <= self.n:
            return f"{self.n} block{'s' if self.n != 1 else ''}"
        of = f"{self.n} of {blocks} block{'s' if blocks != 1 else ''}"
        if self.significant:
            return f"decided at {of}"
        return f"{of}: {blocks - self.n} left out"


def before_looks(ratios: Sequence[float], max_runs: int,
                 min_effect: float = DEFAULT_MIN_EFFECT, dead: int = 0) -> Assessment | None:
    """Where a comparison stands before its first look (fewer than FIRST_LOOK blocks: no
    design needed, so none is made), or None from the first look on."""
    d = [x for x in ratios if math.isfinite(x)]
    if not d:
        return Assessment(None, 0, False, None, max_runs, min_effect, dead=dead)
    if len(d) < FIRST_LOOK:
        pct = _pct(float(np.mean(d)))
        return Assessment(stats.Delta(pct, why=f"fewer than {FIRST_LOOK} blocks"), len(d),
                          False, None, max_runs, min_effect, dead=dead)
    return None


def assess(ratios: Sequence[float], design: Design, min_effect: float = DEFAULT_MIN_EFFECT,
           floor: float = 0.0, dead: int = 0, options: Any = None, tss: Any = None,
           died: Any = None, carry: Any = None) -> Assessment:
    """The look these block log ratios (value vs base, one per complete block) make: the
    paired repeated interval (its spread never below `floor`, the figures' precision; the
    randomisation floor checked first, whatever the spread), the verdict from it, and the
    blocks still needed. `dead`: stretches of either value that moved nothing (their blocks
    left out of the ratios): such a comparison never says "no difference". `options`
    (blocks × arrangements, as `contrasts` gives them): a claim also needs the randomisation
    p of its t at most the look's level (`randomisation_p`); `tss` (blocks of four) pools
    the spread within blocks (`cumulative`). `died` (Contrasts.dead, this comparison's: the
    blocks' deaths, every complete block including those whose ratio is nan): judged on their
    own (deaths.p_values) at their share of the α when they can reach it, the log ratios at
    the rest. `carry` (Contrasts.carry's sums, this comparison's, one entry per block): a
    carryover the fit shows is said, and a claim then needs the adjusted effect too."""
    split, by_deaths = _deaths(died, design)
    design = split_design(design, split)
    early = before_looks(ratios, design.max_runs, min_effect, dead)
    if early is not None:
        if by_deaths:
            return dataclasses.replace(early, significant=True, by_deaths=by_deaths)
        return early
    d = np.asarray([x for x in ratios if math.isfinite(x)], dtype=float)
    n = d.size
    tss = None if tss is None else np.asarray(tss, dtype=float)[np.isfinite(ratios)]
    mean, se, df, _n = (float(x[-1]) for x in cumulative(d, floor, tss))
    half = float(half_width(design, se, df, n))
    significant = bool(abs(mean) > half)
    if significant and options is not None:
        first = observed_first(np.asarray(options, dtype=float)[None], d[None])
        significant = bool(randomisation_p(first, floor, None if tss is None else tss[None])[0]
                           <= design.nominal(n))
    delta = stats.Delta(_pct(mean), _pct(mean - half), _pct(mean + half))
    said = _carry(carry, design, n, mean, significant) if carry is not None else None
    if said is not None and not said.separated:
        significant = False
    inside = not significant and not dead and said is None and \
        bool(within(mean, half, min_effect))
    more = holds = None
    if not significant and not inside and se > 0:
        got = int(more_blocks(design, se * math.sqrt(n), n, min_effect, mean,
                              tss is not None))
        more = got if got > 0 else None
        if abs(mean) > math.log1p(min_effect / 100):
            got = int(more_blocks(design, se * math.sqrt(n), n, min_effect, mean,
                                  tss is not None, holds=True))
            holds = got if got > 0 else None
    material = significant and abs(mean) < MATERIAL * half
    return Assessment(delta, n, significant or bool(by_deaths), more, design.max_runs,
                      min_effect, inside, dead, material,
                      FIRST_LOOK if tss is not None else FORECAST_FROM,
                      0 if significant else by_deaths, said,
                      _pct(se * math.sqrt(n)) if n > 1 else None, holds)


def _deaths(died: Any, design: Design) -> tuple[bool, int]:
    """Whether the deaths take their share of the α at this look (they can reach it), and
    whether they are significant (+1: the value died more, -1: less, 0: not)."""
    if died is None:
        return False, 0
    obs, options, both = (np.asarray(x) for x in died)
    if obs.size == 0 or not both.sum():
        return False, 0
    p, pmin = deaths.p_values(obs, options)
    level = float(death_design(design).nominal(obs.shape[-1]))
    if pmin[-1] > level:
        return False, 0
    return True, int(np.sign(obs.sum())) if p[-1] <= level else 0


def _carry(sums: Any, design: Design, n: int, mean: float, claimed: bool) -> Carry | None:
    """The carryover the fit at this look shows, or, when the log ratios `claimed` a
    difference, one it cannot exclude that the adjusted effect does not confirm (None:
    neither)."""
    from scipy.stats import t as student_t

    fit = carryover.fits(carryover.Sums(*(np.asarray(x)[None] for x in sums)))
    tau, tau_se, gamma, gamma_se, df = (float(np.asarray(x)[(0,) * (np.ndim(x) - 1) + (-1,)])
                                        for x in fit)
    shown = bool(carryover.shown(gamma, gamma_se, df))
    confirmed = bool(carryover.confirms(tau, tau_se, df, mean))
    if not shown and (confirmed or not claimed):
        return None
    q = float(student_t.isf(carryover.CARRY_LEVEL / 2, df))
    level = float(design.nominal(n))
    h = float(student_t.isf(level / 2, df)) * tau_se if attainable(n, level,
                                                                    design.arrangements) \
        else math.inf
    adjusted = stats.Delta(_pct(tau), _pct(tau - h), _pct(tau + h))
    return Carry(_pct(gamma), _pct(gamma - q * gamma_se), _pct(gamma + q * gamma_se),
                 adjusted, shown and confirmed and bool(abs(tau) > h and
                                                        np.sign(tau) == np.sign(mean)), shown)


@dataclass(frozen=True, slots=True)
class Simulated:
    """The live rule run on simulated block log ratios (runs × K comparisons × N blocks):
    `decided` the block of the schedule (n) at which each comparison turned significant (0:
    never), `estimate` its log ratio there (nan: decided by its deaths alone), `worse` whether
    the value was called worse (a negative log ratio, or more deaths); per look (runs × K ×
    looks: the schedule's blocks FIRST_LOOK … N) `within` and `more` (as Assessment says them,
    -1: none) while undecided, and `carry` whether a carryover was shown."""

    decided: NDArray[np.int64]
    estimate: NDArray[np.float64]
    within: NDArray[np.bool_]
    more: NDArray[np.int64]
    looks: NDArray[np.int64]
    worse: Any = None
    carry: Any = None


def simulate(d: Any, family: Family, min_effect: float = DEFAULT_MIN_EFFECT,
             floor: Any = 0.0, options: Any = None, tss: Any = None, died: Any = None,
             carry: Any = None) -> Simulated:
    """The live rule (Holm over the family, the paired repeated interval at each look,
    `within`, `more_blocks`; the deaths and the carryover as `assess` judges them) on block
    log ratios d[run, comparison, block] (nan: a block left out, as a dead stretch leaves
    it; `floor`: their resolution floor, run × comparison, as `contrasts` gives it;
    `options` their ratios under every arrangement, run × comparison × block ×
    arrangement: the randomisation check; `tss` the blocks' sums of squares, run ×
    comparison × block: the pooled spread; `died` the blocks' deaths, as Contrasts.dead
    with run × comparison leading; `carry` the carryover fit, carryover.Fit with run ×
    comparison × block fields, its df too), vectorised over runs: what Verdicts says live, for the
    statistics bench and the tests."""
    from scipy.stats import t as student_t

    d = np.asarray(d, dtype=float)
    runs, k, blocks = d.shape
    finite = np.isfinite(d)
    order = np.argsort(~finite, axis=-1, kind="stable")  # the blocks looked at, first

    def packed(x: Any) -> Any:
        x = np.asarray(x, dtype=float)
        at = order.reshape(order.shape + (1,) * (x.ndim - order.ndim))
        return np.take_along_axis(x, np.broadcast_to(at, x.shape[:2] + at.shape[2:3] +
                                                     x.shape[3:]), 2)

    dc = np.where(np.isfinite(packed(d)), packed(d), 0.0)
    tc = None if tss is None else packed(np.broadcast_to(tss, d.shape))
    oc = None if options is None else packed(np.broadcast_to(options, d.shape +
                                                             np.shape(options)[-1:]))
    count = np.cumsum(finite, -1)  # blocks looked at by each block of the schedule
    mean, se, df, looks = cumulative(dc, floor, tc)
    split = died is not None
    designs = [family.design(r) for r in range(k)]
    levels = designs + ([family.design(r, split=True) for r in range(k)] if split else [])
    half = np.stack([half_width(g, se, df, looks) for g in levels])  # levels × runs × K × L
    crossed = np.abs(mean)[None] > half
    if oc is not None:
        crossed &= _randomised(crossed, dc, oc, floor, tc, levels, looks)
    if split:
        obs, opts, both = (np.asarray(x) for x in died)
        p_dead, pmin = deaths.p_values(obs, opts)
        any_dead = np.cumsum(both, -1) > 0
        death_level = np.stack([death_design(g).nominal(np.arange(1, blocks + 1))
                                for g in designs])  # K × blocks
    if carry is not None:
        fit = carryover.Fit(*(np.asarray(x) for x in carry))
        shown = carryover.shown(fit.gamma, fit.gamma_se, fit.df)
    decided = np.zeros((runs, k), dtype=np.int64)
    estimate = np.full((runs, k), np.nan)
    worse = np.zeros((runs, k), dtype=bool)
    schedule_looks = np.arange(FIRST_LOOK, blocks + 1)
    inside = np.zeros((runs, k, schedule_looks.size), dtype=bool)
    more = np.full(inside.shape, -1, dtype=np.int64)
    said = np.zeros(inside.shape, dtype=bool)
    idx = np.arange(runs)[:, None]
    kk = np.arange(k)[None, :]
    for si, b in enumerate(schedule_looks):
        j = b - 1
        n = count[..., j]
        li = np.clip(n - FIRST_LOOK, 0, looks.size - 1)
        rated = n >= FIRST_LOOK
        m = mean[idx, kk, li]
        while True:  # Holm: a rejection passes its α on, at this same look
            r = np.minimum((decided > 0).sum(1), k - 1)[:, None] + np.zeros((1, k), int)
            lv = r
            dies = np.zeros((runs, k), dtype=np.int64)
            if split:
                level = death_level[r, j]
                can = any_dead[..., j] & (pmin[..., j] <= level)
                lv = np.where(can, r + k, r)
                dies = np.where(can & (p_dead[..., j] <= level),
                                np.sign(obs[..., :b].sum(-1)), 0).astype(np.int64)
            rate = rated & crossed[lv, idx, kk, li]
            if carry is not None:
                sh = shown[..., j]
                nominal = np.asarray([g.nominal(b) for g in levels])[lv]  # rows × K
                q = student_t.isf(nominal / 2, np.maximum(fit.df[..., j], 1))
                ok = (np.abs(fit.tau[..., j]) > q * fit.tau_se[..., j]) & \
                    (np.sign(fit.tau[..., j]) == np.sign(m)) & \
                    attainable(n, nominal, levels[0].arrangements)
                said[..., si] = sh
                rate &= (~sh | ok) & carryover.confirms(fit.tau[..., j], fit.tau_se[..., j],
                                                        fit.df[..., j], m)
            new = (decided == 0) & (rate | (dies != 0))
            if not new.any():
                break
            decided[new] = b
            estimate[new] = np.where(rate, m, np.nan)[new]
            worse[new] = np.where(rate, m < 0, dies > 0)[new]
        r = np.minimum((decided > 0).sum(1), k - 1)
        h = half[r[:, None] + np.zeros((1, k), int), idx, kk, li]
        open_ = (decided == 0) & rated
        quiet = ~said[..., si] if carry is not None else True
        if split:
            quiet = quiet & ~any_dead[..., j]
        inside[..., si] = open_ & quiet & within(m, h, min_effect)
        for rr in np.unique(r):
            rows = r == rr
            got = more_blocks(designs[rr], se[idx, kk, li][rows] * np.sqrt(n[rows]), n[rows],
                              min_effect, m[rows], tss is not None)
            more[rows, :, si] = np.where(open_[rows] & ~inside[rows, :, si], got, -1)
    return Simulated(decided, estimate, inside, more, schedule_looks, worse, said)



def _randomised(crossed: Any, d: Any, options: Any, floor: Any, tss: Any,
                designs: Sequence[Design], looks: Any) -> Any:
    """Where the t crosses (levels × runs × K × looks), whether the randomisation p at that
    look is at most the level's nominal one: computed only where some level crosses."""
    ok = np.ones(crossed.shape, dtype=bool)
    first = observed_first(options, d)
    floor = np.broadcast_to(np.asarray(floor, dtype=float), d.shape[:2])
    any_level = crossed.any(0)
    for li, n in enumerate(looks):
        run, k = np.nonzero(any_level[..., li])
        if run.size == 0:
            continue
        p = randomisation_p(first[run, k, :n], floor[run, k],
                            None if tss is None else tss[run, k, :n])
        for lv, g in enumerate(designs):
            ok[lv, run, k, li] = p <= g.nominal(n)
    return ok
