"""A host's profile during a run: the host's profiling loop (abtui.remote.profiling) started
with the run's samplers, its windows turned into PROFILE events as they come.

The loop is started before the run's traffic is released, which waits (a few seconds at most)
until perf is through its start-up: reading every running process and the kernel's symbols costs
a fraction of a CPU-second, which a run's first second would otherwise pay (measured: 23 % of a
5-s run's throughput on the lab, tests/bench/bench_why.py). Windows that ended before the
release are dropped. The loop folds its samples on the host, one window a second; each window
becomes an event dated on the controller's clock (the host's clock shifted by the smallest
arrival-minus-window-end seen so far: the link's delay is never added twice). A host whose loop
says it gives no profile (perf missing, not permitted) says so once per run; the rest goes on.
"""

from __future__ import annotations

import asyncio
import contextlib
import math
import time
from collections.abc import Callable
from typing import TYPE_CHECKING

from abtui.core import events
from abtui.core.errors import RemoteError
from abtui.core.folded import pack
from abtui.remote.counters import CounterStream
from abtui.remote.link import HostLink
from abtui.remote.profiling import FoldedWindow, ProfileStream

if TYPE_CHECKING:  # types only: the objects are handed in by their owner
    from abtui.measure.run.context import ProfileSpec, RunContext

END_GRACE_S = 1.0


async def follow_loop(ctx: RunContext, link: HostLink, command: str, what: str,
                      take: Callable[[list[str]], None]) -> str | None:
    """A host loop of the run's started, its lines handed to `take` until it ends or the
    run cancels the task, then ended for certain; why it could not start, or None."""
    try:
        proc = await ctx.start_process(link, command, what)
    except RemoteError as exc:
        return exc.reason
    try:
        await proc.follow(take)
    finally:
        with contextlib.suppress(Exception):
            await ctx.end_process(proc)
    return None


class ProfileSampler:
    """One host's profile loop for one run; see the module docstring."""

    def __init__(self, ctx: RunContext, link: HostLink, spec: ProfileSpec) -> None:
        self.ctx = ctx
        self.link = link
        self.spec = spec
        self.role = "sender" if link is ctx.sender else "receiver"
        self._stream = ProfileStream()
        self._offset = math.inf  # controller clock - host clock, at most (delay included)
        self._said = False
        # set once perf is through its start-up, or said it gives no profile, or ended: the
        # run releases its traffic after it (RunSamplers.profiles_ready)
        self.ready = asyncio.Event()
        # the run's release (controller clock): a window that ended before it held no traffic
        self.since: float | None = None

    async def run(self) -> None:
        """Read the loop until it ends or the run cancels this task; the loop is ended."""
        try:
            refused = await follow_loop(self.ctx, self.link, self.spec.command, "profile",
                                        self._take)
        finally:
            self.ready.set()
        if refused or self._stream.refused:
            self._say(refused or self._stream.refused or "")

    def _take(self, lines: list[str]) -> None:
        came = time.time()
        for line in lines:
            window = self._stream.feed(line)
            if window is not None:
                self._window(window, came)
        if self._stream.ready or self._stream.refused:
            self.ready.set()

    def _window(self, window: FoldedWindow, came: float) -> None:
        self._offset = min(self._offset, came - window.end)
        start, end = window.start + self._offset, window.end + self._offset
        if self.since is None or end < self.since:
            return  # all of it before the traffic was released
        # no phase of its own: a window is placed in a stretch by its time (measure.why_book)
        self.ctx.event(events.Profiled(
            run=self.ctx.spec.run_id, role=self.role, start=start, end=end,
            event=self._stream.event or "cpu-clock", hz=self.spec.hz, samples=window.samples,
            stacks=pack(window.stacks), shared=self.spec.shared), host=self.link.alias, t=end)

    def _say(self, reason: str) -> None:
        if not self._said:
            self._said = True
            self.ctx.event(events.Error(message=f"profile: {reason}"), host=self.link.alias)


class CounterSampler:
    """One host's counters loop for one run (abtui.remote.counters), each sample a COUNTERS
    event dated on the controller's clock as the profile's windows are. A loop that prints
    nothing (no /proc: not Linux) gives no event and says nothing: the profile says enough."""

    def __init__(self, ctx: RunContext, link: HostLink, spec: ProfileSpec) -> None:
        self.ctx = ctx
        self.link = link
        self.spec = spec
        self.role = "sender" if link is ctx.sender else "receiver"
        self._stream = CounterStream()
        self._offset = math.inf

    async def run(self) -> None:
        assert self.spec.counters is not None
        await follow_loop(self.ctx, self.link, self.spec.counters, "counters", self._take)

    def _take(self, lines: list[str]) -> None:
        came = time.time()
        for line in lines:
            got = self._stream.feed(line)
            if got is None:
                continue
            clock, values = got
            self._offset = min(self._offset, came - clock)
            at = clock + self._offset
            self.ctx.event(events.CountersSampled(run=self.ctx.spec.run_id, role=self.role,
                                                  at=at, values=pack(values),
                                                  shared=self.spec.shared),
                           host=self.link.alias, t=at)
