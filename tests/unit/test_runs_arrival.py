"""A streamed line's arrival time is taken when it comes off the SSH channel, not when the run
gets round to reading it; the INTERVAL event carries it to the console, never to the journal."""

from __future__ import annotations

import asyncio
import time
from collections.abc import AsyncIterator

from abtui.core.events import Event, EventKind
from abtui.core.model import LinkState
from abtui.measure.run_base import RunHooks, RunSpec
from abtui.measure.run_lines import OutputLines as _Lines


class _Proc:
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


def test_the_arrival_time_is_not_journaled() -> None:
    ev = Event(EventKind.INTERVAL, 1.0, pair="A", data={"run": 1}, arrived=12.5)
    assert "arrived" not in ev.to_json() and "12.5" not in str(ev.to_json())
    assert Event.from_json(ev.to_json()).arrived is None
    assert Event.from_json(ev.to_json()) == ev  # the stamp is no part of what an event is


class _Link:
    alias = "h"
    state = LinkState.CONNECTED


class _Silent:
    """A client whose output never ends, even once it was told to (its link hangs)."""

    pgid = None
    link = _Link()

    async def lines(self) -> AsyncIterator[str]:
        yield "the first line"
        await asyncio.Event().wait()

    async def terminate(self, grace: float = 2.0) -> None:
        pass

    async def wait(self, timeout: float | None = None) -> int | None:
        return None


class _Parser:
    def feed(self, line: str) -> list:  # type: ignore[type-arg]
        return []

    def finish(self) -> None:
        return None


async def test_a_stopped_run_whose_client_never_ends_ends_within_a_bound(monkeypatch) -> None:  # type: ignore[no-untyped-def]
    """It used to wait for the client's output to end, spinning (a deadline already passed),
    for good: the run never ended, nor the console's start or stop waiting for it."""
    from abtui.core.model import Pair, TestOptions
    from abtui.measure import runs

    monkeypatch.setattr(runs, "STOP_WAIT_S", 0.5, raising=False)
    events: list[Event] = []
    spec = RunSpec(run_id="A-1", pair=Pair("A", "s", "r", "t"),
                   options=TestOptions(interval=0.1), target="t", seconds=60, port=5201)
    hooks = RunHooks(emit=events.append, parser_factory=lambda _f: _Parser(),  # type: ignore[arg-type,return-value]
                     phase_for=lambda *_: (0, False))
    run = runs.PairRun(spec, _Link(), _Link(), hooks)  # type: ignore[arg-type]
    run._client = _Silent()  # type: ignore[assignment]
    lines = run._client_lines = _Lines(run._client)  # type: ignore[arg-type]
    reads = 0
    get = lines.get

    async def counted(timeout: float | None) -> str | None:
        nonlocal reads
        reads += 1
        return await get(timeout)

    lines.get = counted  # type: ignore[method-assign]
    streaming = asyncio.ensure_future(run.stream())
    await asyncio.sleep(0.1)
    await run.stop()
    done, _ = await asyncio.wait({streaming}, timeout=5)
    assert done and await streaming == "stopped"
    assert [e.data["status"] for e in events if e.kind is EventKind.RUN_END] == ["stopped"]
    assert reads < 10  # it waited for the output; it did not spin on a passed deadline
