"""A bisection in a task (abtui.measure.bisect.live, as the console runs it) on a live synthetic
stream whose throughput follows the knob (a 64 KiB tcp_wmem halves it, 1 MiB does not change
it), over two pairs crossed over (`--design crossover`): at every boundary both pairs switch
together, each to its own value, and one call per step is made on the two as one (`A+B`)."""

from __future__ import annotations

import asyncio
import dataclasses

from abtui.core.events import AnyEvent, EventKind, KnobChanged, Mark
from abtui.core.model import Profile
from abtui.measure.bisect.live import LiveBisection
from abtui.measure.bisect.run import BisectPlan
from abtui.measure.replay.controller import ReplayController
from abtui.measure.replay.synthetic import synthetic_profile

BIG, MID, SMALL = "4096 16384 4194304", "4096 16384 1048576", "4096 16384 65536"


def three_sizes(pairs: int) -> Profile:
    """The synthetic profile, its tcp_wmem with three candidates: BIG, MID (the same
    throughput) and SMALL (half)."""
    prof = synthetic_profile(pairs)
    knobs = [dataclasses.replace(k, values=(BIG, MID, SMALL)) if k.name == "tcp_wmem" else k
             for k in prof.knobs]
    return dataclasses.replace(prof, knobs=knobs)


async def test_a_crossover_bisection_crosses_the_two_pairs_and_finds_the_first_bad() -> None:
    profile = three_sizes(2)
    ctl = ReplayController(profile, speed=100)
    seen: list[AnyEvent] = []
    ctl.subscribe(seen.append)
    await ctl.connect()
    await ctl.start("continuous")
    plan = BisectPlan("tcp_wmem", (BIG, MID, SMALL), 20.0, max_blocks=8, every=0.05,
                      design="crossover")
    said: list[str] = []
    live = LiveBisection(ctl, profile, plan, said.append)
    live.start()
    for _ in range(1500):
        if not live.running:
            break
        await asyncio.sleep(0.02)
    await ctl.shutdown()
    assert live.why == "first bad", said
    rows = [e.payload.bisect for e in seen
            if isinstance(e.payload, Mark) and isinstance(e.payload.bisect, dict)]
    assert rows[0]["plan"]["design"] == "crossover"
    steps = [r for r in rows if "verdict" in r]
    assert [(r["candidate"], r["verdict"], r["pair"]) for r in steps] == [
        (MID, "good", "A+B"), (SMALL, "bad", "A+B")]
    assert rows[-1]["line"].startswith(f"first bad: {SMALL} (family-wise error ≤ 5 % over 2 ")
    # every change sets both pairs, each its own value: one pair on the good build, the other
    # on the candidate, in every stretch
    knobs = [e.payload for e in seen if e.kind is EventKind.KNOB]
    assert all(isinstance(k, KnobChanged) and len(k.pairs) == 1 for k in knobs)
    flips = [(knobs[i], knobs[i + 1]) for i in range(0, len(knobs) - 1, 2)]
    assert len(flips) >= 8
    for a, b in flips:
        assert {a.pairs[0], b.pairs[0]} == {"A", "B"} and a.value != b.value, (a, b)
