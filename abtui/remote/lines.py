"""A streamed remote process's output, queued as it comes off the SSH channel.

Every process a run streams (iperf3's client and server) is read this way: the channel is
always drained, so it never blocks, and the run waits on a queue with a timeout (a stall, a
stop) without disturbing the SSH channel's reader. Each line keeps the moment it arrived.
The lines are queued from the channel's own callback (RemoteProcess.feed): no task wakes to
move them, only the one that reads the queue.
"""

from __future__ import annotations

import asyncio
import time
from collections import deque

from abtui.remote.link import HostLink
from abtui.remote.streams import RemoteProcess


class OutputLines:
    """A streamed process's stdout queued as it arrives; `task` queues the end (None) once
    the stream ends, or once cancelled.

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
        self._feed = proc.feed(self._take)  # at once: a packet's lines stamped as it comes
        self.task = asyncio.get_running_loop().create_task(self._until_end())

    def _take(self, lines: list[str]) -> None:
        """The lines one packet carried: queued, each with the moment the packet came."""
        if self.keep:
            now = time.perf_counter()
            for line in lines:
                self._arrivals.append(now)
                self.queue.put_nowait(line)

    async def _until_end(self) -> None:
        try:
            await self._feed.until_end()
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
