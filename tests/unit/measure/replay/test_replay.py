"""The replay controller: deterministic synthetic sessions, knob phases, refusals, restore."""

from __future__ import annotations

import asyncio
import math
import time

import pytest

from abtui.core.errors import BadInput, KnobRefused
from abtui.core.events import Event, EventKind, Mark
from abtui.measure.replay.controller import ReplayController, profile_from_events
from abtui.measure.replay.synthetic import synthetic_events, synthetic_profile


def kinds(events: list[Event]) -> list[str]:
    return [str(e.kind) for e in events]


def test_synthetic_events_are_deterministic_and_realistic() -> None:
    a = synthetic_events(intervals=40, seed=5)
    b = synthetic_events(intervals=40, seed=5)
    assert [e.to_json() for e in a] == [e.to_json() for e in b]
    assert [e.to_json() for e in a] != [e.to_json() for e in synthetic_events(intervals=40,
                                                                              seed=6)]
    ivals = [e for e in a if e.kind is EventKind.INTERVAL and e.pair == "A"]
    assert len(ivals) == 40
    first, second = ivals[:20], ivals[20:]
    mean1 = sum(e.payload.bits_per_second for e in first) / 20
    mean2 = sum(e.payload.bits_per_second for e in second) / 20
    assert 2e9 < mean1 < 5e9  # a few Gbit/s
    assert 0.4 < mean2 / mean1 < 0.6  # the flip to a 64 KiB tcp_wmem about halves it
    assert len({round(e.payload.bits_per_second) for e in first}) == 20  # noise
    assert all(e.payload.cwnd_bytes > 0 and e.payload.retransmits >= 0 for e in ivals)
    pings = [e for e in a if e.kind is EventKind.PING]
    assert all(0 < e.payload.rtt_ms < 5 for e in pings)
    knob = [e for e in a if e.kind is EventKind.KNOB]
    assert len(knob) == 1 and knob[0].payload.pairs == ["A", "B"]


async def test_live_stream_follows_set_knob_and_phases() -> None:
    profile = synthetic_profile(2, interval=1.0)
    ctl = ReplayController(profile, speed=math.inf, seed=1, limit=10)
    got: list[Event] = []
    ctl.subscribe(got.append)
    await ctl.start()
    await ctl._task  # type: ignore[misc]
    await ctl.set_knob("tso", "off", ["B"])
    assert ctl.configs["B"]["tso"] == "off" and ctl.configs["A"]["tso"] == "on"
    kb = [e for e in got if e.kind is EventKind.KNOB][-1]
    assert kb.record() == {"knob": "tso", "value": "off", "pairs": ["B"], "hosts": ["b-snd"]}
    ctl.limit = 10
    await ctl.start()  # already ran once: a new run, same controller
    await ctl._task  # type: ignore[misc]
    b = [e.payload.bits_per_second for e in got if e.kind is EventKind.INTERVAL and e.pair == "B"]
    assert sum(b[10:]) / 10 < 0.5 * sum(b[:10]) / 10  # tso off: ~0.4
    await ctl.shutdown()
    restores = [e for e in got if e.kind is EventKind.RESTORE]
    assert [(e.host, e.payload.knob, e.payload.value) for e in restores] == [
        ("b-snd", "tso", "on")]
    assert got[-1].kind is EventKind.SESSION_END
    assert ctl.configs["B"]["tso"] == "on"


async def test_set_knob_while_running_closes_the_phase() -> None:
    ctl = ReplayController(synthetic_profile(2), speed=100.0)
    got: list[Event] = []
    ctl.subscribe(got.append)
    await ctl.start()
    await asyncio.sleep(0.05)
    await ctl.set_knob("cc", "bbr")
    await ctl.stop()
    phases = [e for e in got if e.kind is EventKind.PHASE]
    assert {(e.pair, e.payload.phase, e.payload.config["cc"]) for e in phases[:2]} == {
        ("A", 0, "reno"), ("B", 0, "reno")}
    ends = [e for e in got if e.kind is EventKind.RUN_END]
    assert {e.payload.status for e in ends} == {"stopped"}
    later = [e for e in got if e.kind is EventKind.INTERVAL and got.index(e) > got.index(
        phases[0])]
    assert all(e.payload.phase == 1 for e in later)


async def test_refused_knob_raises_and_reports() -> None:
    ctl = ReplayController(synthetic_profile(2), refuse={"cc=bbr"})
    got: list[Event] = []
    ctl.subscribe(got.append)
    with pytest.raises(KnobRefused, match="refused cc=bbr"):
        await ctl.set_knob("cc", "bbr")
    assert got[-1].kind is EventKind.KNOB_ERROR
    assert ctl.configs["A"]["cc"] == "reno"
    with pytest.raises(KnobRefused, match="not one of"):
        await ctl.set_knob("cc", "vegas")
    with pytest.raises(KnobRefused, match="no knob"):
        await ctl.set_knob("nope", "1")


async def test_replay_keeps_its_timing_scaled_by_speed() -> None:
    events = synthetic_events(intervals=4, interval=1.0)
    ctl = ReplayController(synthetic_profile(2), events, speed=20.0)
    got: list[Event] = []
    ctl.subscribe(got.append)
    t0 = time.monotonic()
    await ctl.start()
    await ctl._task  # type: ignore[misc]
    elapsed = time.monotonic() - t0
    assert 0.18 < elapsed < 1.0  # 4 s of session at 20x: 0.2 s
    assert sum(e.kind is EventKind.INTERVAL for e in got) == 8


async def test_a_saved_session_replays_through_the_store(tmp_path) -> None:  # type: ignore[no-untyped-def]
    from abtui.sessions.reader import load_events
    from abtui.sessions.writer import SessionWriter

    events = synthetic_events(intervals=3)
    with SessionWriter(tmp_path / "s.abtui.jsonl", profile="synthetic",
                       pairs=["A", "B"]) as writer:
        for e in events:
            writer.write(e)
    back = load_events(writer.final_path or tmp_path / "s.abtui.jsonl.gz")
    assert [e.to_json() for e in back] == [e.to_json() for e in events]
    prof = profile_from_events(back)
    assert [p.label for p in prof.pairs] == ["A", "B"]
    assert "tcp_wmem" in [k.name for k in prof.knobs]
    ctl = ReplayController(prof, back, speed=math.inf)
    got: list[Event] = []
    ctl.subscribe(got.append)
    await ctl.start()
    await ctl._task  # type: ignore[misc]
    assert [e.to_json() for e in got] == [e.to_json() for e in back]


def test_profile_from_events_needs_pairs() -> None:
    with pytest.raises(BadInput, match="no pair events"):
        profile_from_events([Event.of(Mark(text="x"), 1.0)])
