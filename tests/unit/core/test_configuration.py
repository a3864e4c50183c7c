"""One rule for a phase's configuration and label, shared by the console and the export."""

from __future__ import annotations

import pytest

from abtui.core.configuration import INITIAL, config_label, cycle, pair_value
from abtui.core.events import (
    Config,
    Event,
    IntervalMeasured,
    KnobChanged,
    Phase,
    RunStart,
)
from abtui.measure.replay.synthetic import synthetic_profile
from abtui.sessions.session import Session
from abtui.ui.model.state import ConsoleState

HOSTS = {"tcp_wmem": "4096 16384 33554432", "cc": "bbr"}


def test_labels_name_only_what_differs_and_never_collide() -> None:
    assert config_label(HOSTS, HOSTS) == INITIAL
    assert config_label({**HOSTS, "cc": "reno"}, HOSTS) == "cc=reno"
    a = config_label({**HOSTS, "cc": "reno"}, HOSTS)
    b = config_label({**HOSTS, "cc": "reno", "tcp_wmem": "1 2 3"}, HOSTS)
    assert a != b and b == "cc=reno, tcp_wmem=1 2 3"
    assert config_label({}, None) == INITIAL  # a session recorded before values were read


def test_a_pair_whose_hosts_disagree_says_both() -> None:
    assert pair_value({"sender": "on", "receiver": "on"}) == "on"
    assert pair_value({"sender": "on", "receiver": "off"}) == "on/off"
    assert pair_value({"receiver": "off"}) == "off"
    assert pair_value({}) == "?"


@pytest.mark.parametrize(("current", "original", "after"), [
    ("33554432", "33554432", "a"),  # the host's own value, not listed: the first listed next
    ("a", "33554432", "b"),
    ("b", "33554432", "33554432"),  # ... and back to the host's own
    ("b", "a", "a"),  # listed already: the plain cycle
    ("?", None, "a"),
])
def test_the_cycle_returns_to_the_hosts_own_value(current: str, original: str | None,
                                                  after: str) -> None:
    assert cycle(("a", "b"), current, original) == after


def _feed(state: ConsoleState, events: list[Event]) -> Session:
    for e in events:
        state.apply(e)
    return Session.from_events(events)


def test_the_console_starts_from_what_the_hosts_have_not_the_profile() -> None:
    profile = synthetic_profile(2)
    state = ConsoleState(profile)
    assert state.pairs["A"].config == {}  # unknown until the hosts say
    state.apply(Event.of(Config(config={"cc": "bbr"}), pair="A"))
    assert state.pairs["A"].config == {"cc": "bbr"} and state.pairs["A"].original["cc"] == "bbr"
    assert state.baseline == {"cc": "bbr"}


def test_per_scope_flips_never_pool_one_pairs_values_into_anothers_row() -> None:
    """A flips cc to reno, B stays on bbr: their intervals go to two rows, each named by
    its own configuration, in the console and in the export alike."""
    profile = synthetic_profile(2)
    state = ConsoleState(profile)
    cfg = {"cc": "bbr"}
    events = [Event.of(Config(config=dict(cfg)), 1.0, pair=p) for p in "AB"]
    events += [Event.of(RunStart.from_data({"run": 0, "config": dict(cfg)}), 1.0, pair=p)
               for p in "AB"]
    events += [Event.of(IntervalMeasured.from_data({
        "run": 0, "phase": 0, "start": 0, "end": 1, "bits_per_second": 1e9}), 2.0,
        pair=p) for p in "AB"]
    events.append(Event.of(Phase(phase=0, config=dict(cfg), start=1.0, end=2.1), 2.1, pair="A"))
    events.append(Event.of(KnobChanged.from_data({"knob": "cc", "value": "reno",
                                                   "pairs": ["A"]}), 2.2))
    events += [Event.of(IntervalMeasured.from_data({
        "run": 0, "phase": 1 if p == "A" else 0, "start": 1 + i, "end": 2 + i,
        "bits_per_second": 2e9 if p == "A" else 1e9}), 3.0 + i, pair=p)
        for i in range(1, 3) for p in "AB"]
    session = _feed(state, events)
    rows = {state.row_label(r): {p: run.n for p, run in r.per_pair.items()}
            for r in state.phases.values() if r.per_pair}
    # the baseline's row named by its values, as the report names it (the export: initial)
    assert rows == {"cc=bbr": {"A": 1, "B": 3}, "cc=reno": {"A": 2}}
    exported = {}
    for ph in session.phases:
        n = sum(1 for x in session.intervals[ph.pair]["phase"] if x == ph.index)
        label = session.config_label(ph.config)
        exported.setdefault("cc=bbr" if label == INITIAL else label, {})[ph.pair] = n
    assert exported == rows


def test_a_straddling_interval_counts_in_no_phase_not_even_the_panes() -> None:
    profile = synthetic_profile(1)
    state = ConsoleState(profile)
    state.apply(Event.of(Config(config={"tso": "on"}), pair="A"))
    state.apply(Event.of(RunStart.from_data({"run": 0, "config": {"tso": "on"}}), pair="A"))
    state.apply(Event.of(KnobChanged.from_data({"knob": "tso", "value": "off", "pairs": ["A"]})))
    state.apply(Event.of(IntervalMeasured.from_data({"bits_per_second": 13.5e9,
                                                          "straddles": True}), pair="A"))
    for bps in (3.7e9, 3.8e9):
        state.apply(Event.of(IntervalMeasured.from_data({"bits_per_second": bps}), pair="A"))
    ps = state.pairs["A"]
    assert ps.phase.n == 2 and ps.phase.hi == 3.8e9
    assert ps.phase.mean == pytest.approx(3.75e9)
    assert ps.bps[0] == 13.5e9  # shown in the sparkline all the same


def test_the_knob_bar_shows_each_pairs_value_when_they_differ() -> None:
    state = ConsoleState(synthetic_profile(2))
    assert state.knob_value("cc", ["A", "B"]) == "?"
    for pair, cc in (("A", "reno"), ("B", "bbr")):
        state.apply(Event.of(Config(config={"cc": cc}), pair=pair))
    assert state.knob_value("cc", ["A", "B"]) == "A:reno B:bbr"
    assert state.knob_value("cc", ["B"]) == "bbr"
