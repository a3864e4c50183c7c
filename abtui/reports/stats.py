"""Numbers with their uncertainty: summaries, run-level values, deltas with confidence
intervals, significance.

Samples are run-level values (abtui.reports.throughput: one per segment, the counted intervals
of one run within one phase), never intervals: intervals of one run are not independent. A
cell's figure is the mean of its run-level values; a delta's interval and its significance come
from them alone. With fewer than 2 runs on a side a delta has no interval (Delta.why says so).
Significance is the rank-sum (Mann-Whitney) test with mid-ranks, its p exact: the permutation
distribution is enumerated (up to EXACT_MAX runs in all), so ties never make it optimistic.
scipy is imported lazily: it costs ~1.3 s and the console never needs it for the exact test.
The values themselves come out of the session through abtui.reports.samples.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import asdict, dataclass, field
from typing import TYPE_CHECKING, Any

import numpy as np

from abtui.reports import throughput
from abtui.reports.samples import config_groups, run_values, values
from abtui.sessions.records import Phase, Run
from abtui.sessions.session import Session

if TYPE_CHECKING:
    from numpy.typing import NDArray

ALPHA = 0.05
CONFIDENCE = 0.95
# A cell (a pair under a configuration, all its phases together) whose intervals' rates vary
# more than this (stdev / mean) is flagged as too noisy to conclude from: 10 % is several
# times what a quiet link shows (≈1-3 % between intervals).
NOISE_CV = 0.10
# The exact test enumerates the rank sum's permutation distribution up to this many runs in
# all (100: ~0.1 s); beyond, the normal approximation with tie correction (scipy).
EXACT_MAX = 100

METRICS = ("throughput", "rtt", "retransmits_per_s", "throughput_rx")
UNITS = {"throughput": "bits/s", "rtt": "ms", "retransmits_per_s": "1/s",
         "throughput_rx": "bits/s"}


@dataclass(frozen=True, slots=True)
class Summary:
    n: int
    mean: float | None = None
    median: float | None = None
    stdev: float | None = None
    min: float | None = None
    max: float | None = None

    @property
    def cv(self) -> float | None:
        """Coefficient of variation (stdev / mean), None when undefined."""
        if self.stdev is None or not self.mean:
            return None
        return self.stdev / abs(self.mean)

    @property
    def noisy(self) -> bool:
        return self.cv is not None and self.cv > NOISE_CV

    def to_json(self) -> dict[str, Any]:
        return asdict(self)


def summarize(values: Sequence[float] | NDArray[Any]) -> Summary:
    """n, mean, median, sample stdev (n ≥ 2), min, max of the finite values. The mean is
    abtui.reports.throughput's (correctly rounded), so a cell's mean is the console's to the bit."""
    a = np.asarray(values, dtype=float)
    a = a[np.isfinite(a)]
    n = int(a.size)
    if n == 0:
        return Summary(0)
    return Summary(n=n, mean=throughput.mean(a.tolist()), median=float(np.median(a)),
                   stdev=float(a.std(ddof=1)) if n > 1 else None,
                   min=float(a.min()), max=float(a.max()))


@dataclass(frozen=True, slots=True)
class UdpQuality:
    """UDP datagrams lost and jitter over some intervals of a pair's own direction."""

    lost: int
    packets: int  # datagrams due, lost ones included
    jitter: Summary  # one value per interval, ms

    @property
    def lost_percent(self) -> float | None:
        """iperf3's way: lost over due, summed over the intervals (not a mean of ratios)."""
        return 100.0 * self.lost / self.packets if self.packets > 0 else None

    def to_json(self) -> dict[str, Any]:
        return {"lost_packets": self.lost, "packets": self.packets,
                "lost_percent": self.lost_percent, "jitter_ms": self.jitter.to_json()}


def udp_quality(session: Session, pair: str, *, phases: Sequence[int] | None = None,
                runs: Sequence[int] | None = None) -> UdpQuality | None:
    """Loss and jitter of a pair's UDP intervals in these phases/runs; None without any."""
    lost = values(session, pair, "lost", phases=phases, runs=runs)
    due = values(session, pair, "packets", phases=phases, runs=runs)
    ok = np.isfinite(lost) & np.isfinite(due)
    if not ok.any():
        return None
    return UdpQuality(int(lost[ok].sum()), int(due[ok].sum()),
                      summarize(values(session, pair, "jitter_ms", phases=phases, runs=runs)))


def phase_stats(session: Session, phase: Phase) -> dict[str, Summary]:
    """Interval-level summaries of one phase (its run-level figure: phase_rate)."""
    return {m: summarize(values(session, phase.pair, m, phases=[phase.index]))
            for m in METRICS}


def phase_rate(session: Session, phase: Phase, metric: str = "throughput") -> Summary:
    """One phase's run-level values (one per run it spans), summarized."""
    return summarize(run_values(session, phase.pair, [phase.index], metric))


def run_stats(session: Session, run: Run) -> dict[str, Summary]:
    return {m: summarize(values(session, run.pair, m, runs=[run.index])) for m in METRICS}


# ---- deltas and significance ---------------------------------------------------------------

FEW_RUNS = "fewer than 2 runs on a side"


@dataclass(frozen=True, slots=True)
class Delta:
    """other vs base in percent of base's mean, with a CONFIDENCE interval from run-level
    values; none (low/high None, `why` says why) with fewer than 2 runs on a side."""

    pct: float
    low: float | None = None
    high: float | None = None
    why: str = ""

    def __str__(self) -> str:
        text = f"{self.pct:+.1f}%"
        if self.low is not None and self.high is not None:
            text += f" [{_bound(self.low)}, {_bound(self.high)}]"
        return text


def _bound(pct: float) -> str:
    """An interval's end; beyond a million percent it says +inf (the sequential rule's first
    looks, drawn at tiny levels with few degrees of freedom, reach that)."""
    return f"{pct:+.1f}" if pct < 1e6 else "+inf"


def _finite(xs: Sequence[float] | NDArray[Any]) -> list[float]:
    return [float(x) for x in xs if math.isfinite(x)]


def pct_change(base: Sequence[float], other: Sequence[float]) -> float | None:
    """Change of the mean of `other` vs the mean of `base`, in percent of base's."""
    return throughput.change_pct(throughput.mean(base), throughput.mean(other))


def log_ratio_stats(mean_a: Any, var_a: Any, n_a: Any, mean_b: Any, var_b: Any, n_b: Any
                    ) -> tuple[Any, Any, Any]:
    """ln(mean_b / mean_a), its standard error (delta method: var / (n mean²) per side) and
    Welch's degrees of freedom, from each side's mean, sample variance and count (n ≥ 2).
    Numpy arithmetic: scalars give floats, arrays (the sequential rule's simulations) give
    arrays. One place for the formula every Δ interval and the sequential rule use."""
    va = np.divide(var_a, np.multiply(n_a, np.square(mean_a)))
    vb = np.divide(var_b, np.multiply(n_b, np.square(mean_b)))
    se = np.sqrt(va + vb)
    with np.errstate(divide="ignore", invalid="ignore"):
        df = (va + vb) ** 2 / (va**2 / np.subtract(n_a, 1) + vb**2 / np.subtract(n_b, 1))
    return np.log(np.divide(mean_b, mean_a)), se, df


def delta(base: Sequence[float] | NDArray[Any], other: Sequence[float] | NDArray[Any],
          confidence: float = CONFIDENCE) -> Delta | None:
    """Percent change of the mean of run-level values, with a `confidence` interval for the
    ratio of the means: Welch's t on the log scale (delta method), so it is never below
    -100 %. None without values on both sides (or a base mean of 0)."""
    a, b = _finite(base), _finite(other)
    pct = pct_change(a, b)
    if pct is None:
        return None
    if len(a) < 2 or len(b) < 2:
        return Delta(pct, why=f"{FEW_RUNS} (n={len(a)}+{len(b)})")
    sa, sb = summarize(a), summarize(b)
    assert sa.mean is not None and sb.mean is not None
    assert sa.stdev is not None and sb.stdev is not None
    if sa.mean <= 0 or sb.mean <= 0:
        return Delta(pct, why="a mean of 0 or less: no interval for the ratio")
    log_ratio, se, df = log_ratio_stats(sa.mean, sa.stdev**2, sa.n, sb.mean, sb.stdev**2, sb.n)
    if se == 0:
        return Delta(pct, pct, pct)
    from scipy.stats import t as student_t

    half = float(student_t.ppf(0.5 + confidence / 2, df)) * se
    return Delta(pct, _pct_of_log(log_ratio - half), _pct_of_log(log_ratio + half))


def _pct_of_log(x: float) -> float:
    """A log ratio in percent; +inf beyond a float's range (the sequential rule's early looks
    draw intervals at tiny levels with few degrees of freedom)."""
    return math.expm1(x) * 100 if x < 700 else math.inf


@dataclass(frozen=True, slots=True)
class Verdict:
    """benchstat-style result of comparing run-level samples: text like `+6.2% (p=0.008 n=5+5)`."""

    text: str
    n_base: int
    n_other: int
    delta_pct: float | None = None
    p: float | None = None
    significant: bool = False
    reason: str = ""
    exact: bool = True

    def to_json(self) -> dict[str, Any]:
        return asdict(self)


def min_p(n1: int, n2: int) -> float:
    """Smallest two-sided p the rank-sum test can reach with n1+n2 samples (exact; ties can
    only raise it): 2 / C(n1+n2, n1). 3+3: 0.1, never significant; 4+4: 0.029; 3+5: 0.036."""
    return min(1.0, 2 / math.comb(n1 + n2, n1)) if n1 and n2 else 1.0


def rank_sum_p(base: Sequence[float], other: Sequence[float]) -> float:
    """Exact two-sided p of the rank-sum test with mid-ranks: twice the smaller tail of the
    permutation distribution of one sample's rank sum (every way to split the pooled values
    into groups of these sizes, equally likely), as scipy's permutation_test defines it.
    Counted by dynamic programming over doubled mid-ranks (integers), not by listing splits."""
    a = np.asarray(base, dtype=float)
    b = np.asarray(other, dtype=float)
    if a.size > b.size:
        a, b = b, a
    m = int(a.size)
    _, inv, counts = np.unique(np.concatenate([a, b]), return_inverse=True, return_counts=True)
    last = np.cumsum(counts)
    twice = (2 * last - counts + 1)[inv]  # first + last position of each tie: 2 × mid-rank
    observed, total = int(twice[:m].sum()), int(twice.sum())
    ways = np.zeros((m + 1, total + 1))
    ways[0, 0] = 1.0
    for r in twice.tolist():  # ways[k, s]: subsets of k values whose doubled ranks sum to s
        ways[1:, r:] = ways[1:, r:] + ways[:-1, :total + 1 - r]
    dist = ways[m]
    whole = dist.sum()
    low, high = dist[:observed + 1].sum() / whole, dist[observed:].sum() / whole
    return float(min(1.0, 2 * min(low, high)))


def _fmt_p(p: float) -> str:
    return f"{p:.3f}" if p < 0.1 else f"{p:.2f}"


def verdict(base: Sequence[float], other: Sequence[float], alpha: float = ALPHA) -> Verdict:
    """Two-sided rank-sum (Mann-Whitney) test on run-level values at `alpha`, its p exact up
    to EXACT_MAX runs in all (ties included), else scipy's normal approximation.

    Too few samples to ever reach `alpha` (3+3: min p = 0.1) says so instead of testing.
    """
    a, b = _finite(base), _finite(other)
    n1, n2 = len(a), len(b)
    ns = f"n={n1}+{n2}"
    pct = pct_change(a, b)
    if min_p(n1, n2) > alpha:
        return Verdict(f"? ({ns}: too few runs)", n1, n2, pct, reason="too few runs")
    exact = n1 + n2 <= EXACT_MAX
    if exact:
        p = rank_sum_p(a, b)
    else:
        from scipy.stats import mannwhitneyu

        p = float(mannwhitneyu(a, b, alternative="two-sided", method="asymptotic").pvalue)
        if math.isnan(p):  # all values equal
            p = 1.0
    if p < alpha and pct is not None:
        return Verdict(f"{pct:+.1f}% (p={_fmt_p(p)} {ns})", n1, n2, pct, p, True, exact=exact)
    return Verdict(f"~ (p={_fmt_p(p)} {ns})", n1, n2, pct, p, False, exact=exact)


# ---- tables ------------------------------------------------------------------------------

@dataclass(slots=True)
class Cell:
    """One pair under one configuration. `throughput` summarizes its run-level values: its
    mean is the cell's one figure; `intervals` summarizes the counted intervals' rates (the
    ⚠ noise flag, and what the JSON export details)."""

    pair: str
    config: str
    phases: list[int]
    samples: list[float]
    intervals: Summary
    rtt: Summary
    retransmits_per_s: Summary
    # --bidir's other direction (receiver -> sender); empty for one-way runs
    samples_rx: list[float] = field(default_factory=list)
    intervals_rx: Summary = field(default_factory=lambda: Summary(0))

    @property
    def throughput(self) -> Summary:
        return summarize(self.samples)

    @property
    def throughput_rx(self) -> Summary:
        return summarize(self.samples_rx)

    @property
    def noisy(self) -> bool:
        """The cell's intervals vary more than NOISE_CV (all its phases together)."""
        return self.intervals.noisy

    def to_json(self) -> dict[str, Any]:
        tp = self.throughput
        out = {"pair": self.pair, "config": self.config, "phases": self.phases,
               "bits_per_second": tp.mean, "throughput": tp.to_json(),
               "run_samples": self.samples, "intervals": self.intervals.to_json(),
               "rtt_ms": self.rtt.to_json(),
               "retransmits_per_s": self.retransmits_per_s.to_json(), "noisy": self.noisy}
        if self.samples_rx or self.intervals_rx.n:
            out.update(bits_per_second_rx=self.throughput_rx.mean,
                       throughput_rx=self.throughput_rx.to_json(),
                       run_samples_rx=self.samples_rx, intervals_rx=self.intervals_rx.to_json())
        return out


def cell(session: Session, pair: str, config: str, phases: list[Phase]) -> Cell:
    ix = [p.index for p in phases]
    return Cell(pair, config, ix, run_values(session, pair, ix),
                summarize(values(session, pair, "throughput", phases=ix)),
                summarize(values(session, pair, "rtt", phases=ix)),
                summarize(values(session, pair, "retransmits_per_s", phases=ix)),
                run_values(session, pair, ix, "throughput_rx"),
                summarize(values(session, pair, "throughput_rx", phases=ix)))


def cells(session: Session) -> dict[str, dict[str, Cell]]:
    """{config: {pair: Cell}}, configurations in order of first appearance."""
    out: dict[str, dict[str, Cell]] = {}
    for pair in session.pairs:
        for config, phases in config_groups(session, pair).items():
            out.setdefault(config, {})[pair] = cell(session, pair, config, phases)
    return out


def compare_samples(base: Sequence[float], other: Sequence[float]
                    ) -> tuple[Delta | None, Verdict]:
    """The delta of the mean (its interval from run-level values) and the verdict."""
    return delta(base, other), verdict(base, other)


def compare_cells(base: Cell, other: Cell, rx: bool = False) -> tuple[Delta | None, Verdict]:
    """compare_samples on two cells' run-level values (--bidir's way back with `rx`)."""
    if rx:
        return compare_samples(base.samples_rx, other.samples_rx)
    return compare_samples(base.samples, other.samples)
