"""Numbers with their uncertainty: summaries, run-level values, deltas with confidence
intervals, significance.

Samples are run-level values (abtui.reports.throughput: one per segment, the counted intervals
of one run within one phase), never intervals: intervals of one run are not independent. A
cell's figure is the mean of its run-level values; a delta's interval and its significance come
from them alone, and from one procedure: Welch's t on the log of the ratio of the means
(LogWelch), so a cell that reads significant always has 0 outside its interval, and one that
reads ~ has 0 inside. With fewer than MIN_RUNS (2) runs on a side there is neither (Delta.why
and the verdict's `?` say so). scipy (scipy.special's t distribution) is imported lazily.
The values themselves come out of the session through abtui.reports.samples.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import asdict, dataclass, field
from typing import TYPE_CHECKING, Any

import numpy as np

from abtui.core.numbers import SIG_DIGITS
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
        return delta_text(self.pct, self.low, self.high)


NOT_BOUNDED = "(interval not bounded yet)"


def delta_text(pct: float, low: float | None, high: float | None) -> str:
    """A Δ as users read it: `+3.4% [+1.2, +5.7]`. At the sequential rule's first looks
    (tiny levels, few degrees of freedom) the interval reaches -100 % and beyond a million
    percent, which says nothing a reader can use (`[-100.0, +inf]`): then only that it is
    not bounded yet; an end beyond a million percent alone reads +inf."""
    text = f"{pct:+.1f}%"
    if low is None or high is None:
        return text
    if low <= -99.95 and high >= 1e6:
        return f"{text} {NOT_BOUNDED}"
    return f"{text} [{low:+.1f}, {f'{high:+.1f}' if high < 1e6 else '+inf'}]"


def finite(xs: Sequence[float] | NDArray[Any]) -> list[float]:
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


MIN_RUNS = 2  # per side: the fewest runs the rule judges from (a variance needs two)
METHOD = "welch-log"  # what a verdict's p and a Δ's interval both come from


@dataclass(frozen=True, slots=True)
class LogWelch:
    """Welch's t on the log of the ratio of means: the one procedure behind a cell's interval
    and its verdict (and the gate's answers), so they can never disagree."""

    log_ratio: float
    se: float
    df: float

    def bounds(self, confidence: float = CONFIDENCE) -> tuple[float, float]:
        """The two-sided `confidence` interval of the log ratio."""
        if self.se == 0:
            return self.log_ratio, self.log_ratio
        from scipy.special import stdtrit

        half = float(stdtrit(self.df, 0.5 + confidence / 2)) * self.se
        return self.log_ratio - half, self.log_ratio + half

    def p_below(self, log_null: float) -> float:
        """One-sided p that the log ratio is at least `log_null` (small: it is below)."""
        if self.se == 0:
            return 0.0 if self.log_ratio < log_null else 1.0
        from scipy.special import stdtr

        return float(stdtr(self.df, (self.log_ratio - log_null) / self.se))

    def p(self) -> float:
        """Two-sided p of no change (log ratio 0)."""
        return min(1.0, 2 * min(self.p_below(0.0), 1 - self.p_below(0.0))) if self.se else \
            float(self.log_ratio == 0)


def log_welch(a: Sequence[float], b: Sequence[float]) -> LogWelch | str:
    """The procedure on two sides' finite run-level values, or why it cannot judge them."""
    if len(a) < MIN_RUNS or len(b) < MIN_RUNS:
        return f"{FEW_RUNS} (n={len(a)}+{len(b)})"
    sa, sb = summarize(a), summarize(b)
    assert sa.mean is not None and sb.mean is not None
    assert sa.stdev is not None and sb.stdev is not None
    if sa.mean <= 0 or sb.mean <= 0:
        return "a mean of 0 or less: no interval for the ratio"
    log_ratio, se, df = log_ratio_stats(
        sa.mean, floored_var(sa.stdev**2, sa.n, sa.mean), sa.n,
        sb.mean, floored_var(sb.stdev**2, sb.n, sb.mean), sb.n)
    return LogWelch(float(log_ratio), float(se), float(df) if se else math.inf)


def resolution(mean: float) -> float:
    """The standard error a mean printed as `mean` can never be known better than: half a
    step of its last printed digit (iperf3's text prints SIG_DIGITS significant digits:
    `9.41 Gbits/sec` is anything from 9.405 to 9.415). Runs whose spread is below that step
    print the same figure, their rounding errors alike, so averaging more of them does not
    shrink it: `[9.41]×3` against `[9.42]×3` is one step apart and no evidence of a change."""
    if not mean or not math.isfinite(mean):
        return 0.0
    return 0.5 * 10.0 ** (math.floor(math.log10(abs(mean))) - (SIG_DIGITS - 1))


def floored_var(var: float, n: int, mean: float) -> float:
    """A side's sample variance raised so that the standard error of its mean (var / n) is
    never below the printed precision's (`resolution`): zero spread never claims."""
    return max(var, n * resolution(mean) ** 2)


def delta(base: Sequence[float] | NDArray[Any], other: Sequence[float] | NDArray[Any],
          confidence: float = CONFIDENCE) -> Delta | None:
    """Percent change of the mean of run-level values, with a `confidence` interval for the
    ratio of the means: Welch's t on the log scale (delta method), so it is never below
    -100 %. None without values on both sides (or a base mean of 0)."""
    a, b = finite(base), finite(other)
    return _delta(a, b, log_welch(a, b), confidence)


def _delta(a: list[float], b: list[float], w: LogWelch | str, confidence: float,
           pct: float | None = None) -> Delta | None:
    """The Δ of `w`'s procedure; its figure `pct` (by default the change of the plain
    means)."""
    pct = pct_change(a, b) if pct is None else pct
    if pct is None:
        return None
    if isinstance(w, str):
        return Delta(pct, why=w)
    if w.se == 0:
        return Delta(pct, pct, pct)
    low, high = w.bounds(confidence)
    return Delta(pct, pct_of_log(low), pct_of_log(high))


def pct_of_log(x: float) -> float:
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
    method: str = METHOD

    def to_json(self) -> dict[str, Any]:
        return asdict(self)


def _fmt_p(p: float) -> str:
    """`p=0.011`, `p=0.63`, `p<0.001` (t tails that small say nothing more)."""
    return "p<0.001" if p < 0.001 else f"p={p:.3f}" if p < 0.1 else f"p={p:.2f}"


def verdict(base: Sequence[float], other: Sequence[float], alpha: float = ALPHA) -> Verdict:
    """Significant at `alpha` exactly when the 1 − `alpha` interval of the Δ (Welch's t on the
    log ratio, as `delta`) leaves out 0; p is that test's two-sided p. Fewer than MIN_RUNS
    runs on a side: `?`, too few runs (no variance, so no interval either).

    Measured (simulated, 4000 draws each; docs/reports.md): with no difference, 3.6-5.0 % of
    verdicts say significant from 3+3 to 10+10 runs (2.5 % at 2+2); with equal means and
    unequal spread (1 % against 5-8 %), 4.7-6.7 % (the rank-sum test it replaces: 1-18 %);
    a 5 % change at 3 % noise is found 26 % of the time at 3+3, 60 % at 5+5, 93 % at
    10+10 (rank-sum: never at 3+3, 50 %, 91 %).
    """
    a, b = finite(base), finite(other)
    return _verdict(a, b, log_welch(a, b), alpha)


def _verdict(a: list[float], b: list[float], w: LogWelch | str, alpha: float,
             pct: float | None = None) -> Verdict:
    n1, n2 = len(a), len(b)
    ns = f"n={n1}+{n2}"
    pct = pct_change(a, b) if pct is None else pct
    if isinstance(w, str):
        why = "too few runs" if w.startswith(FEW_RUNS) else "no ratio"
        return Verdict(f"? ({ns}: {why})", n1, n2, pct, reason=w)
    low, high = w.bounds(1 - alpha)
    p = w.p()
    if (low > 0 or high < 0) and pct is not None:
        return Verdict(f"{pct:+.1f}% ({_fmt_p(p)} {ns})", n1, n2, pct, p, True)
    return Verdict(f"~ ({_fmt_p(p)} {ns})", n1, n2, pct, p, False)


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
    """The delta of the mean with its interval, and the verdict: one procedure (log_welch)
    for both, so a cell never reads significant with 0 inside its interval."""
    _, d, v = judged(base, other)
    return d, v


def judged(base: Sequence[float], other: Sequence[float]
           ) -> tuple[LogWelch | str, Delta | None, Verdict]:
    """compare_samples with the procedure itself (or why it could not judge): the gate
    tests its own threshold with it."""
    a, b = finite(base), finite(other)
    w = log_welch(a, b)
    return w, _delta(a, b, w, CONFIDENCE), _verdict(a, b, w, 1 - CONFIDENCE)


def judged_by(base: Sequence[float], other: Sequence[float], w: LogWelch | str
              ) -> tuple[Delta | None, Verdict]:
    """The Δ (its figure the procedure's own ratio, `w.log_ratio`) and verdict of another
    procedure on the same values (the gate's trimmed means: abtui.reports.trimmed)."""
    a, b = finite(base), finite(other)
    pct = pct_of_log(w.log_ratio) if isinstance(w, LogWelch) else None
    return _delta(a, b, w, CONFIDENCE, pct), _verdict(a, b, w, 1 - CONFIDENCE, pct)


def compare_cells(base: Cell, other: Cell, rx: bool = False) -> tuple[Delta | None, Verdict]:
    """compare_samples on two cells' run-level values (--bidir's way back with `rx`)."""
    if rx:
        return compare_samples(base.samples_rx, other.samples_rx)
    return compare_samples(base.samples, other.samples)
