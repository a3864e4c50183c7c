"""Numbers with their uncertainty: summaries, deltas with confidence intervals, significance.

Samples. Intervals of one run are not independent (TCP state carries over), so significance
is only ever tested on *run-level* values: one value per segment, a segment being the
intervals of one run within one phase (plan mode: one run; continuous mode: one phase).
Confidence intervals of a delta use Welch's t interval on the difference of means; when each
side has a single segment they fall back to its intervals, which understates the uncertainty
(reports say so). scipy is imported lazily: it costs ~1.3 s and the console never needs it.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import asdict, dataclass, field
from typing import TYPE_CHECKING, Any

import numpy as np

from abtui.session import NO_PHASE, Phase, Run, Session, config_key

if TYPE_CHECKING:
    from numpy.typing import NDArray

ALPHA = 0.05
CONFIDENCE = 0.95
# A phase whose throughput varies more than this (stdev / mean) is flagged as too noisy to
# conclude from: 10 % is several times what a quiet link shows (≈1-3 % between intervals).
NOISE_CV = 0.10

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
    """n, mean, median, sample stdev (n ≥ 2), min, max of the finite values."""
    a = np.asarray(values, dtype=float)
    a = a[np.isfinite(a)]
    n = int(a.size)
    if n == 0:
        return Summary(0)
    return Summary(n=n, mean=float(a.mean()), median=float(np.median(a)),
                   stdev=float(a.std(ddof=1)) if n > 1 else None,
                   min=float(a.min()), max=float(a.max()))


# ---- values out of a session ---------------------------------------------------------------

def _interval_metric(session: Session, pair: str, mask: NDArray[np.bool_], metric: str
                     ) -> NDArray[np.float64]:
    cols = session.intervals[pair]
    keep = mask & (np.frombuffer(cols["omitted"], dtype=np.int8) == 0)
    # the pair's direction (sender -> receiver), or --bidir's other one for throughput_rx
    keep &= np.frombuffer(cols["rx"], dtype=np.int8) == (1 if metric == "throughput_rx" else 0)
    if metric in ("throughput", "throughput_rx"):
        return np.frombuffer(cols["bps"], dtype=np.float64)[keep]
    if metric in UDP_COLUMNS:
        return np.frombuffer(cols[UDP_COLUMNS[metric]], dtype=np.float64)[keep]
    span = (np.frombuffer(cols["end"], dtype=np.float64)
            - np.frombuffer(cols["start"], dtype=np.float64))[keep]
    retr = np.frombuffer(cols["retransmits"], dtype=np.float64)[keep]
    with np.errstate(divide="ignore", invalid="ignore"):
        return np.where(span > 0, retr / span, np.nan)


def _column(cols: Any, name: str, dtype: Any) -> NDArray[Any]:
    return np.frombuffer(cols[name], dtype=dtype) if len(cols) else np.empty(0, dtype=dtype)


def values(session: Session, pair: str, metric: str, *, phases: Sequence[int] | None = None,
           runs: Sequence[int] | None = None) -> NDArray[np.float64]:
    """A metric's samples on one pair, restricted to phases and/or runs (by index).

    throughput and retransmits_per_s come from intervals (omitted ones and those that
    straddle a knob change left out), rtt from pings (lost ones left out); throughput_rx is
    --bidir's other direction, which throughput never includes; jitter_ms, lost and packets
    are UDP's per-interval series (NaN on TCP intervals)."""
    source = session.pings[pair] if metric == "rtt" else session.intervals[pair]
    if not len(source):
        return np.empty(0)
    mask = np.ones(len(source), dtype=bool)
    if phases is not None:
        mask &= np.isin(_column(source, "phase", np.int32), np.asarray(phases, dtype=np.int32))
        mask &= _column(source, "phase", np.int32) != NO_PHASE
    if runs is not None:
        mask &= np.isin(_column(source, "run", np.int32), np.asarray(runs, dtype=np.int32))
    if metric == "rtt":
        rtt = _column(source, "rtt", np.float64)[mask]
        return rtt[np.isfinite(rtt)]
    return _interval_metric(session, pair, mask, metric)


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
    return {m: summarize(values(session, phase.pair, m, phases=[phase.index]))
            for m in METRICS}


def run_stats(session: Session, run: Run) -> dict[str, Summary]:
    return {m: summarize(values(session, run.pair, m, runs=[run.index])) for m in METRICS}


def segment_means(session: Session, pair: str, phases: Sequence[int],
                  metric: str = "throughput") -> list[float]:
    """Run-level samples: the mean of each (run, phase) segment within the given phases."""
    cols = session.pings[pair] if metric == "rtt" else session.intervals[pair]
    if not len(cols):
        return []
    phase_col = _column(cols, "phase", np.int32)
    run_col = _column(cols, "run", np.int32)
    out = []
    for ph in phases:
        in_phase = phase_col == ph
        for run in np.unique(run_col[in_phase]):
            v = values(session, pair, metric, phases=[ph], runs=[int(run)])
            if v.size:
                out.append(float(v.mean()))
    return out


def config_groups(session: Session, pair: str) -> dict[str, list[Phase]]:
    """A pair's phases grouped by configuration, in order of first appearance."""
    groups: dict[str, list[Phase]] = {}
    for ph in session.phases_of(pair):
        groups.setdefault(config_key(ph.config), []).append(ph)
    return groups


# ---- deltas and significance ---------------------------------------------------------------

@dataclass(frozen=True, slots=True)
class Delta:
    """other vs base in percent of base's mean, with a CONFIDENCE interval (None if n < 2)."""

    pct: float
    low: float | None = None
    high: float | None = None

    def __str__(self) -> str:
        text = f"{self.pct:+.1f}%"
        if self.low is not None and self.high is not None:
            text += f" [{self.low:+.1f}, {self.high:+.1f}]"
        return text


def delta(base: Sequence[float] | NDArray[Any], other: Sequence[float] | NDArray[Any],
          confidence: float = CONFIDENCE) -> Delta | None:
    """Percent change of the mean, with Welch's t interval on the difference (÷ base mean)."""
    return delta_of(summarize(base), summarize(other), confidence)


def delta_of(a: Summary, b: Summary, confidence: float = CONFIDENCE) -> Delta | None:
    """delta() from two summaries: Welch's t interval needs only n, mean and stdev."""
    if not a.n or not b.n or not a.mean or b.mean is None:
        return None
    pct = (b.mean - a.mean) / abs(a.mean) * 100
    if a.stdev is None or b.stdev is None:
        return Delta(pct)
    va, vb = a.stdev**2 / a.n, b.stdev**2 / b.n
    se = math.sqrt(va + vb)
    if se == 0:
        return Delta(pct, pct, pct)
    df = (va + vb) ** 2 / (va**2 / (a.n - 1) + vb**2 / (b.n - 1))
    from scipy.stats import t as student_t

    half = float(student_t.ppf(0.5 + confidence / 2, df)) * se / abs(a.mean) * 100
    return Delta(pct, pct - half, pct + half)


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

    def to_json(self) -> dict[str, Any]:
        return asdict(self)


def min_p(n1: int, n2: int) -> float:
    """Smallest two-sided p Mann-Whitney U can reach with n1+n2 samples (exact, no ties)."""
    return min(1.0, 2 / math.comb(n1 + n2, n1)) if n1 and n2 else 1.0


def _fmt_p(p: float) -> str:
    return f"{p:.3f}" if p < 0.1 else f"{p:.2f}"


def verdict(base: Sequence[float], other: Sequence[float], alpha: float = ALPHA) -> Verdict:
    """Two-sided Mann-Whitney U on run-level values at `alpha`.

    Too few samples to ever reach `alpha` (e.g. 3+3: min p = 0.1) says so instead of testing.
    """
    a = [float(x) for x in base if math.isfinite(x)]
    b = [float(x) for x in other if math.isfinite(x)]
    n1, n2 = len(a), len(b)
    ns = f"n={n1}+{n2}"
    pct = None
    if a and b and sum(a):
        pct = (sum(b) / n2 - sum(a) / n1) / abs(sum(a) / n1) * 100
    if min_p(n1, n2) > alpha:
        return Verdict(f"? ({ns}: too few runs)", n1, n2, pct, reason="too few runs")
    from scipy.stats import mannwhitneyu

    p = float(mannwhitneyu(a, b, alternative="two-sided").pvalue)
    if math.isnan(p):  # all values equal
        p = 1.0
    if p < alpha and pct is not None:
        return Verdict(f"{pct:+.1f}% (p={_fmt_p(p)} {ns})", n1, n2, pct, p, True)
    return Verdict(f"~ (p={_fmt_p(p)} {ns})", n1, n2, pct, p, False)


# ---- tables ------------------------------------------------------------------------------

@dataclass(slots=True)
class Cell:
    """One pair under one configuration: its phases' throughput, RTT, and run-level samples."""

    pair: str
    config: str
    phases: list[int]
    throughput: Summary
    rtt: Summary
    retransmits_per_s: Summary
    samples: list[float]
    # --bidir's other direction (receiver -> sender); n == 0 for one-way runs
    throughput_rx: Summary = field(default_factory=lambda: Summary(0))

    def to_json(self) -> dict[str, Any]:
        out = {"pair": self.pair, "config": self.config, "phases": self.phases,
               "throughput": self.throughput.to_json(), "rtt_ms": self.rtt.to_json(),
               "retransmits_per_s": self.retransmits_per_s.to_json(),
               "run_samples": self.samples, "noisy": self.throughput.noisy}
        if self.throughput_rx.n:
            out["throughput_rx"] = self.throughput_rx.to_json()
        return out


def cell(session: Session, pair: str, config: str, phases: list[Phase]) -> Cell:
    ix = [p.index for p in phases]
    return Cell(pair, config, ix,
                summarize(values(session, pair, "throughput", phases=ix)),
                summarize(values(session, pair, "rtt", phases=ix)),
                summarize(values(session, pair, "retransmits_per_s", phases=ix)),
                segment_means(session, pair, ix),
                summarize(values(session, pair, "throughput_rx", phases=ix)))


def cells(session: Session) -> dict[str, dict[str, Cell]]:
    """{config: {pair: Cell}}, configurations in order of first appearance."""
    out: dict[str, dict[str, Cell]] = {}
    for pair in session.pairs:
        for config, phases in config_groups(session, pair).items():
            out.setdefault(config, {})[pair] = cell(session, pair, config, phases)
    return out


def compare_cells(base: Cell, other: Cell) -> tuple[Delta | None, Verdict]:
    """Delta of mean throughput (CI from run-level samples when both sides have ≥ 2, else
    from intervals) and the Mann-Whitney verdict on run-level samples."""
    if len(base.samples) >= 2 and len(other.samples) >= 2:
        d = delta(base.samples, other.samples)
    else:
        d = delta_of(base.throughput, other.throughput)
    return d, verdict(base.samples, other.samples)
