"""A streamed line's arrival time is taken when it comes off the SSH channel, not when the run
gets round to reading it; the INTERVAL event carries it to the console, never to the journal."""

from __future__ import annotations

import asyncio
import time
from collections.abc import AsyncIterator

from abtui.core.events import Event, EventKind, IntervalMeasured
from abtui.core.model import LinkState
from abtui.measure.run.context import RunParsers, RunSpec
from abtui.parse import Iperf3Result
from abtui.remote.iperf_cmd import ARMED_MARK
from abtui.remote.lines import OutputLines as _Lines
from tests.unit.measure.run.fake_feed import FeedsLines
from tests.unit.measure.run.owner import Owner


class _Proc(FeedsLines):
    """Stands in for a RemoteProcess: two lines, 0.2 s apart, then the end."""

    async def lines(self) -> AsyncIterator[str]:
        yield "first"
        await asyncio.sleep(0.2)
        yield "second"


async def test_each_line_keeps_the_time_it_arrived() -> None:
    lines = _Lines(_Proc())  # type: ignore[arg-type]
    t0 = time.perf_counter()
    await asyncio.sleep(0.5)  # the reader is busy: both lines wait in the queue
    assert await lines.get(1.0) == "first"
    first = lines.arrived
    assert await lines.get(1.0) == "second"
    second = lines.arrived
    assert await lines.get(1.0) is None
    assert first is not None and second is not None
    assert t0 <= first < second < t0 + 0.45  # when they came, not when they were read
    assert second - first > 0.15


async def test_a_line_given_back_comes_first_with_its_arrival_time() -> None:
    """The clock read at release gives back a line that is no clock: it used to go to the
    end of the queue without its arrival time (out of order, and the next read failed)."""
    lines = _Lines(_Proc())  # type: ignore[arg-type]
    assert await lines.get(1.0) == "first"
    first = lines.arrived
    await asyncio.wait({lines.task}, timeout=1.0)  # "second" and the end are queued
    assert lines.task.done()
    lines.unget()
    assert await lines.get(1.0) == "first" and lines.arrived == first
    assert await lines.get(1.0) == "second"
    assert lines.arrived is not None and first is not None and lines.arrived > first
    assert await lines.get(1.0) is None


def test_the_arrival_time_is_not_journaled() -> None:
    ev = Event.of(IntervalMeasured.from_data({"run": 1}), 1.0, pair="A", arrived=12.5)
    assert "arrived" not in ev.to_json() and "12.5" not in str(ev.to_json())
    assert Event.from_json(ev.to_json()).arrived is None
    assert Event.from_json(ev.to_json()) == ev  # the stamp is no part of what an event is


class _Silent(FeedsLines):
    """A process whose output never ends, even once it was told to (its link hangs): the
    client says it is armed, then one line once released; the server that it listens."""

    pgid = None
    stderr = ""

    def __init__(self, link: _Link, first: list[str], then: list[str]) -> None:
        self.link = link
        self._first, self._then = first, then
        self._released = asyncio.Event()

    async def lines(self) -> AsyncIterator[str]:
        for line in self._first:
            yield line
        await self._released.wait()
        for line in self._then:
            yield line
        await asyncio.Event().wait()

    def write(self, data: str) -> None:
        self._released.set()

    async def terminate(self, grace: float = 2.0) -> None:
        pass

    async def wait(self, timeout: float | None = None) -> int | None:
        return None


class _Link:
    state = LinkState.CONNECTED

    def __init__(self, alias: str) -> None:
        self.alias = alias

    async def stream(self, command: str) -> _Silent:
        if " -s " in command:
            return _Silent(self, ["Server listening on 5201"], [])
        return _Silent(self, [ARMED_MARK], ["the first line"])


class _Parser:
    def feed(self, line: str) -> list:  # type: ignore[type-arg]
        return []

    def finish(self) -> Iperf3Result:
        return Iperf3Result()


async def test_a_stopped_run_whose_client_never_ends_ends_within_a_bound(monkeypatch) -> None:  # type: ignore[no-untyped-def]
    """It used to wait for the client's output to end, spinning (a deadline already passed),
    for good: the run never ended, nor the console's start or stop waiting for it."""
    from abtui.core.model import Pair, TestOptions
    from abtui.measure.run import pair as runs
    from abtui.measure.run import reader as run_reader

    monkeypatch.setattr(run_reader, "STOP_WAIT_S", 0.5)
    events: list[Event] = []
    spec = RunSpec(run_id="A-1", pair=Pair("A", "s", "r", "t"),
                   options=TestOptions(interval=0.1, ping=False), target="t", seconds=60,
                   port=5201)
    run = runs.PairRun(spec, _Link("s"), _Link("r"),  # type: ignore[arg-type]
                       Owner(events.append, lambda *_: (0, False)), RunParsers(
                           lambda _f: _Parser()))
    await run.prepare()
    run.release()
    assert await run.read_clock(1.0) is None  # "the first line" is no clock: left to parse
    lines = run.processes.client_lines
    assert lines is not None
    reads = 0
    waiting = asyncio.Event()  # the first line read, the run waits for more
    get = lines.get

    async def counted(timeout: float | None) -> str | None:
        nonlocal reads
        reads += 1
        if reads == 2:
            waiting.set()
        return await get(timeout)

    lines.get = counted  # type: ignore[method-assign]
    streaming = asyncio.ensure_future(run.stream())
    await asyncio.wait_for(waiting.wait(), 5)
    await run.stop()
    done, _ = await asyncio.wait({streaming}, timeout=5)
    assert done and await streaming == "stopped"
    assert [e.payload.status for e in events if e.kind is EventKind.RUN_END] == ["stopped"]
    assert reads < 10  # it waited for the output; it did not spin on a passed deadline
