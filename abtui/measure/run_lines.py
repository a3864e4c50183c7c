"""A streamed remote process's output, drained by a task of its own.

Every process a run streams (iperf3's client and server) is read this way: the channel is
always drained, so it never blocks, and the run waits on a queue with a timeout (a stall, a
stop) without disturbing the SSH channel's reader. Each line keeps the moment it arrived.
"""

from __future__ import annotations

import asyncio
import time
from collections import deque

from abtui.remote.link import HostLink
from abtui.remote.streams import RemoteProcess


class OutputLines:
    """A streamed process's stdout drained into a queue by a task of its own.

    Waiting on the queue with a timeout never disturbs the SSH channel's reader."""

    def __init__(self, proc: RemoteProcess[HostLink]) -> None:
        self.proc = proc
        self.queue: asyncio.Queue[str | None] = asyncio.Queue()
        self._arrivals: deque[float] = deque()  # perf_counter() of each queued line
        self.arrived: float | None = None  # ... of the line `get` returned last
        # False once nobody reads the lines any more (a listening server's reports): they are
        # still drained, so the channel never blocks, but not queued, so memory stays flat
        self.keep = True
        self._last: str | None = None  # the line `get` returned last
        self._back: tuple[str | None, float | None] | None = None  # a line given back
        self.task = asyncio.get_running_loop().create_task(self._pump())

    async def _pump(self) -> None:
        try:
            async for line in self.proc.lines():
                if self.keep:
                    self._arrivals.append(time.perf_counter())
                    self.queue.put_nowait(line)
        finally:
            self._arrivals.append(time.perf_counter())
            self.queue.put_nowait(None)

    def unget(self) -> None:
        """Give back the line `get` returned last: the next `get` returns it again, before
        any line queued since, with the moment it arrived."""
        self._back = (self._last, self.arrived)

    async def get(self, timeout: float | None) -> str | None:
        if self._back is not None:
            (line, self.arrived), self._back = self._back, None
            self._last = line
            return line
        line = self._last = await asyncio.wait_for(self.queue.get(), timeout)
        self.arrived = self._arrivals.popleft()
        return line
