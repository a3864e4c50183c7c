"""--bidir: a run measures both ways at once. The pair's throughput is its own direction
(sender → receiver, [TX-C]); the way back ([RX-C]) is kept beside it, never averaged in."""

from __future__ import annotations

import csv
import io
from dataclasses import asdict
from pathlib import Path

import pytest

from abtui.core.events import (
    PAYLOADS,
    Event,
    EventKind,
    IntervalMeasured,
    RunEnd,
    RunStart,
    SessionStart,
)
from abtui.parse import parse_iperf3_text
from abtui.reports import exports, report, stats
from abtui.sessions.session import Session
from abtui.ui.model.state import ConsoleState
from tests import synth

FIXTURE = Path(__file__).parents[2] / "fixtures" / "iperf3-3.12" / "bidir.client.txt"


def _events() -> list[Event]:
    """One bidir run of pair A, as the engine emits it, from what iperf3 3.12 printed."""
    result = parse_iperf3_text(FIXTURE.read_text())
    t = synth.T0
    events = [Event.of(SessionStart.from_data({"profile_text": synth.PROFILE}), t),
              Event.of(RunStart.from_data({"run": "A-1", "config": {}}), t, pair="A")]
    for iv in result.intervals:
        data = {"run": "A-1", "phase": 0, **iv.to_json(), "straddles": False,
                "direction": iv.direction}
        events.append(Event.of(IntervalMeasured.from_data(data), t + iv.end, pair="A"))
    assert result.reverse_summary is not None
    events.append(Event.of(RunEnd(run="A-1", status="ok", message="", ping=None,
                                  summary=asdict(result.summary),
                                  reverse_summary=asdict(result.reverse_summary)),
                           t + 2.1, pair="A"))
    return events


def test_each_direction_has_its_own_statistics():
    session = Session.from_events(_events())
    (row,) = stats.cells(session).values()
    (cell,) = row.values()
    # [TX-C] 5.35 and 5.15 Gbit/s; [RX-C] 4.83 and 4.90: never one mean of all four. One
    # run: one run-level value per direction, its bits ÷ seconds (0.00-1.00, 1.00-2.01)
    assert cell.intervals.n == 2 and cell.intervals.mean == pytest.approx(5.25e9)
    assert cell.samples == [pytest.approx((5.35e9 + 5.15e9 * 1.01) / 2.01)]
    assert cell.intervals_rx.n == 2 and cell.intervals_rx.mean == pytest.approx(4.865e9)
    assert cell.samples_rx == [pytest.approx((4.83e9 + 4.90e9 * 1.01) / 2.01)]
    assert cell.retransmits_per_s.n == 2  # the TX stream's retransmits only
    (run,) = session.runs
    assert run.summary["sender_bits_per_second"] == pytest.approx(5.25e9)
    assert run.reverse_summary["receiver_bits_per_second"] == pytest.approx(4.85e9)
    md = report.markdown(session, chart=False)
    assert "## Other direction (--bidir: receiver → sender)" in md
    assert "| (defaults) | 4.87 | — | — |" in md
    rows = list(csv.DictReader(io.StringIO(_csv(session))))
    assert [r["direction"] for r in rows] == ["", "rx", "", "rx"]
    doc = exports.to_json(session)
    (phase,) = doc["phases"]
    assert phase["summary"]["bits_per_second"] == pytest.approx(5.25e9, rel=1e-3)
    assert phase["summary"]["intervals"]["mean"] == pytest.approx(5.25e9)
    assert phase["summary"]["bits_per_second_rx"] == pytest.approx(4.865e9, rel=1e-3)
    assert phase["summary"]["intervals_rx"]["mean"] == pytest.approx(4.865e9)
    assert doc["runs"][0]["reverse_summary"]["sender_bits_per_second"] == pytest.approx(4.89e9)
    assert doc["runs"][0]["stats"]["throughput_rx"]["n"] == 2


def test_one_way_runs_carry_no_rx_fields():
    session = Session.from_events(synth.plan([{"k": "1"}], {"A": [[5e9]], "B": [[6e9]]},
                                             seconds=3))
    doc = exports.to_json(session)
    assert all("throughput_rx" not in p["summary"] for p in doc["phases"])
    assert all("reverse_summary" not in r and "throughput_rx" not in r["stats"]
               for r in doc["runs"])
    assert "Other direction" not in report.markdown(session, chart=False)


def test_the_console_shows_the_way_back_beside_the_pair_s_own_series():
    from abtui.profile import parse_profile

    state = ConsoleState(parse_profile(synth.PROFILE, "synth.toml"))
    for ev in _events():
        state.apply(ev)
    pane = state.pairs["A"]
    assert list(pane.bps) == pytest.approx([5.35e9, 5.15e9])
    assert pane.rx_bps == pytest.approx(4.90e9)


def _csv(session: Session) -> str:
    out = io.StringIO()
    exports.write_csv(session, out)
    return out.getvalue()


def test_compare_puts_the_way_back_in_a_table_of_its_own():
    from abtui.reports import compare

    left = Session.from_events(_events(), name="before")
    faster = [Event.of(PAYLOADS[e.kind].from_data({
        **e.record(), "bits_per_second": e.payload.bits_per_second * 1.1}), e.t, pair=e.pair,
        host=e.host)
        if e.kind is EventKind.INTERVAL and e.payload.direction == "rx" else e
        for e in _events()]
    right = Session.from_events(faster, name="after")
    md = compare.markdown(left, right)
    head, back = md.split("## Other direction (--bidir: receiver → sender), Gbit/s")
    assert "| A | (defaults) | 5.25 | 5.25 | +0.0% ? (n=1+1" in head  # own direction unchanged
    assert "| A | (defaults) | 4.87 | 5.35 | +10.0% ? (n=1+1: too few runs) |" in back
    assert "Other direction" not in compare.markdown(
        Session.from_events(synth.plan([{"k": "1"}], {"A": [[5e9]], "B": [[6e9]]}, seconds=3)),
        Session.from_events(synth.plan([{"k": "1"}], {"A": [[5e9]], "B": [[6e9]]}, seconds=3)))


def test_the_chart_draws_the_way_back_as_a_line_of_its_own():
    from abtui.reports.plots import throughput_chart

    chart = throughput_chart(Session.from_events(_events()))
    assert "A rx" in chart and "A" in chart.replace("A rx", "")
    one_way = throughput_chart(Session.from_events(
        synth.plan([{"k": "1"}], {"A": [[5e9]], "B": [[6e9]]}, seconds=3)))
    assert "rx" not in one_way


def test_the_compare_screen_s_lines_keep_the_way_back_apart(tmp_path: Path) -> None:
    """The compare screen's throughput over time, live and from a saved session: the way
    back is a line of its own (`A rx`), as on the report's chart, not interleaved with the
    pair's own direction into one zigzag line that is neither."""
    from abtui.sessions.writer import SessionWriter
    from abtui.ui.flow.record import throughput_series
    from abtui.ui.render.tables import saved_comparison

    events = _events()
    series = throughput_series(events, ["A"], events[0].t)
    assert [v for _, v in series["A"]] == pytest.approx([5.35e9, 5.15e9])
    assert [v for _, v in series["A rx"]] == pytest.approx([4.83e9, 4.90e9])
    with SessionWriter(tmp_path / "s.abtui.jsonl", profile="synth") as w:
        for ev in events:
            w.write(ev)
    assert w.final_path is not None
    from abtui.sessions.session import Session

    lines = saved_comparison(Session.load(w.final_path), events).lines
    assert [v for _, v in lines["saved A"]] == pytest.approx([5.35, 5.15])
    assert [v for _, v in lines["now A rx"]] == pytest.approx([4.83, 4.90])
