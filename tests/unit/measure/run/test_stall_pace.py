"""A stream is stalled after STALL_INTERVALS of its own intervals without one, at the pace its
intervals really come: a guest on an instruction-counted clock counts them in guest seconds,
which run slower than the machine's under load (the lab's WireGuard alternation lost 1 run in
20 as "stalled" that way). On a host on the machine's clock the window is unchanged."""

from __future__ import annotations

import asyncio
from types import SimpleNamespace

from abtui.core.events import Event
from abtui.core.model import Pair
from abtui.core.model import TestOptions as Options
from abtui.measure.ports import default_parser_factory
from abtui.measure.run.context import RunContext, RunParsers, RunSpec
from abtui.measure.run.reader import STALL_INTERVALS, IntervalReader
from tests.unit.measure.run.owner import Owner

STEP = 0.1  # the run's interval, seconds of its own clock

HEAD = ["Connecting to host 198.18.1.2, port 5201",
        "[  5] local 198.18.1.1 port 40000 connected to 198.18.1.2 port 5201",
        "[ ID] Interval           Transfer     Bitrate         Retr  Cwnd"]


def _interval(k: int) -> str:
    return f"[  5]   {k * STEP:.2f}-{(k + 1) * STEP:.2f}   sec  1.00 MBytes  83.9 Mbits/sec" \
           f"    0   1.00 MBytes       "


class _Paced:
    """A client's lines: the header at once, then one interval every `gap` wall seconds for
    `count` intervals, then nothing (a stall)."""

    def __init__(self, gap: float, count: int) -> None:
        self.lines = [*HEAD, *(_interval(k) for k in range(count))]
        self.gap = gap
        self.arrived: float | None = None

    async def get(self, timeout: float | None) -> str | None:
        if not self.lines:
            await asyncio.sleep(timeout or 0)
            raise TimeoutError
        wait = self.gap if self.lines[0].startswith("[  5]   ") else 0.0
        if timeout is not None and wait > timeout:
            await asyncio.sleep(timeout)
            raise TimeoutError
        await asyncio.sleep(wait)
        return self.lines.pop(0)


def _reader() -> tuple[IntervalReader, list[Event]]:
    got: list[Event] = []
    spec = RunSpec(run_id="A-1", pair=Pair("A", "s", "r", "t"),
                   options=Options(interval=STEP), target="t", seconds=10, port=5201)
    link = SimpleNamespace(alias="s")
    ctx = RunContext(spec, link, link,  # type: ignore[arg-type]
                     Owner(got.append, lambda _l, _r, _d: (0, False)),
                     RunParsers(default_parser_factory()))
    return IntervalReader(ctx), got


async def test_intervals_at_a_slow_clock_s_pace_are_not_a_stall() -> None:
    """Each 0.1 s interval of the run's clock takes 0.5 s of the machine's: five times slower
    than three intervals' window on the machine's clock allows; every interval is read, and
    only the silence after the last is a stall."""
    reader, got = _reader()
    lines = _Paced(gap=5 * STEP, count=6)
    ended = await asyncio.wait_for(reader.read_client(lines), 30)  # type: ignore[arg-type]
    assert ended is False and reader.stalled
    assert len(got) == 6, [e.payload for e in got]
    assert 4.0 <= reader.pace <= 6.5, reader.pace


async def test_on_the_machine_s_clock_the_window_is_three_intervals() -> None:
    """Intervals at their own pace, then silence: stalled after about STALL_INTERVALS
    intervals, as before (the pace stays 1)."""
    reader, got = _reader()
    lines = _Paced(gap=STEP / 2, count=4)
    loop = asyncio.get_running_loop()
    began = loop.time()
    await asyncio.wait_for(reader.read_client(lines), 30)  # type: ignore[arg-type]
    took = loop.time() - began
    assert reader.stalled and len(got) == 4 and reader.pace == 1.0
    # the four intervals, then the window; a second more for a busy machine
    assert took < 4 * (STEP / 2) + STALL_INTERVALS * STEP + 1.0, took
