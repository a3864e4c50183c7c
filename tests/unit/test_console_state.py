"""The console's state folding and the export fallback (no Textual involved)."""

from __future__ import annotations

import csv
import io
import json

from abtui.model import Event, EventKind, LinkState
from abtui.replay import synthetic_events, synthetic_profile
from abtui.ui.export import render
from abtui.ui.state import ConsoleState, Running, significance


def folded(intervals: int = 20, seed: int = 0) -> ConsoleState:
    profile = synthetic_profile(2)
    state = ConsoleState(profile)
    for e in synthetic_events(profile, intervals=intervals, seed=seed):
        state.apply(e)
    return state


def test_phases_deltas_and_markers() -> None:
    state = folded()
    assert len(state.phases) == 2
    rows = list(state.phases.values())
    assert rows[1].config["tcp_wmem"] == "4096 16384 65536"
    assert rows[0].per_pair["A"].n == 10 and rows[1].per_pair["B"].n == 10
    cells = state.phase_cells(rows[0])
    assert cells[0].endswith("n10") and "%" in cells[1]
    assert list(state.pairs["A"].markers).count(True) == 1
    assert list(state.pairs["A"].markers).index(True) == 10
    bmax, _ = state.scale()
    assert bmax == max(max(p.bps) for p in state.pairs.values())


def test_link_state_worst_host_wins_and_data_brings_it_back() -> None:
    state = folded(intervals=2)
    b = state.pairs["B"]
    assert b.link == LinkState.CONNECTED
    state.apply(Event(EventKind.LINK, host="b-rcv", data={"state": "lost", "message": "x"}))
    assert b.link == LinkState.LOST and state.pairs["A"].link == LinkState.CONNECTED
    state.apply(Event(EventKind.LINK, host="b-rcv", data={"state": "reconnecting"}))
    assert b.link == LinkState.RECONNECTING
    state.apply(Event(EventKind.INTERVAL, pair="B", data={"bits_per_second": 1e9}))
    assert b.link == LinkState.CONNECTED


def test_garbage_events_never_raise() -> None:
    state = folded(intervals=1)
    for e in [Event(EventKind.INTERVAL, pair="B", data={"bits_per_second": "x"}),
              Event(EventKind.INTERVAL, pair="Z", data={}),
              Event(EventKind.PING, pair="A", data={"rtt_ms": None}),
              Event(EventKind.KNOB, data={"knob": "nope", "value": 1, "pairs": ["Q"]}),
              Event(EventKind.FACTS, host="unknown", data={}),
              Event(EventKind.PROGRESS, data={"done": 1, "total": 3, "eta_s": 4})]:
        state.apply(e)
    assert state.pairs["B"].intervals == 1


def test_significance_placeholder() -> None:
    a, b, c = Running(), Running(), Running()
    for i in range(10):
        a.add(100 + i % 3)
        b.add(110 + i % 3)
        c.add(100 + (i + 1) % 3)
    assert significance(a, b) == "**"
    assert significance(a, c) == "~"
    short = Running()
    short.add(1)
    assert significance(a, short) == ""


def test_export_formats() -> None:
    state = folded()
    doc = json.loads(render(state, "json"))
    assert doc["pairs"] == ["A", "B"]
    assert len(doc["phases"]) == 4
    first = doc["phases"][0]
    assert first["pair"] == "A" and first["intervals"] == 10
    assert first["summary"]["sender_bits_per_second"] > 1e9
    rows = list(csv.reader(io.StringIO(render(state, "csv"))))
    assert rows[0][:2] == ["pair", "tcp_wmem"] and len(rows) == 5
    md = render(state, "md").splitlines()
    assert md[0].startswith("| pair |") and len(md) == 6
