"""The regression gate (`abtui compare --fail-on-regression PCT`): an answer per pair,
configuration and direction, from Yuen's trimmed-mean procedure (abtui.reports.trimmed: the
log ratio of 20 % trimmed means, Welch's t, each side's standard error floored at its printed
precision). Its Δ is named apart from the cells' (plain means): `Δ of 20 % trimmed means`.

- **regression**: the Δ's 95 % interval lies wholly below −PCT, and the case survives the
  Benjamini–Hochberg false discovery rate control over every case the gate tested (all pairs,
  configurations and directions together) at FDR (2.5 %, one-sided: with one case this is
  exactly "the interval lies below −PCT").
- **pass**: the interval lies wholly above −PCT (no adjustment needed: the gate passes only
  when every case does, an intersection–union test, so its level is each case's).
- **inconclusive**: neither — the interval straddles −PCT, or it is below −PCT alone but not
  after the control over all cases.
- **too few runs** (UNTESTED): fewer than stats.MIN_RUNS runs on a side, or a mean of 0: the
  rule cannot test it; never counted as tested, never a pass. Nothing tested exits 3
  (abtui.commands.compare), whatever the options.

Each tested case also says the smallest loss it could have shown (`shows`) and the runs a side
at which, at the spread it saw and with nothing changed, it would pass 9 times in 10
(`runs`); `resolution` says the same of the whole gate (a lone regression after the control
over every case; every case passing together).

Measured (tests/bench/bench_gate.py, `python -m tests.bench gate`: 20 configurations × 2
pairs, 3 % run noise, drift within each session, slow noise, a periodic load, 2 % of runs
stalled at 0.7×, 3-digit rates). At the recommended RECOMMENDED_RUNS = 30 runs a side: A/A
at threshold 0, a false alarm in 0.020 of 600 gates; A/A at −5 %, 0.955 of 400 gates of 40
cases pass (0.9989 of cases); one case 10 % slower at −5 %, caught in 0.988 of 400 gates, no
other case called. At 5 runs a side: false alarms 0.017 (each case alone: 0.51), no A/A gate
passes at −5 %, and a 5 % loss in every configuration is called in 0.04 of the cases (0.51 of
gates find one). On plain means the same A/A gates at −5 % passed 0.06 of the time at 30
runs and never at 5: one stalled run anywhere kept a case's interval across −5 %.

What it cannot see (`BLIND`, said after every gate): drift that differs per configuration
between the two sessions (a host's state that moved between the days, differently for each
configuration) is a difference between the sessions like the change's, and more runs do not
remove it. Measured (bench_gate.gate_config_drift, 200 A/A gates at 30 runs a side, each
configuration's rate moved by its own lognormal factor): 1 % apart, false alarms in 0.325 of
gates at threshold 0 (0.000 at 2 %); 2 % apart, 0.91 (0.23 at 2 %). The way to separate drift
from a change is to alternate the two in one session (`abtui run --alternate`: blocks in a
random order, drift cancels within a block).

Why the false discovery rate and not family-wise (Holm): a change that costs throughput
usually costs it in many configurations at once, and BH finds such a spread regression more
often; when nothing changed (the case a false alarm is about) the two give the same
guarantee, at most FDR for any false alarm at all.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass, replace

from abtui.reports import stats, trimmed

PASS, REGRESSION, INCONCLUSIVE, UNMATCHED = "pass", "regression", "inconclusive", "unmatched"
UNTESTED = "too few runs"  # a case the rule cannot test: never judged, never a pass
FDR = (1 - stats.CONFIDENCE) / 2  # one-sided, the 95 % interval's side
CONTROL = "false discovery rate (Benjamini–Hochberg)"
METRIC_WAYS = {"throughput": "", "throughput_rx": " (way back: receiver → sender)"}
# the runs a side the README recommends for a CI gate, from tests/bench/bench_gate.py
RECOMMENDED_RUNS = 30
PASS_CHANCE = 0.9  # "runs a pass needs": the gate passes this often when nothing changed
MAX_RUNS = 1000  # forecasts beyond this say "more than"


@dataclass(frozen=True, slots=True)
class Judged:
    """What the gate judges one case from: its name and both sides' run-level values."""

    pair: str
    config: str
    base: Sequence[float]
    other: Sequence[float]
    metric: str = "throughput"


@dataclass(frozen=True, slots=True)
class GateCase:
    """One pair, configuration and direction, and the gate's answer on it (`why` says why).
    `tested`: the procedure's result and both sides, when the rule could test it."""

    pair: str
    config: str
    answer: str
    why: str = ""
    delta: stats.Delta | None = None
    verdict: stats.Verdict | None = None
    metric: str = "throughput"
    p_adjusted: float | None = None
    tested: tuple[stats.LogWelch, trimmed.Side, trimmed.Side] | None = None  # what it was
    threshold: float = 0.0

    @property
    def shows(self) -> float | None:
        """The smallest loss (%) this case, on its own, could have shown as a regression."""
        if self.tested is None:
            return None
        return _shows(self.tested[0], stats.CONFIDENCE, _floor(self.threshold))

    @property
    def runs(self) -> int | None:
        """The runs a side at which, if nothing changed, this case passes PASS_CHANCE of the
        time at the spread it saw (None: no count does; MAX_RUNS + 1: none up to it)."""
        if self.tested is None:
            return None
        return runs_for(self.tested[1], self.tested[2], _floor(self.threshold), PASS_CHANCE)

    @property
    def failed(self) -> bool:
        return self.answer == REGRESSION

    @property
    def judged(self) -> bool:
        """Tested by the rule: matched, and enough runs on both sides."""
        return self.answer in (PASS, REGRESSION, INCONCLUSIVE)

    @property
    def name(self) -> str:
        if self.metric.startswith("latency "):
            what, by, _ = self.metric.partition(" sockperf")
            return (f"{self.config} ({what} RTT{' of sockperf' if by else ''}, "
                    "judged on 1/RTT)")
        return self.config + METRIC_WAYS.get(self.metric, f" ({self.metric})")

    def line(self) -> str:
        """`A cc=reno: Δ of 20 % trimmed means -1.2% [-8.0, +6.1] ~ (p=0.7 n=5+5):
        inconclusive: …; could show a loss from 9.1%, a pass needs about 22 runs a side if
        nothing changed` (a regression says what it could show, not what a pass needs)."""
        text = f"{self.pair} {self.name}: "
        if self.tested is not None and self.delta is not None and self.verdict is not None:
            from abtui.reports.formatting import fmt_delta

            text += f"{trimmed.NAME} {fmt_delta(self.delta, self.verdict)}: "
            if self.metric.startswith("latency "):
                text += f"(the RTT {rtt_change(self.delta.pct):+.1f}%) "
        text += f"{self.answer}: {self.why}"
        if self.shows is not None:
            text += f"; could show a loss from {self.shows:.1f}%"
            if not self.failed:
                text += f", {runs_text(self.runs)}"
        return text


def rtt_change(pct: float) -> float:
    """A Δ of 1/RTT as the RTT's own change (−20 % → +25 %): abtui.reports.latency's."""
    return (100.0 / (1 + pct / 100) - 100.0) if pct > -100 else math.inf


def runs_text(runs: int | None) -> str:
    if runs is None:
        return "no run count makes a pass likely at this threshold"
    if runs > MAX_RUNS:
        return f"a pass needs more than {MAX_RUNS} runs a side"
    return f"a pass needs about {runs} runs a side if nothing changed"


def judge(cases: Sequence[Judged], threshold: float) -> list[GateCase]:
    """Each case's answer at −`threshold` %, the false discovery rate controlled over the
    cases the rule could test (the others are UNTESTED, said with their run counts)."""
    floor = _floor(threshold)
    out: list[GateCase] = []
    tested: list[tuple[int, float]] = []  # (position, one-sided p of a loss beyond PCT)
    for c in cases:
        got = trimmed.judge(c.base, c.other)
        w = got if isinstance(got, str) else got[0]
        d, v = stats.judged_by(c.base, c.other, w)
        if isinstance(got, str):
            why = (f"n={v.n_base}+{v.n_other}, the rule tests from {stats.MIN_RUNS} runs a "
                   "side" if got.startswith(stats.FEW_RUNS) else got)
            out.append(GateCase(c.pair, c.config, UNTESTED, why, d, v, c.metric))
            continue
        tested.append((len(out), got[0].p_below(floor)))
        out.append(GateCase(c.pair, c.config, INCONCLUSIVE, "", d, v, c.metric, None, got,
                            threshold))
    m = len(tested)
    for (i, _), q in zip(tested, _bh([p for _, p in tested]), strict=True):
        case = out[i]
        d = case.delta
        assert d is not None and d.low is not None and d.high is not None
        if q <= FDR and d.high < -threshold:
            answer, why = REGRESSION, (f"worse by more than {threshold:g}% (adjusted p="
                                       f"{q:.2g} over {m} case{'s' if m != 1 else ''})")
        elif d.low > -threshold:
            answer, why = PASS, f"the whole interval is above -{threshold:g}%"
        elif d.high < -threshold:
            answer, why = INCONCLUSIVE, (
                f"below -{threshold:g}% on its own, not after the {CONTROL} control over "
                f"{m} cases (adjusted p={q:.2g})")
        else:
            answer, why = INCONCLUSIVE, f"the interval straddles -{threshold:g}%"
        out[i] = replace(case, answer=answer, why=why, p_adjusted=q)
    return out


def _floor(threshold: float) -> float:
    """−PCT as a log ratio."""
    return math.log1p(-threshold / 100) if threshold < 100 else -math.inf


def _shows(w: stats.LogWelch, confidence: float, floor: float) -> float:
    """The smallest loss (%) whose estimate, at this standard error, puts the whole
    `confidence` interval below −PCT: the least regression these runs could have shown."""
    from scipy.special import stdtrit

    half = float(stdtrit(w.df, 0.5 + confidence / 2)) * w.se
    return -math.expm1(floor - half) * 100 if math.isfinite(floor) else 100.0


def runs_for(a: trimmed.Side, b: trimmed.Side, floor: float, chance: float) -> int | None:
    """The fewest runs a side at which, with each side's spread as seen and no change, the
    whole 95 % interval clears −PCT with probability `chance`: (t + z) · se(n) ≤ −ln(1 − PCT).
    None when no count does (a threshold of 0, or one finer than the printed precision);
    MAX_RUNS + 1 when none up to MAX_RUNS does."""
    if not math.isfinite(floor) or floor >= 0:
        return None
    import numpy as np
    from scipy.special import ndtri, stdtrit

    ns = np.arange(stats.MIN_RUNS, MAX_RUNS + 1)
    se, df = trimmed.welch(a, b, ns)
    ok = (stdtrit(df, 0.5 + stats.CONFIDENCE / 2) + float(ndtri(chance))) * se <= -floor
    if not ok.any():
        best = float(trimmed.welch(a, b, 10**6)[0])
        return None if best * 2 > -floor else MAX_RUNS + 1  # the floor alone forbids it
    return int(ns[np.argmax(ok)])


@dataclass(frozen=True, slots=True)
class Resolution:
    """What the gate as a whole could have told: the smallest regression a lone case would
    have shown after the control over every case (the least resolved case's), and the runs a
    side at which the whole gate passes PASS_CHANCE of the time if nothing changed."""

    shows: float | None
    worst: GateCase | None
    runs: int | None
    passed: bool = False  # every case tested passed: no run count is wanted

    def line(self) -> str:
        if self.worst is None:
            return "resolution: nothing was tested"
        shows = "" if self.shows is None else (
            f"a regression in one case alone would have shown from {self.shows:.1f}% (the "
            f"least resolved case: {self.worst.pair} {self.worst.name})")
        if self.passed:  # never "N pass" then "a pass needs more runs"
            return f"resolution: {shows or 'every case passed'}"
        return (f"resolution: {shows}{'; ' if shows else ''}{runs_text(self.runs)} "
                f"({PASS_CHANCE:.0%} of gates)")


def resolution(cases: Sequence[GateCase], threshold: float) -> Resolution:
    """The gate's Resolution over the cases it tested."""
    floor = _floor(threshold)
    tested = [(c, c.tested) for c in cases if c.tested is not None]
    if not tested:
        return Resolution(None, None, None)
    m = len(tested)
    worst, shows = tested[0][0], -1.0
    runs: int | None = 0
    chance = PASS_CHANCE ** (1 / m)  # every case must pass
    for c, (w, a, b) in tested:
        loss = _shows(w, 1 - 2 * FDR / m, floor)  # a lone regression under BH
        if loss > shows:
            worst, shows = c, loss
        need = runs_for(a, b, floor, chance)
        runs = None if need is None or runs is None else max(runs, need)
    return Resolution(shows, worst, runs, all(c.answer == PASS for c, _ in tested))


def _bh(ps: list[float]) -> list[float]:
    """Benjamini–Hochberg adjusted p-values (scipy's)."""
    if not ps:
        return []
    from scipy.stats import false_discovery_control

    return [float(q) for q in false_discovery_control(ps, method="bh")]


# drift per configuration between the sessions: (its spread in percent, the share of A/A
# gates that called a regression at threshold 0, at threshold 2 %), measured (module docstring)
CONFIG_DRIFT_ALARMS = ((1.0, 0.325, 0.0), (2.0, 0.91, 0.23))
BLIND = ("not seen: drift that differs per configuration between the two sessions reads as "
         "the change (each configuration " + "; ".join(
             f"{s:g}% apart: false alarms in {a0:.2f} of gates at threshold 0, {a2:.2f} at 2%"
             for s, a0, a2 in CONFIG_DRIFT_ALARMS) +
         "); to separate drift from a change, alternate the two in one session "
         "(abtui run --alternate)")


def unmatched(pair: str, config: str, where: str) -> GateCase:
    """A configuration recorded on one side only: never judged, never a pass."""
    return GateCase(pair, config, UNMATCHED, f"only in {where}")


def junit(title: str, cases: list[GateCase]) -> str:
    """JUnit XML, one test case per pair, configuration and direction: a regression is a
    <failure>, an inconclusive, untested or unmatched case <skipped> (its message says which, and a
    property `answer` names it), a pass has the line in <system-out>."""
    from xml.etree import ElementTree as ET

    suites = ET.Element("testsuites", name="abtui compare")
    suite = ET.SubElement(suites, "testsuite", {
        "name": title, "tests": str(len(cases)), "failures": str(sum(c.failed for c in cases)),
        "skipped": str(sum(c.answer in (INCONCLUSIVE, UNTESTED, UNMATCHED) for c in cases)),
        "errors": "0"})
    for c in cases:
        case = ET.SubElement(suite, "testcase", classname=f"abtui.compare.{c.pair}",
                             name=c.name)
        props = ET.SubElement(case, "properties")
        ET.SubElement(props, "property", name="answer", value=c.answer)
        if c.failed:
            ET.SubElement(case, "failure", message=c.line(), type=REGRESSION).text = c.line()
        elif c.answer in (INCONCLUSIVE, UNTESTED, UNMATCHED):
            ET.SubElement(case, "skipped", message=f"{c.answer}: {c.why}")
        else:
            ET.SubElement(case, "system-out").text = c.line()
    ET.indent(suites)
    return ET.tostring(suites, encoding="unicode", xml_declaration=True) + "\n"
