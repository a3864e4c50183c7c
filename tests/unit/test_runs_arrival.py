"""A streamed line's arrival time is taken when it comes off the SSH channel, not when the run
gets round to reading it; the INTERVAL event carries it to the console, never to the journal."""

from __future__ import annotations

import asyncio
import time
from collections.abc import AsyncIterator

from abtui.core.events import Event, EventKind
from abtui.measure.runs import _Lines


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
