"""The report's "Test options": the iperf3 command a run recorded (RUN_START `argv`) is printed
as it ran; a session recorded before abtui kept it gets today's rebuild, marked as one."""

from __future__ import annotations

import dataclasses
from pathlib import Path

from abtui.core import events
from abtui.core.events import Event
from abtui.reports.commands import REBUILT, command_lines
from abtui.reports.exports import render
from abtui.sessions.reader import load_events
from abtui.sessions.session import Session

RECORDED = Path(__file__).resolve().parents[2] / "golden" / "wireguard-gro.abtui.jsonl.gz"
# what an older abtui ran: no -V (today's client_argv adds it)
OLD = ["iperf3", "-c", "198.19.1.2", "-p", "5201", "-t", "10", "-i", "1", "--forceflush",
       "-P", "2", "-R"]


def _with_argv(pair: str, argv: list[str]) -> Session:
    out = []
    for ev in load_events(RECORDED):
        if ev.kind is events.EventKind.RUN_START and ev.pair == pair:
            ev = Event.of(dataclasses.replace(ev.payload, argv=argv), ev.t, ev.pair, ev.host)
        out.append(ev)
    return Session.from_events(out)


def test_a_recorded_command_is_printed_as_it_ran() -> None:
    session = _with_argv("baseline", OLD)
    lines = {pair: (direction, cell) for pair, direction, cell, _ in command_lines(session)}
    assert lines["baseline"] == ("rx (-R)", "`iperf3 -c 198.19.1.2 -p 5201 -t 10 -i 1 "
                                            "--forceflush -P 2 -R`")
    assert "`iperf3 -c 198.19.1.2 -p 5201 -t 10 -i 1 --forceflush -P 2 -R` |" in render(
        session, "md")


def test_a_command_the_session_did_not_record_is_marked_rebuilt() -> None:
    session = _with_argv("baseline", OLD)
    lines = {pair: cell for pair, _, cell, _ in command_lines(session)}
    assert lines["gro-v1"] == ("`iperf3 -c 198.19.2.2 -p 5201 -t 10 -i 1 --forceflush -V -P 2 "
                               f"-R` {REBUILT}")
    assert REBUILT not in lines["baseline"]


def test_the_recorded_argv_survives_the_journal() -> None:
    payload = events.RunStart(run="A-1", config={}, host_clock=None, skew_ms=None, options={},
                              argv=OLD)
    again = Event.from_json(Event.of(payload, 1.0, pair="A").to_json())
    assert again.payload.argv == OLD
    assert Session.from_events([again]).runs[0].argv == OLD
    assert "argv" not in dataclasses.replace(payload, argv=None).to_data()


def test_a_server_that_moved_ports_is_one_command_its_ports_named() -> None:
    """The same iperf3 command once per pair, not once per port the server moved to (the
    last still busy); the other ports named after it (issue 49)."""
    out, n = [], 0
    for ev in load_events(RECORDED):
        if ev.kind is events.EventKind.RUN_START and ev.pair == "baseline":
            port = str(5201 + n % 3)
            n += 1
            argv = [*OLD[:4], port, *OLD[5:]]
            ev = Event.of(dataclasses.replace(ev.payload, argv=argv), ev.t, ev.pair, ev.host)
        out.append(ev)
    assert n >= 3
    lines = [cell for pair, _, cell, _ in command_lines(Session.from_events(out))
             if pair == "baseline"]
    assert lines == ["`iperf3 -c 198.19.1.2 -p 5201 -t 10 -i 1 --forceflush -P 2 -R` "
                     "(also on ports 5202, 5203)"]
