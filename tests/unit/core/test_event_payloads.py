"""Typed event payloads: recorded journals read into payloads and written again are the same
bytes, and the console and the session read events through one dispatch."""

from __future__ import annotations

import gzip
import json
from pathlib import Path

import pytest

from abtui.core import events, model
from abtui.core.events import PAYLOADS, Event, EventKind, EventReader
from abtui.measure.replay.synthetic import synthetic_events
from abtui.sessions.session import Session
from abtui.ui.model.state import ConsoleState

SESSIONS = sorted((Path(__file__).parents[2] / "fixtures" / "sessions").glob("*.jsonl.gz"))


def _lines(path: Path) -> list[str]:
    with gzip.open(path, "rt", encoding="utf-8") as f:
        return f.read().splitlines()[1:]  # line 1 is the header


@pytest.mark.parametrize("path", SESSIONS, ids=lambda p: p.name.split(".")[0])
def test_a_recorded_journal_round_trips_through_typed_payloads(path: Path) -> None:
    kinds = set()
    for line in _lines(path):
        recorded = Event.from_json(json.loads(line))
        payload = recorded.payload
        assert isinstance(payload, PAYLOADS[recorded.kind])
        assert not payload.extra, (recorded.kind, dict(payload.extra))  # every key is typed
        again = Event.of(payload, recorded.t, recorded.pair, recorded.host)
        assert json.dumps(again.to_json(), separators=(",", ":"), ensure_ascii=False) == line
        kinds.add(recorded.kind)
    assert {EventKind.SESSION_START, EventKind.RUN_START, EventKind.RUN_END} <= kinds


def test_the_recordings_hold_every_kind_the_engine_writes() -> None:
    seen = {json.loads(line)["kind"] for path in SESSIONS for line in _lines(path)}
    # a mark is made in the console, or by an alternation (module.abtui.jsonl.gz has them);
    # a bisection's look only by `abtui bisect`
    # (tests/unit/measure/bisect/test_bisect_board.py: a round trip)
    made = {"mark", "bisect"}
    assert seen - made == {str(k) for k in EventKind} - made


def test_a_synthetic_recording_and_a_mark_round_trip() -> None:
    for event in [*synthetic_events(pairs=2, intervals=4), Event.of(events.Mark(text="x"))]:
        obj = json.loads(json.dumps(event.to_json()))
        again = Event.from_json(obj)
        assert again == event and again.payload == event.payload


def test_a_key_no_payload_names_is_kept() -> None:
    obj = {"kind": "mark", "t": 1.0, "data": {"text": "x", "from_a_newer_abtui": [1, 2]}}
    event = Event.from_json(obj)
    assert event.payload.text == "x"
    assert Event.of(event.payload, 1.0).to_json() == obj


def test_an_optional_field_is_left_out_while_none() -> None:
    tcp = events.IntervalMeasured(run="A-1", phase=0, start=0.0, end=1.0, bytes=1,
                                  bits_per_second=8.0, retransmits=None, cwnd_bytes=None,
                                  omitted=False, straddles=False)
    assert "direction" not in tcp.to_data() and "retransmits" in tcp.to_data()


def test_every_kind_has_a_payload_and_both_readers_share_one_dispatch() -> None:
    assert set(PAYLOADS) == set(EventKind)
    for reader in (ConsoleState, Session):
        assert issubclass(reader, EventReader)
        assert reader.dispatch is EventReader.dispatch


def test_a_kind_a_reader_has_no_handler_for_is_logged_as_it_came() -> None:
    from abtui.measure.replay.synthetic import synthetic_profile

    state = ConsoleState(synthetic_profile(1))
    event = Event.of(events.Mark(text="x"))
    assert state.on_other(event) == "mark: {'text': 'x'}"
    assert Session.from_events([event]).kinds_seen == {"mark": 1}


def test_payload_classes_are_named_apart_from_the_model_s() -> None:
    model_classes = {name for name, obj in vars(model).items() if isinstance(obj, type)}
    names = {cls.__name__ for cls in PAYLOADS.values()}
    assert not names & model_classes
    assert {"IntervalMeasured", "KnobChanged", "WatchSampled"} <= names


def test_the_old_payload_names_are_gone() -> None:
    for old in ("Interval", "Knob", "Watch"):
        assert not hasattr(events, old), old
    with pytest.raises(AttributeError):
        _ = events.NoSuchPayload  # type: ignore[attr-defined]


def test_the_record_is_a_copy_and_the_payload_typed() -> None:
    """An event is read through its payload (the deprecated `data` view and the untyped
    constructor are gone); its record is a copy."""
    event = Event.of(events.KnobChanged(knob="cc", value="bbr", pairs=["A"], hosts=["a"]), 1.0)
    assert not hasattr(event, "data")
    with pytest.raises(TypeError):
        Event(events.EventKind.KNOB, 1.0, data={"knob": "cc"})  # type: ignore[call-arg]
    assert event.record() == {"knob": "cc", "value": "bbr", "pairs": ["A"], "hosts": ["a"]}
    event.record()["knob"] = "cubic"  # a copy: the event is unchanged
    assert event.payload.knob == "cc" and event.recorded("knob")
    assert not event.recorded("phase")


def test_a_recorded_value_of_the_wrong_type_is_kept_as_recorded() -> None:
    # readers check what they use: a hand-edited record reads back, never raises on load
    got = events.IntervalMeasured.from_data({"run": 7, "phase": "three", "bytes": "many"})
    assert (got.run, got.phase, got.bytes, got.start) == (7, "three", "many", None)
    assert got.rate() is None


def test_the_model_s_rules_read_a_payload() -> None:
    udp = events.IntervalMeasured(run="A-1", phase=0, start=0.0, end=1.0, bytes=1,
                                  bits_per_second=8e6, retransmits=None, cwnd_bytes=None,
                                  omitted=False, straddles=False, jitter_ms=0.5,
                                  lost_packets=5, packets=200, direction="rx")
    assert model.interval_rate(udp) == (8e6, True)
    assert model.interval_loss(udp) == (2.5, 0.5)
    assert model.interval_rate(events.IntervalMeasured.from_data(
        {"bits_per_second": 1e9, "omitted": True})) is None


def test_a_payload_is_built_as_a_frozen_keyword_dataclass() -> None:
    """Payload's own __init__ and frozenness (none generated per class) behave as
    dataclass's did: keywords only, defaults and factories, errors for a missing or unknown
    field, no assignment, and a copy equal to its original."""
    import copy
    import dataclasses

    link = events.Link(state="up", message="m")
    assert link == events.Link(state="up", message="m") and link.extra == {}
    assert dataclasses.replace(link, state="down").state == "down"
    assert copy.copy(link) == link
    why = events.WhyFound(rows=[])
    assert why.flames == [] and why.flames is not events.WhyFound(rows=[]).flames
    assert why.counters is None
    assert events.Link(state="a", message="b", extra={"z": 1}).to_data() == {
        "state": "a", "message": "b", "z": 1}
    with pytest.raises(TypeError, match="missing 1 required keyword-only argument: 'message'"):
        events.Link(state="up")  # type: ignore[call-arg]
    with pytest.raises(TypeError, match="unexpected keyword argument 'foo'"):
        events.Link(state="up", message="", foo=1)  # type: ignore[call-arg]
    with pytest.raises(TypeError):
        events.Link("up", "m")  # type: ignore[misc]
    with pytest.raises(dataclasses.FrozenInstanceError):
        link.state = "down"  # type: ignore[misc]
    with pytest.raises(dataclasses.FrozenInstanceError):
        del link.state  # type: ignore[misc]
