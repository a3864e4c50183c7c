"""Numbers you can trust: one procedure for a Δ's interval and verdict, intervals from runs
only, and one figure per cell — the same in the console's phase table, every report table,
compare, the JSON export and headless progress (abtui.reports.throughput is the one
definition)."""

from __future__ import annotations

import json
import re
from pathlib import Path

import numpy as np
import pytest

from abtui.core.events import (
    Event,
    EventKind,
    IntervalMeasured,
    Phase,
    RunEnd,
    RunStart,
    SessionStart,
)
from abtui.core.numbers import sig
from abtui.profile import parse_profile
from abtui.reports import compare, exports, report, stats
from abtui.sessions.session import Session
from abtui.ui.model.state import ConsoleState
from tests import synth

PROFILES = Path(__file__).resolve().parents[3] / "profiles"
T0 = synth.T0

# ---- one method per cell: the verdict and the interval ------------------------------------


def _cells(rng: np.random.Generator, draws: int) -> list[tuple[list[float], list[float]]]:
    """Run-level values as a cell holds them: 2-10 runs a side, 3 % noise, a change of 0-6 %
    (the range where an interval's end falls near 0), rounded to 3 significant digits as
    iperf3 prints them (so runs tie)."""
    out = []
    for _ in range(draws):
        n1, n2 = (int(x) for x in rng.integers(2, 11, 2))
        change = 1 + rng.uniform(0, 0.06)
        a = np.round(9.41 * (1 + 0.03 * rng.standard_normal(n1)), 2)
        b = np.round(9.41 * change * (1 + 0.03 * rng.standard_normal(n2)), 2)
        out.append((a.tolist(), b.tolist()))
    return out


def test_a_cell_never_contradicts_itself() -> None:
    # The rank-sum verdict beside the Welch interval disagreed in ~7 % of such cells (11 %
    # at a 4-6 % change, 5+5): `-4.4% [-8.0, -0.6] ~ (p=0.056)`. One procedure for both:
    # significant exactly when 0 is outside the interval printed beside it.
    rng = np.random.default_rng(21)
    significant = 0
    for a, b in _cells(rng, 600):
        d, v = stats.compare_samples(a, b)
        assert d is not None and d.low is not None and d.high is not None
        outside = d.low > 0 or d.high < 0
        assert v.significant == outside, (a, b, d, v.text)
        significant += v.significant
    assert 100 < significant < 500  # both answers were exercised


def test_equal_means_with_unequal_spread_are_not_called_different() -> None:
    # 7 runs at 1 % noise against 3 at 6 %, the same mean: the rank-sum test said
    # "significant" 18 % of the time; Welch's t on the log ratio keeps to about 5 %.
    rng = np.random.default_rng(5)
    draws = 1500
    claims = sum(stats.verdict((1 + 0.01 * rng.standard_normal(7)).tolist(),
                               (1 + 0.06 * rng.standard_normal(3)).tolist()).significant
                 for _ in range(draws))
    assert claims / draws < 0.09, claims / draws


def test_too_few_runs_is_fewer_than_two_on_a_side() -> None:
    # a variance needs two runs: below, neither an interval nor a verdict
    assert stats.verdict([1.0], [4.0, 5.0, 6.0]).text == "? (n=1+3: too few runs)"
    assert stats.delta([1.0], [4.0, 5.0, 6.0]).low is None  # type: ignore[union-attr]
    # judged: Welch's df is about 1 here (the base's zero spread floored at its last digit)
    two = stats.verdict([1.0, 1.0], [2.0, 2.2])
    assert two.significant and two.text == "+110.0% (p=0.039 n=2+2)"
    # every value tied: no spread, no change: p = 1
    assert stats.verdict([5.0] * 4, [5.0] * 4).text == "~ (p=1.00 n=4+4)"
    assert stats.verdict([0.0, 0.0], [1.0, 2.0]).text == "? (n=2+2: no ratio)"


# ---- confidence intervals -------------------------------------------------------------------


def test_an_interval_comes_from_runs_only_and_never_goes_below_minus_100() -> None:
    one = stats.delta([10.0], [11.0])
    assert one is not None and one.low is None and str(one) == "+10.0%"
    assert "fewer than 2 runs" in one.why
    # wildly spread runs: the interval is for the ratio of the means, so bounded by -100 %
    wide = stats.delta([1.0, 1.1], [0.01, 2.0])
    assert wide is not None and wide.low is not None and wide.high is not None
    assert -100 < wide.low < wide.pct < wide.high
    # hand-computed: ratio 1.1 of means 10 and 11, stdev 0.2 each, n=3+3, on the log scale
    d = stats.delta([10, 10.2, 9.8], [11, 11.2, 10.8])
    assert d is not None and d.pct == pytest.approx(10.0)
    va, vb = 0.04 / (3 * 100), 0.04 / (3 * 121)
    df = (va + vb) ** 2 / (va**2 / 2 + vb**2 / 2)
    from scipy.stats import t

    half = t.ppf(0.975, df) * (va + vb) ** 0.5
    assert d.low == pytest.approx((1.1 * np.exp(-half) - 1) * 100)
    assert d.high == pytest.approx((1.1 * np.exp(half) - 1) * 100)


def test_a_one_plus_one_delta_is_printed_without_an_interval_and_the_note_says_why() -> None:
    session = Session.from_events(synth.continuous(
        [{"wmem": "default"}, {"wmem": "64k"}], {"A": [10e9, 5e9], "B": [11e9, 5.5e9]},
        seconds=10))
    md = report.markdown(session, chart=False)
    row = next(line for line in md.splitlines() if line.startswith("| wmem=64k | 5."))
    assert re.search(r"\| \+\d+\.\d% \? \(n=1\+1: too few runs\) \|$", row), row  # no [ ]
    assert "fewer than 2 runs on a side, so no confidence interval" in md
    assert "- A Δ without [low, high]" in md.split("## Notes", 1)[1]


# ---- one figure per cell ----------------------------------------------------------------------

# iperf3 -t 10 -i 2 as it really comes: spans that are not exactly 2 s, a short last interval,
# the first one omitted (-O), and a receiver summary that is not the sender's.
SPANS = [(0.0, 2.0, True), (2.0, 4.01), (4.01, 6.0), (6.0, 8.0), (8.0, 10.0), (10.0, 10.04)]


def _aim_session_events() -> list[Event]:
    """A sweep plan on ix-enable-aim's pairs: enable_aim 0 and 1, 4 repetitions, shuffled."""
    rng = np.random.default_rng(3)
    text = (PROFILES / "ix-enable-aim.toml").read_text()
    events = [Event.of(SessionStart.from_data({"profile_text": text}), T0)]
    base = {"stock": 9.0e9, "patched": 9.5e9, "linux-ref": 8.2e9}
    t = T0
    for run, value in enumerate(["0", "1", "0", "1", "1", "0", "1", "0"], start=1):
        for pair in base:
            events.append(Event.of(RunStart.from_data({
                "run": run, "config": {"enable_aim": value}}), t, pair=pair))
        for span in SPANS:
            start, end = span[0], span[1]
            for pair, rate in base.items():
                bps = float(round(rate * (1.0 + 0.05 * int(value))
                                  * rng.uniform(0.97, 1.03), -7))  # 3 significant digits
                events.append(Event.of(IntervalMeasured.from_data({
                    "run": run, "phase": run, "start": start, "end": end,
                    "bytes": int(bps * (end - start) / 8), "bits_per_second": bps,
                    "retransmits": 0, "omitted": len(span) > 2, "straddles": False}), t + end,
                    pair=pair))
        t += 10.04
        for pair, rate in base.items():
            events.append(Event.of(Phase(phase=run, config={"enable_aim": value}, start=t - 10.04,
                                         end=t), t, pair=pair))
            events.append(Event.of(RunEnd.from_data({
                "run": run, "status": "ok", "message": "", "summary": {
                    "protocol": "tcp", "sender_bits_per_second": rate,
                    "receiver_bits_per_second": rate * 0.985}}), t, pair=pair))
        t += 2
    return events


def _table(md: str, heading: str) -> list[list[str]]:
    part = md.split(f"## {heading}\n", 1)[1].split("\n## ", 1)[0]
    return [[c.strip() for c in line.strip("|").split("|")]
            for line in part.splitlines() if line.startswith("|") and "---" not in line]


def _grouped(rows: list[list[str]]) -> dict[tuple[str, str], list[str]]:
    """A first table's rows by (pair, value): a kernel group's name is on its first row."""
    out, pair = {}, ""
    for r in rows:
        pair = r[0].split(" (")[0] or pair
        out[(pair, r[1])] = r
    return out


def _figure(cell: str) -> tuple[str, int]:
    """`9.41 ± 0.05 (n=3)` -> ("9.41", 3); `9.41` -> ("9.41", 1)."""
    m = re.fullmatch(r"(\d+(?:\.\d+)?)(?: ± \d+(?:\.\d+)? \(n=(\d+)\))?", cell)
    assert m, cell
    return m.group(1), int(m.group(2) or 1)


def test_one_report_one_figure_per_cell_equal_to_the_console_s() -> None:
    events = _aim_session_events()
    session = Session.from_events(events)
    md = report.markdown(session, chart=False)
    sweep = _grouped(_table(md, "Throughput per kernel and enable_aim")[1:])
    generic = _table(md, "Throughput per configuration")
    pairs = [h.split(" (")[0] for h in generic[0][1:4]]
    assert generic[0][1:4] == [f"{p} (Gbit/s)" for p in pairs]
    state = ConsoleState(parse_profile(events[0].payload.profile_text, "ix.toml"))
    for ev in events:
        state.apply(ev)
    console = {row.config["enable_aim"]: state.phase_cells(row) for row in state.phases.values()}
    doc = json.loads(exports.render(session, "json"))
    exported = {(c["pair"], c["config"]): c for c in doc["configurations"]}
    cmp_rows = {(r[0], r[1]): r for r in _table(
        "## x\n" + compare.markdown(session, session), "x")[1:]}
    for row in generic[1:]:
        value = row[0].removeprefix("enable_aim=")
        for i, pair in enumerate(pairs):
            figure, n = _figure(row[1 + i])
            assert n == 4
            # the procedure table: the same figure (its n is in the Δ's verdict)
            assert sweep[(pair, value)][2] == row[1 + i].split(" ± ")[0]
            assert cmp_rows[(pair, row[0])][2] == row[1 + i]  # compare's
            shown = console[value][state_order(state).index(pair)]
            # the console's (Gbit/s, 2 decimals): the same figure to the report's 3 digits
            assert [sig(float(shown.split()[0])), shown.split()[1]] == [figure, "n4"], shown
            c = exported[(pair, row[0])]
            assert f"{c['bits_per_second'] / 1e9:.2f}" == figure  # the JSON export's
            assert c["throughput"]["n"] == 4 and len(c["run_samples"]) == 4
        # every Δ: the same change, with its interval and its verdict
        # the reference (linux-ref): shown, never compared, here or in the procedure table
        assert generic[0][4:] == ["Δ patched vs stock"] and len(row) == 5
        for i, pair in enumerate(pairs[1:2]):
            delta = row[4 + i]
            assert re.fullmatch(r"[+-]\d+\.\d% \[[+-]\d+\.\d, [+-]\d+\.\d\] "
                                r"(~ )?\(p(=\d\.\d+|<0\.001) n=4\+4\)", delta), delta
            assert sweep[(pair, value)][3] == delta  # the procedure table's Δ
            pct = delta.split("%")[0]
            assert console[value][state_order(state).index(pair)].split()[2].startswith(
                pct + "%")


def state_order(state: ConsoleState) -> list[str]:
    return list(state.pairs)


def test_a_run_s_figure_is_its_bits_over_its_seconds_everywhere() -> None:
    """The runs table, the JSON export and headless progress say the same per run: the
    counted intervals' bits ÷ their seconds (iperf3's own summary, to its precision)."""
    from abtui.measure.headless import RunRates, describe

    events = _aim_session_events()
    session = Session.from_events(events)
    rates = RunRates()
    lines = [line for ev in events if (line := describe(ev, rates(ev))) and " run " in line]
    doc = json.loads(exports.render(session, "json"))
    runs = _table(report.markdown(session, chart=False), "Runs")
    at = runs[0].index("throughput (Gbit/s)")  # (columns every run shares are said once)
    assert runs[0][at + 1] == "intervals"
    for run, line, row in zip(doc["runs"], lines, runs[1:], strict=True):
        counted = [e.record() for e in events if e.kind is EventKind.INTERVAL
                   and e.pair == run["pair"] and e.payload.run == run["run"]
                   and not e.payload.omitted]
        bits = sum(d["bits_per_second"] * (d["end"] - d["start"]) for d in counted)
        want = bits / sum(d["end"] - d["start"] for d in counted)
        assert run["bits_per_second"] == pytest.approx(want, rel=1e-12)
        assert line.endswith(f"ok, {sig(want / 1e9)} Gbit/s")  # the same 3 digits
        assert row[at] == sig(want / 1e9)  # 3 significant digits, as iperf3 prints them


def test_continuous_flips_one_figure_in_the_table_and_the_console() -> None:
    """Continuous mode, a knob flipped back: a configuration's two phases are its two
    run-level values; straddling intervals count in neither, here or in the console."""
    events = list(synth.continuous([{"wmem": "default"}, {"wmem": "64k"}, {"wmem": "default"}],
                                   {"A": [10e9, 5e9, 10.4e9], "B": [11e9, 5.5e9, 11.2e9]},
                                   seconds=10, jitter=0.03))
    session = Session.from_events(events)
    generic = _table(report.markdown(session, chart=False), "Throughput per configuration")
    state = ConsoleState(parse_profile(synth.PROFILE, "synth.toml"))
    for ev in events:
        state.apply(ev)
    console = {row.config["wmem"]: state.phase_cells(row) for row in state.phases.values()}
    for row in generic[1:]:
        shown = console[row[0].removeprefix("wmem=")]
        for i in range(2):
            figure, n = _figure(row[1 + i])
            console_figure, runs = shown[i].split()[:2]
            assert [sig(float(console_figure)), runs] == [figure, f"n{n}"], (shown, row)
    assert generic[1][1].endswith("(n=2)")  # default: two phases, two run-level values


# ---- the noise flag ---------------------------------------------------------------------------


def test_no_noise_flag_beside_an_answer_the_runs_give() -> None:
    """Intervals that vary (a ramp-up, phases 30 % apart) said nothing about whether the runs
    tell the configurations apart: the old ⚠ "too noisy to conclude" fired on every cell of a
    lab session beside a verdict at p < 0.001 (issue 33). The runs' spread against the effect
    is the Δ's interval and verdict; no cell, note or legend flags the intervals."""
    events = synth.continuous([{"wmem": "default"}, {"wmem": "64k"}, {"wmem": "default"}],
                              {"A": [10e9, 5e9, 13e9], "B": [11e9, 5.5e9, 11e9]}, seconds=10)
    session = Session.from_events(events)
    cells = stats.cells(session)["wmem=default"]
    assert cells["A"].intervals.cv is not None and cells["A"].intervals.cv > stats.NOISE_CV
    md = report.markdown(session, chart=False)
    assert "⚠" not in md and "too noisy" not in md
    assert re.search(r"\| wmem=default \| 11\.\d ± 2\.\d \(n=2\) \| 1\d\.\d ± 0\.\d "
                     r"\(n=2\) \|", md)
    readme = (Path(__file__).resolve().parents[3] / "README.md").read_text()
    numbers = readme.split("How the numbers are made", 1)[1].split("\n## ", 1)[0]
    assert "too noisy" not in numbers
