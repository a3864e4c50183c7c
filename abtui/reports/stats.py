"""Numbers with their uncertainty: summaries, run-level values, deltas with confidence
intervals, significance.

Samples are run-level values (abtui.reports.throughput: one per segment, the counted intervals
of one run within one phase), never intervals: intervals of one run are not independent. A
cell's figure is the mean of its run-level values; a delta's interval and its significance come
from them alone. With fewer than 2 runs on a side a delta has no interval (Delta.why says so).
Significance is the rank-sum (Mann-Whitney) test with mid-ranks, its p exact: the permutation
distribution is enumerated (up to EXACT_MAX runs in all), so ties never make it optimistic.
scipy is imported lazily: it costs ~1.3 s and the console never needs it for the exact test.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import asdict, dataclass, field
from typing import TYPE_CHECKING, Any

import numpy as np

from abtui.reports import throughput
from abtui.reports.throughput import Segment
from abtui.sessions.session import NO_PHASE, Phase, Run, Session, config_key

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
# UDP interval series (NaN on TCP intervals): metric -> session interval column
UDP_COLUMNS = {"jitter_ms": "jitter", "lost": "lost", "packets": "packets"}


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


# ---- values out of a session ---------------------------------------------------------------

def _column(cols: Any, name: str, dtype: Any) -> NDArray[Any]:
    return np.frombuffer(cols[name], dtype=dtype) if len(cols) else np.empty(0, dtype=dtype)


def _counted(session: Session, pair: str, mask: NDArray[np.bool_], metric: str
             ) -> NDArray[np.bool_]:
    """`mask` narrowed to the intervals that count in `metric`: not omitted, and in the pair's
    direction (sender -> receiver) or, for throughput_rx, --bidir's way back."""
    cols = session.intervals[pair]
    keep = mask & (_column(cols, "omitted", np.int8) == 0)
    return keep & (_column(cols, "rx", np.int8) == (1 if metric == "throughput_rx" else 0))


def _mask(source: Any, phases: Sequence[int] | None, runs: Sequence[int] | None
          ) -> NDArray[np.bool_]:
    mask = np.ones(len(source), dtype=bool)
    if phases is not None:
        phase = _column(source, "phase", np.int32)
        mask &= np.isin(phase, np.asarray(phases, dtype=np.int32)) & (phase != NO_PHASE)
    if runs is not None:
        mask &= np.isin(_column(source, "run", np.int32), np.asarray(runs, dtype=np.int32))
    return mask


def values(session: Session, pair: str, metric: str, *, phases: Sequence[int] | None = None,
           runs: Sequence[int] | None = None) -> NDArray[np.float64]:
    """A metric's per-interval (or per-ping) values on one pair, restricted to phases and/or
    runs (by index): for noise and the interval-level summaries, never as samples.

    throughput and retransmits_per_s come from intervals (omitted ones and those that
    straddle a knob change left out), rtt from pings (lost ones left out); throughput_rx is
    --bidir's other direction, which throughput never includes; jitter_ms, lost and packets
    are UDP's per-interval series (NaN on TCP intervals)."""
    source = session.pings[pair] if metric == "rtt" else session.intervals[pair]
    if not len(source):
        return np.empty(0)
    mask = _mask(source, phases, runs)
    if metric == "rtt":
        rtt = _column(source, "rtt", np.float64)[mask]
        return rtt[np.isfinite(rtt)]
    keep = _counted(session, pair, mask, metric)
    if metric in ("throughput", "throughput_rx"):
        return _column(source, "bps", np.float64)[keep]
    if metric in UDP_COLUMNS:
        return _column(source, UDP_COLUMNS[metric], np.float64)[keep]
    span = (_column(source, "end", np.float64) - _column(source, "start", np.float64))[keep]
    retr = _column(source, "retransmits", np.float64)[keep]
    with np.errstate(divide="ignore", invalid="ignore"):
        return np.where(span > 0, retr / span, np.nan)


def segments(session: Session, pair: str, *, phases: Sequence[int] | None = None,
             runs: Sequence[int] | None = None, by_phase: bool = True,
             metric: str = "throughput") -> list[Segment]:
    """A pair's counted intervals as abtui.reports.throughput segments: one per (run, phase) within
    the given phases/runs, or one per run (`by_phase=False`: a run's own figure, whatever
    phases it crossed). Intervals go in in recorded order, as the console adds them."""
    return list(keyed_segments(session, pair, phases=phases, runs=runs, by_phase=by_phase,
                               metric=metric).values())


def keyed_segments(session: Session, pair: str, *, phases: Sequence[int] | None = None,
                   runs: Sequence[int] | None = None, by_phase: bool = True,
                   metric: str = "throughput") -> dict[tuple[int, int], Segment]:
    """`segments` by (run index, phase index) (phase 0 with `by_phase=False`): what else was
    measured in the same stretch (host CPU) is matched to them by that key."""
    cols = session.intervals[pair]
    if not len(cols):
        return {}
    keep = _counted(session, pair, _mask(cols, phases, runs), metric)
    idx = np.flatnonzero(keep)
    run = _column(cols, "run", np.int32)[idx].tolist()
    phase = _column(cols, "phase", np.int32)[idx].tolist() if by_phase else [0] * len(run)
    bps = _column(cols, "bps", np.float64)[idx].tolist()
    start = _column(cols, "start", np.float64)[idx].tolist()
    end = _column(cols, "end", np.float64)[idx].tolist()
    out: dict[tuple[int, int], Segment] = {}
    for key, rate, s, e in zip(zip(run, phase, strict=True), bps, start, end, strict=True):
        if math.isfinite(rate):
            seg = out.get(key)
            if seg is None:
                seg = out[key] = Segment()
            seg.add(rate, throughput.span_of(s, e))
    return out


def run_values(session: Session, pair: str, phases: Sequence[int],
               metric: str = "throughput") -> list[float]:
    """Run-level samples of throughput (or throughput_rx) within the given phases."""
    return throughput.run_values(segments(session, pair, phases=phases, metric=metric))


def run_rate(session: Session, run: Run) -> float | None:
    """A run's own figure: bits ÷ seconds of its intervals in the pair's direction, omitted
    ones left out and straddling ones kept (as iperf3's summary counts them); None when it
    delivered none."""
    segs = segments(session, run.pair, runs=[run.index], by_phase=False)
    return segs[0].rate if segs else None


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


def config_groups(session: Session, pair: str) -> dict[str, list[Phase]]:
    """A pair's phases grouped by configuration, in order of first appearance."""
    groups: dict[str, list[Phase]] = {}
    for ph in session.phases_of(pair):
        groups.setdefault(config_key(ph.config), []).append(ph)
    return groups


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
