"""Auto-alternation without hosts: stretches made from the engine's events, the live verdicts
and the loop that flips, stops by the rule or at the maximum (abtui.measure.alternate), and
`abtui run --alternate`'s arguments."""

from __future__ import annotations

import argparse
import re

import pytest

from abtui.commands.run import _alternation, add_arguments
from abtui.core.errors import BadInput
from abtui.core.events import Event, EventKind
from abtui.measure.alternate import (
    Alternation,
    Stretches,
    Verdicts,
    drive,
    parse_alternate,
    plan_steps,
)
from abtui.profile import parse_profile
from abtui.reports.sequential import Design

PROFILE = """
[profile]
name = "t"
[[pairs]]
label = "A"
sender = "a"
receiver = "b"
target = "198.18.1.2"
[[pairs]]
label = "B"
sender = "c"
receiver = "d"
target = "198.18.2.2"
[[knobs]]
name = "rmem"
key = "net.ipv4.tcp_rmem"
values = ["4096 131072 6291456", "4096 8192 16384"]
pairs = ["A"]
"""
BIG, SMALL = "4096 131072 6291456", "4096 8192 16384"


def interval(pair: str, phase: int, bps: float, start: float, end: float,
             **extra: object) -> Event:
    return Event(EventKind.INTERVAL, pair=pair, data={
        "run": "r", "phase": phase, "bits_per_second": bps, "start": start, "end": end,
        "omitted": False, "straddles": False, **extra})


def closed(pair: str, phase: int, value: str) -> Event:
    return Event(EventKind.PHASE, pair=pair, data={"phase": phase, "config": {"rmem": value}})


def test_a_stretch_is_its_counted_intervals_bits_over_seconds() -> None:
    s = Stretches("rmem", (BIG, SMALL), ("A",), min_seconds=1.0)
    s(interval("A", 0, 10e9, 0, 1))
    s(interval("A", 0, 20e9, 1, 1.5))
    s(interval("A", 0, 99e9, 1.5, 2, straddles=True))  # counts in no stretch
    s(interval("A", 0, 99e9, 1.5, 2, omitted=True))
    s(interval("Z", 0, 99e9, 1.5, 2))  # a pair the knob does not touch
    s(closed("A", 0, BIG))
    s(interval("A", 1, 5e9, 0, 0.5))  # too short to be a sample (a stop cut it)
    s(closed("A", 1, SMALL))
    assert s.samples == {"A": {BIG: [pytest.approx(40e9 / 3)], SMALL: []}}
    assert s.count() == 0


def _feed(s: Stretches, values: list[tuple[str, float]]) -> None:
    for phase, (value, bps) in enumerate(values):
        s(interval("A", phase, bps, 0, 2))
        s(closed("A", phase, value))


def test_verdicts_decide_once_and_keep_the_decision() -> None:
    s = Stretches("rmem", (BIG, SMALL), ("A",), min_seconds=1.0)
    v = Verdicts(s, Design.make(10), min_effect=1.0)
    _feed(s, [(BIG, 10e9), (SMALL, 2e9)])
    assert v.new_lines() == []  # one stretch a side: no look yet
    _feed(s, [(BIG, 10.2e9), (SMALL, 2.1e9), (BIG, 9.9e9), (SMALL, 1.9e9)])
    lines = v.new_lines()
    assert len(lines) == 1 and lines[0].startswith(f"A: rmem={SMALL} vs {BIG}: Δ -")
    _feed(s, [(BIG, 10.1e9), (SMALL, 2.05e9)])
    assert v.new_lines() and v.all_significant
    decided = v.current()[("A", SMALL)]
    assert decided.significant and decided.n == 4
    _feed(s, [(BIG, 2e9), (SMALL, 10e9)] * 3)  # later stretches do not undo it
    assert v.current()[("A", SMALL)] is decided and v.new_lines() == []


async def test_drive_stops_by_the_rule_or_at_the_maximum() -> None:
    for rates, until, why, rounds in (((10e9, 2e9), True, "verdict", 2),
                                      ((10e9, 10e9), True, "max-runs", 5),
                                      ((10e9, 2e9), False, "max-runs", 5)):
        s = Stretches("rmem", (BIG, SMALL), ("A",), min_seconds=0.0)
        v = Verdicts(s, Design.make(5))
        flips: list[str] = []
        noise = iter([1.0, 1.01, 0.99, 1.02, 0.98, 1.0, 1.01, 0.99, 1.0, 1.02, 0.97] * 3)

        def set_knob(knob: str, value: str, s: Stretches = s, flips: list[str] = flips,
                     rates: tuple[float, float] = rates, noise: object = noise) -> None:
            held = BIG if value == SMALL else SMALL  # the stretch this flip ends
            phase = len(flips)
            s(interval("A", phase, rates[held == SMALL] * next(noise), 0, 1))  # type: ignore
            s(closed("A", phase, held))
            flips.append(value)

        said: list[str] = []
        got = await drive(set_knob, Alternation("rmem", (BIG, SMALL), 0.001, 5, until), v,
                          said.append)
        assert got == why and s.count() == rounds, (rates, until)
        assert flips[:3] == [SMALL, BIG, SMALL]
        assert all(line.startswith("A: rmem=") for line in said) and said


async def test_drive_ends_at_the_time_limit() -> None:
    s = Stretches("rmem", (BIG, SMALL), ("A",), min_seconds=0.0)
    flips: list[str] = []
    got = await drive(lambda k, v: flips.append(v), Alternation("rmem", (BIG, SMALL), 0.02),
                      Verdicts(s, Design.make(5)), print, duration=0.07)
    assert got == "time limit" and 2 <= len(flips) <= 4


def _args(*argv: str) -> argparse.Namespace:
    parser = argparse.ArgumentParser()
    add_arguments(parser)
    return parser.parse_args(["p.toml", "--headless", *argv])


def test_alternate_arguments() -> None:
    profile = parse_profile(PROFILE, "t.toml")
    alt = _alternation(_args("--alternate", f"rmem={SMALL}, {BIG}", "--every", "3",
                             "--until-verdict", "--max-runs", "6"), profile)
    assert alt == Alternation("rmem", (SMALL, BIG), 3.0, 6, True)
    assert _alternation(_args("--alternate", "rmem", "--every", "2"), profile) == \
        Alternation("rmem", (BIG, SMALL), 2.0, 20, False)
    assert _alternation(_args(), profile) is None
    assert _alternation(_args("--alternate", "rmem", "--max-runs", "3"), profile) == \
        Alternation("rmem", (BIG, SMALL), None, 3, False)  # per run, in plan mode
    for argv, piece in ((("--alternate", "rmem", "--every", "0"), "--every 0: give"),
                        (("--alternate", "wmem=1,2", "--every", "1"), "no knob 'wmem'"),
                        (("--alternate", "rmem=1", "--every", "1"), "two or more different"),
                        (("--alternate", "rmem=1,1", "--every", "1"), "two or more different"),
                        (("--alternate", "rmem", "--every", "1", "--max-runs", "1"),
                         "--max-runs 1"),
                        (("--until-verdict",), "--until-verdict goes with --alternate"),
                        (("--every", "3"), "--every goes with --alternate")):
        with pytest.raises(BadInput, match=piece):
            _alternation(_args(*argv), profile)
    assert parse_alternate("rmem=a,b,c", profile) == ("rmem", ("a", "b", "c"))
    steps = plan_steps(Alternation("rmem", ("a", "b", "c"), None, 2))
    assert [(s.config["rmem"], s.repetition) for s in steps] == [
        ("a", 1), ("b", 1), ("c", 1), ("a", 2), ("b", 2), ("c", 2)]


async def test_the_console_alternation_on_a_synthetic_stream() -> None:
    """LiveAlternation on the replay controller, whose throughput follows the knob (a 64 KiB
    tcp_wmem halves it): the verdict comes and the alternation ends by itself."""
    import asyncio

    from abtui.measure.alternate import (
        LiveAlternation,
        console_alternation,
        next_min_effect,
    )
    from abtui.measure.replay import ReplayController
    from abtui.measure.synthetic import synthetic_profile

    profile = synthetic_profile(pairs=2)
    ctl = ReplayController(profile, speed=400)
    await ctl.connect()
    await ctl.start("continuous")
    alt = console_alternation(profile, "tcp_wmem", ctl.configs["A"], every=0.05)
    assert alt.values == ("4096 16384 4194304", "4096 16384 65536") and alt.until_verdict
    changed: list[int] = []
    live = LiveAlternation(ctl, alt, 1.0, notify=lambda: changed.append(1))
    await live.start()
    for _ in range(200):
        if not live.running:
            break
        await asyncio.sleep(0.05)
    await ctl.stop()
    assert live.why == "verdict", live.lines()
    lines = live.lines()
    assert lines[0].startswith("alternating tcp_wmem every 0.05 s (") and "ended: verdict" \
        in lines[0]
    assert len(lines) == 3 and all(re.search(r"Δ -[45]\d\.\d%.* significant", x)
                                   for x in lines[1:]), lines
    assert changed
    live.set_min_effect(next_min_effect(1.0))
    assert "min effect 2%" in live.lines()[0]
    assert next_min_effect(10.0) == 0.5


async def test_the_console_alternation_stops_by_key() -> None:
    import asyncio

    from abtui.measure.alternate import LiveAlternation, console_alternation
    from abtui.measure.replay import ReplayController
    from abtui.measure.synthetic import synthetic_profile

    profile = synthetic_profile(pairs=1)
    ctl = ReplayController(profile, speed=400)
    await ctl.start("continuous")
    live = LiveAlternation(ctl, console_alternation(profile, "tso", {"tso": "off"}, 0.05), 1.0)
    assert live.alt.values == ("off", "on")
    await live.start()
    await asyncio.sleep(0.12)
    await live.stop()
    flips = ctl.configs["A"]["tso"]
    await asyncio.sleep(0.12)
    assert ctl.configs["A"]["tso"] == flips and live.why == "stopped" and not live.running
    await ctl.stop()
    with pytest.raises(BadInput, match="no knob"):
        console_alternation(parse_profile(PROFILE.split("[[knobs]]")[0], "t.toml"), None, {})


async def test_stopping_the_console_alternation_lets_a_flip_under_way_finish() -> None:
    """ctrl+a again while a flip is being applied (a tunnel takes seconds): the flip completes
    before the alternation ends. Cancelled halfway, the hosts could have the new value while
    the engine's phase never learnt it (its change left pending, every later interval counted
    nowhere, the knob keys cycling from a stale value)."""
    import asyncio

    from abtui.measure.alternate import LiveAlternation, console_alternation
    from abtui.measure.replay import ReplayController
    from abtui.measure.synthetic import synthetic_profile

    class SlowFlips(ReplayController):
        begun = done = 0

        async def set_knob(self, knob: str, value: str, pairs=None) -> None:  # type: ignore[no-untyped-def]
            self.begun += 1
            await asyncio.sleep(0.3)
            await super().set_knob(knob, value, pairs)
            self.done += 1

    profile = synthetic_profile(pairs=1)
    ctl = SlowFlips(profile, speed=400)
    await ctl.start("continuous")
    live = LiveAlternation(ctl, console_alternation(profile, "tso", {"tso": "off"}, 0.05), 1.0)
    await live.start()
    while ctl.begun < 2:  # the first flip after the base value is under way
        await asyncio.sleep(0.01)
    await live.stop()
    assert ctl.done == ctl.begun == 2 and ctl.configs["A"]["tso"] == "on"
    assert live.why == "stopped" and not live.running
    await asyncio.sleep(0.2)
    assert ctl.begun == 2  # and no flip after the stop
    await ctl.stop()
