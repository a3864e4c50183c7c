"""The regression gate (`abtui compare --fail-on-regression PCT`): three answers per pair,
configuration and direction, from the procedure every cell uses (abtui.reports.stats.log_welch).

- **regression**: the Δ's 95 % interval lies wholly below −PCT, and the case survives the
  Benjamini–Hochberg false discovery rate control over every case the gate judged (all pairs,
  configurations and directions together) at FDR (2.5 %, one-sided: with one case this is
  exactly "the interval lies below −PCT", as the table prints it).
- **pass**: the interval lies wholly above −PCT (no adjustment needed: the gate passes only
  when every case does, an intersection–union test, so its level is each case's).
- **inconclusive**: neither — the interval straddles −PCT, it is below −PCT alone but not
  after the control over all cases, or the rule cannot judge (fewer than stats.MIN_RUNS runs
  on a side, a mean of 0).

Why the false discovery rate and not family-wise (Holm): a change that costs throughput
usually costs it in many configurations at once, and BH finds such a spread regression far
more often; when nothing changed (the case a false alarm is about) the two give the same
guarantee, at most FDR for any false alarm at all. Measured (tests/bench/bench_gate.py: 20
configurations × 2 pairs, n = 5, 3 % noise, drift within each session, slow noise, stalls;
threshold 0): A/A, a false alarm in 2.2 % of gates (each case judged alone: 49 %); a 5 % loss
in every configuration, 25 % of the cases called a regression under BH against 5 % under
Holm, and a regression found in 93 % of gates (Holm 85 %), none passed (the rest are
inconclusive: exit 1 all the same); a 5 % loss in one configuration, found in 12 % of gates.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass, replace

from abtui.reports import stats

PASS, REGRESSION, INCONCLUSIVE, UNMATCHED = "pass", "regression", "inconclusive", "unmatched"
FDR = (1 - stats.CONFIDENCE) / 2  # one-sided, the 95 % interval's side
CONTROL = "false discovery rate (Benjamini–Hochberg)"
DIRECTIONS = {"throughput": "", "throughput_rx": " (way back: receiver → sender)"}


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
    """One pair, configuration and direction, and the gate's answer on it (`why` says why)."""

    pair: str
    config: str
    answer: str
    why: str = ""
    delta: stats.Delta | None = None
    verdict: stats.Verdict | None = None
    metric: str = "throughput"
    p_adjusted: float | None = None

    @property
    def failed(self) -> bool:
        return self.answer == REGRESSION

    @property
    def name(self) -> str:
        return self.config + DIRECTIONS.get(self.metric, f" ({self.metric})")

    def line(self) -> str:
        """`A cc=reno: throughput -6.2% [-8.0, -4.4] (p<0.001 n=5+5): regression: …`."""
        text = f"{self.pair} {self.name}: "
        if self.delta is not None and self.verdict is not None:
            from abtui.reports.formatting import fmt_delta

            text += f"throughput {fmt_delta(self.delta, self.verdict)}: "
        return text + f"{self.answer}: {self.why}"


def judge(cases: Sequence[Judged], threshold: float) -> list[GateCase]:
    """Each case's answer at −`threshold` %, the false discovery rate controlled over all."""
    floor = math.log1p(-threshold / 100) if threshold < 100 else -math.inf
    out: list[GateCase] = []
    tested: list[tuple[int, float]] = []  # (position, one-sided p of a loss beyond PCT)
    for c in cases:
        w, d, v = stats.judged(c.base, c.other)
        if isinstance(w, str):
            why = (f"too few runs for the rule (n={v.n_base}+{v.n_other}; it judges from "
                   f"{stats.MIN_RUNS} runs a side)" if w.startswith(stats.FEW_RUNS) else w)
        else:
            tested.append((len(out), w.p_below(floor)))
            why = ""
        out.append(GateCase(c.pair, c.config, INCONCLUSIVE, why, d, v, c.metric))
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


def _bh(ps: list[float]) -> list[float]:
    """Benjamini–Hochberg adjusted p-values (scipy's)."""
    if not ps:
        return []
    from scipy.stats import false_discovery_control

    return [float(q) for q in false_discovery_control(ps, method="bh")]


def unmatched(pair: str, config: str, where: str) -> GateCase:
    """A configuration recorded on one side only: never judged, never a pass."""
    return GateCase(pair, config, UNMATCHED, f"only in {where}")


def junit(title: str, cases: list[GateCase]) -> str:
    """JUnit XML, one test case per pair, configuration and direction: a regression is a
    <failure>, an inconclusive or unmatched case <skipped> (its message says which, and a
    property `answer` names it), a pass has the line in <system-out>."""
    from xml.etree import ElementTree as ET

    suites = ET.Element("testsuites", name="abtui compare")
    suite = ET.SubElement(suites, "testsuite", {
        "name": title, "tests": str(len(cases)), "failures": str(sum(c.failed for c in cases)),
        "skipped": str(sum(c.answer in (INCONCLUSIVE, UNMATCHED) for c in cases)),
        "errors": "0"})
    for c in cases:
        case = ET.SubElement(suite, "testcase", classname=f"abtui.compare.{c.pair}",
                             name=c.name)
        props = ET.SubElement(case, "properties")
        ET.SubElement(props, "property", name="answer", value=c.answer)
        if c.failed:
            ET.SubElement(case, "failure", message=c.line(), type=REGRESSION).text = c.line()
        elif c.answer in (INCONCLUSIVE, UNMATCHED):
            ET.SubElement(case, "skipped", message=f"{c.answer}: {c.why}")
        else:
            ET.SubElement(case, "system-out").text = c.line()
    ET.indent(suites)
    return ET.tostring(suites, encoding="unicode", xml_declaration=True) + "\n"
