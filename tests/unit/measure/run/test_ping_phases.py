"""A gathered ping's replies (abtui.remote.iperf_cmd.gathered: held on the host and sent a
second at a time, each with its age) are dated and phased each by its own moment, never by
the moment its batch crossed the link: a batch that straddles a flip splits across the two
phases as the replies were sent."""

from __future__ import annotations

import asyncio
import itertools
import time
from collections.abc import AsyncIterator
from pathlib import Path
from types import SimpleNamespace

import pytest

from abtui.core.events import Event, EventKind
from abtui.core.model import LinkState, Pair
from abtui.core.model import TestOptions as Options
from abtui.measure.run.context import RunContext, RunParsers, RunSpec
from abtui.measure.run.cpu import CpuSampler
from abtui.measure.run.sampling import RunSamplers
from abtui.parse import PingParser
from abtui.remote.iperf_cmd import ARMED_MARK, GATHER_SEP
from tests.unit.measure.run.fake_feed import FeedsLines
from tests.unit.measure.run.owner import Owner

PING = Path(__file__).parents[3] / "fixtures" / "ping" / "iputils.txt"
AGES_US = [900_000, 700_000, 500_000, 300_000, 100_000]  # the five replies' ages when sent


class _Batch(FeedsLines):
    """The armed ping's marks, then its header and five replies in one gathered batch, then
    its summary."""

    def __init__(self) -> None:
        self.link = SimpleNamespace(alias="s", state=LinkState.CONNECTED)
        text = PING.read_text().splitlines()
        self.head, self.replies, self.tail = text[0], text[1:6], text[6:]

    async def lines(self) -> AsyncIterator[str]:
        yield ARMED_MARK
        yield "1700000000.000001"
        yield f"0 {self.head}"
        yield GATHER_SEP.join(f"{age} {line}" for age, line in
                              zip(AGES_US, self.replies, strict=True))
        for line in self.tail:
            yield f"0 {line}"


async def test_a_batch_straddling_a_flip_is_phased_reply_by_reply() -> None:
    got: list[Event] = []
    flip = 0.0  # set as the batch is handed on: 0.4 s before that
    asked: list[float] = []

    def phase_for(_label: str, when: float, _d: float) -> tuple[int, bool]:
        asked.append(when)
        return (0 if when < flip else 1, False)

    spec = RunSpec(run_id="A-1", pair=Pair("A", "s", "r", "t"), options=Options(),
                   target="t", seconds=10, port=5201)
    fake = _Batch()
    ctx = RunContext(spec, fake.link, fake.link,  # type: ignore[arg-type]
                     Owner(got.append, phase_for),
                     RunParsers(lambda _f: None, PingParser))  # type: ignore[arg-type,return-value]
    samplers = RunSamplers(ctx, CpuSampler)
    # the flip 0.4 s before the batch leaves: computed when the fake hands it on
    original = fake.lines

    async def lines() -> AsyncIterator[str]:
        nonlocal flip
        async for line in original():
            if GATHER_SEP in line:
                flip = time.time() - 0.4
            yield line

    fake.lines = lines  # type: ignore[method-assign]
    samplers.start(fake, [], gathered=True)  # type: ignore[arg-type]
    outcome = await asyncio.wait_for(samplers._ping_task, 2.0)  # type: ignore[arg-type]
    pings = [e for e in got if e.kind is EventKind.PING]
    assert [e.payload.seq for e in pings] == [1, 2, 3, 4, 5]
    # each reply dated by its own age: 0.2 s apart as sent, not all at the batch's arrival
    gaps = [b.t - a.t for a, b in itertools.pairwise(pings)]
    assert gaps == pytest.approx([0.2] * 4, abs=1e-6)
    assert [e.payload.phase for e in pings] == [0, 0, 0, 1, 1]
    assert asked[:5] == [e.t for e in pings]  # each phased at the moment it is dated with
    assert outcome.summary is not None and outcome.summary.received == 5
