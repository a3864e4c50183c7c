"""The small numbers: every figure is what it says, or it is unknown (`—` on screens and in
markdown, an empty CSV cell, JSON null), never a copy of another figure, a made-up weight or
a 0."""

from __future__ import annotations

import csv
import io
from collections.abc import Iterable, Iterator
from typing import Any

import pytest

from abtui.core.events import (
    PAYLOADS,
    Event,
    EventKind,
    IntervalMeasured,
    Ping,
    RunEnd,
    RunStart,
    SessionStart,
    Skew,
)
from abtui.measure.headless import RunRates
from abtui.profile import parse_profile
from abtui.reports import exports, samples, stats
from abtui.sessions.session import Session
from abtui.ui.model.state import ConsoleState
from abtui.ui.render.tables import session_comparison
from tests import synth

FLIPS = [{"wmem": "default"}, {"wmem": "64k"}, {"wmem": "default"}]
RATES = {"A": [10e9, 5e9, 10e9], "B": [11e9, 5.5e9, 11e9]}
# iperf3's own summary of a whole hour-long continuous run, stopped after three phases
OWN = {"protocol": "tcp", "sender_bits_per_second": 8.40e9,
       "receiver_bits_per_second": 8.39e9, "retransmits": 9999,
       "sender_cpu": {"total": 41.0, "user": 1.0, "system": 40.0},
       "receiver_cpu": {"total": 55.0, "user": 2.0, "system": 53.0}}


def _with(events: Iterable[Event], summary: dict[str, Any],
          options: dict[str, Any] | None = None) -> Iterator[Event]:
    """The events with each RUN_END carrying `summary` and each RUN_START's options
    updated with `options`."""
    for ev in events:
        if ev.kind is EventKind.RUN_END:
            ev = Event.of(PAYLOADS[ev.kind].from_data({**ev.record(), "summary": dict(summary)}),
                          ev.t, pair=ev.pair, host=ev.host)
        elif ev.kind is EventKind.RUN_START and options:
            data = {**ev.record(), "options": {**ev.payload.options, **options}}
            ev = Event.of(PAYLOADS[ev.kind].from_data(data), ev.t, pair=ev.pair, host=ev.host)
        yield ev


def _summaries(session: Session, pair: str) -> list[dict[str, Any]]:
    return [p["summary"] for p in exports.to_json(session)["phases"] if p["pair"] == pair]


# ---- the JSON export's phase summaries --------------------------------------------------------

def test_a_continuous_run_s_phases_export_their_own_figures_not_the_whole_run_s() -> None:
    """Three phases of one continuous run at 10 / 5 / 10 Gbit/s: each phase's summary is its
    own counted intervals' figure; iperf3's summary of the whole run (8.40) is none of them,
    and what only that summary knew (the receiver's rate, CPU) is null."""
    session = Session.from_events(_with(synth.continuous(FLIPS, RATES, seconds=10), OWN))
    summaries = _summaries(session, "A")
    assert len(summaries) == 3
    for s, want in zip(summaries, RATES["A"], strict=True):
        assert s["sender_bits_per_second"] == pytest.approx(want, rel=0.02)
        assert s["sender_bits_per_second"] == s["bits_per_second"]
        assert s["receiver_bits_per_second"] is None
        assert s["sender_cpu"] is None and s["receiver_cpu"] is None
        assert s["retransmits"] == 20  # its 10 counted intervals × 2, not the run's 9999


def test_with_reverse_the_counted_intervals_are_the_receiver_s_rate() -> None:
    """-R: the client's lines are the receiver's, so a stretch's figure is the receiver's
    rate and the sender's is unknown."""
    session = Session.from_events(_with(synth.continuous(FLIPS, RATES, seconds=10), OWN,
                                        options={"reverse": True}))
    for s, want in zip(_summaries(session, "B"), RATES["B"], strict=True):
        assert s["receiver_bits_per_second"] == pytest.approx(want, rel=0.02)
        assert s["sender_bits_per_second"] is None


def test_a_phase_that_is_exactly_one_run_keeps_iperf3_s_own_summary() -> None:
    """A continuous run never flipped is one whole run, and so is each plan run: there
    iperf3's own figures are the phase's (its receiver line, its CPU, its retransmits)."""
    one = Session.from_events(_with(synth.continuous(FLIPS[:1], RATES, seconds=10), OWN))
    (s,) = _summaries(one, "A")
    assert (s["sender_bits_per_second"], s["receiver_bits_per_second"]) == (8.40e9, 8.39e9)
    assert s["sender_cpu"] == OWN["sender_cpu"] and s["retransmits"] == 9999
    assert s["bits_per_second"] == pytest.approx(10e9, rel=0.02)  # the tables' figure
    plan = Session.from_events(synth.plan([{"wmem": "default"}], {"A": [[9e9, 9.2e9]],
                                                                  "B": [[8e9, 8.2e9]]}))
    got = [(s["sender_bits_per_second"], s["receiver_bits_per_second"])
           for s in _summaries(plan, "B")]
    assert got == [(8e9, pytest.approx(8e9 * 0.99)), (8.2e9, pytest.approx(8.2e9 * 0.99))]


def test_phase_summary_fields_nobody_measured_are_null_when_the_side_is_unknown() -> None:
    """Runs that recorded no options saying which side measured (a foreign record): the
    phase's rate is still the tables' figure, but neither side's is claimed."""
    events = [Event.of(PAYLOADS[ev.kind].from_data(
        {**ev.record(), "options": None} if ev.kind is EventKind.RUN_START else ev.record()),
        ev.t, pair=ev.pair, host=ev.host) for ev in _with(synth.continuous(FLIPS, RATES), OWN)]
    s = _summaries(Session.from_events(events), "A")[1]
    assert s["bits_per_second"] == pytest.approx(5e9, rel=0.02)
    assert s["sender_bits_per_second"] is None and s["receiver_bits_per_second"] is None


# ---- an interval of unknown span ----------------------------------------------------------------

T0 = synth.T0


def _unknown_span_events() -> list[Event]:
    """One run: two 1 s intervals at 10 Gbit/s, then one at 1 Gbit/s whose start and end
    were not recorded, with a ping answered during its last second."""
    ivs = [(0.0, 1.0, 10e9), (1.0, 2.0, 10e9), (None, None, 1e9)]
    events = [Event.of(SessionStart.from_data({"profile_text": synth.PROFILE}), T0),
              Event.of(RunStart.from_data({
                  "run": 1, "config": {"wmem": "default"},
                  "options": {"interval": 1.0, "reverse": False, "udp": False}}), T0, pair="A")]
    for k, (start, end, bps) in enumerate(ivs, start=1):
        events.append(Event.of(Ping(run=1, phase=0, seq=k, rtt_ms=0.05), T0 + k - 0.5, pair="A"))
        events.append(Event.of(IntervalMeasured.from_data({
            "run": 1, "phase": 0, "start": start, "end": end, "bytes": None,
            "bits_per_second": bps, "retransmits": 0, "omitted": False,
            "straddles": False}), T0 + k, pair="A"))
    events.append(Event.of(RunEnd.from_data({"run": 1, "status": "ok"}), T0 + 3, pair="A"))
    return events


def test_an_interval_of_unknown_span_counts_in_no_rate() -> None:
    """Weighed as 1 s it made the run 7 Gbit/s; left out, the run is its two measured
    seconds at 10 Gbit/s: in the reports, the export, the console and headless progress."""
    events = _unknown_span_events()
    session = Session.from_events(events)
    assert samples.run_rate(session, session.runs[0]) == pytest.approx(10e9)
    assert stats.phase_rate(session, session.phases[0]).mean == pytest.approx(10e9)
    assert _summaries(session, "A")[0]["bits_per_second"] == pytest.approx(10e9)
    rates = RunRates()
    assert [r.rate for ev in events if (r := rates(ev)) is not None] == [pytest.approx(10e9)]
    state = ConsoleState(parse_profile(synth.PROFILE, "synth.toml"))
    for ev in events:
        state.apply(ev)
    (row,) = state.phases.values()
    assert state.phase_cells(row)[0] == "10.0 n1"
    assert state.pairs["A"].phase_rate == pytest.approx(10e9)


def test_an_interval_of_unknown_span_has_no_rtt_and_empty_csv_cells() -> None:
    """Which pings fell in an interval of unknown span is unknown too: its rtt_ms is empty,
    as are its start and end, never a 1 s window's mean."""
    buf = io.StringIO()
    exports.write_csv(Session.from_events(_unknown_span_events()), buf)
    rows = list(csv.DictReader(io.StringIO(buf.getvalue())))
    assert [r["rtt_ms"] for r in rows] == ["0.05", "0.05", ""]
    assert (rows[2]["start"], rows[2]["end"]) == ("", "")
    assert float(rows[2]["bits_per_second"]) == 1e9  # what was measured is still there


# ---- the pane's mean ----------------------------------------------------------------------------

def test_the_pane_s_mean_is_the_run_level_figure_not_the_mean_of_interval_rates() -> None:
    """Two 1 s intervals at 10 Gbit/s and a 0.1 s last one at 1 Gbit/s carried 20.1 Gbit in
    2.1 s: 9.57 Gbit/s, what the phase table says; the plain mean of the three rates, 7.00,
    is no figure abtui prints anywhere else."""
    state = ConsoleState(parse_profile(synth.PROFILE, "synth.toml"))
    state.apply(Event.of(RunStart.from_data({"run": 1,
                                                          "config": {"wmem": "default"}}), T0,
                                                          pair="A"))
    for start, end, bps in ((0.0, 1.0, 10e9), (1.0, 2.0, 10e9), (2.0, 2.1, 1e9)):
        state.apply(Event.of(IntervalMeasured.from_data({
            "run": 1, "phase": 0, "start": start, "end": end, "bits_per_second": bps}), T0 + end,
            pair="A"))
    pane = state.pairs["A"]
    assert pane.phase_rate == pytest.approx(20.1e9 / 2.1)
    assert state.phase_cells(next(iter(state.phases.values())))[0] == "9.57 n1"
    assert pane.phase.n == 3 and pane.phase.lo == 1e9 and pane.phase.hi == 10e9
    assert state.pairs["B"].phase_rate is None  # no interval yet: unknown, not 0


# ---- the compare screen's numbers ---------------------------------------------------------------

def test_the_compare_screen_has_no_figure_where_a_pair_measured_nothing() -> None:
    """Pair B never ran under the second configuration: its cell says `—`, its bar is
    unknown (None), drawn as no bar with the row's name marked; never a 0 Gbit/s bar."""
    state = ConsoleState(parse_profile(synth.PROFILE, "synth.toml"))
    for ev in synth.continuous(FLIPS[:2], RATES, seconds=4):
        if not (ev.kind is EventKind.INTERVAL and ev.pair == "B" and ev.payload.phase == 1):
            state.apply(ev)
    c = session_comparison("s", state, {}, 120)
    assert [r[2] for r in c.rows][1] == "—"
    assert c.bars["A"][1] == pytest.approx(5.0, rel=0.02) and c.bars["B"][1] is None
    names, heights = c.drawn_bars()
    # each row named (issue 49), the unmeasured one marked; plotext leaves a 0 bar blank
    assert names == [c.bar_names[0], f"{c.bar_names[1]}—"] and heights[1][1] == 0.0
    assert not any(n.isdigit() for n in c.bar_names)


def test_the_console_never_says_0_for_a_skew_or_retransmits_nobody_reported() -> None:
    """A start skew the engine could not measure reads `—`, not `0.00 ms`; a pair whose lines
    carry no retransmits (the receiver's, with -R; UDP) has no total of them, not Σ 0."""
    state = ConsoleState(parse_profile(synth.PROFILE, "synth.toml"))
    assert state.apply(Event.of(Skew.from_data({"skew_ms": None}), T0)) == "start skew —"
    assert state.apply(Event.of(Skew.from_data({"skew_ms": 0.25}), T0)) == \
        "start skew 0.250 ms"
    for end in (1.0, 2.0):
        state.apply(Event.of(IntervalMeasured.from_data({
            "run": 1, "phase": 0, "start": end - 1, "end": end, "bits_per_second": 9e9}), T0 + end,
            pair="A"))
        state.apply(Event.of(IntervalMeasured.from_data({
            "run": 1, "phase": 0, "start": end - 1, "end": end, "bits_per_second": 9e9,
            "retransmits": 3}), T0 + end, pair="B"))
    assert state.pairs["A"].retransmits_total is None and state.pairs["A"].retransmits is None
    assert state.pairs["B"].retransmits_total == 6


def test_a_run_lies_within_phases_only_with_every_interval_in_them() -> None:
    """A continuous run flipped default → 64k → default lies within none of its phases alone
    nor within the default ones (the 64k stretch is in its summary), only within all three;
    a plan run lies within its own phase."""
    session = Session.from_events(synth.continuous(FLIPS, RATES, seconds=3))
    run = session.runs_of("A")[0]
    ix = [p.index for p in session.phases_of("A")]
    assert not any(samples.within(session, run, [i]) for i in ix)
    assert not samples.within(session, run, [ix[0], ix[2]])
    assert samples.within(session, run, ix)  # its straddlers lie between two of them
    plan = Session.from_events(synth.plan([{"wmem": "default"}], {"A": [[9e9]], "B": [[8e9]]}))
    (ph,) = plan.phases_of("A")
    assert samples.within(plan, plan.runs_of("A")[0], [ph.index])
    assert samples.whole_run(plan, ph) is plan.runs_of("A")[0]
