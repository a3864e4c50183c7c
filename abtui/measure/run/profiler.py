"""A host's profile during a run: the host's profiling loop (abtui.remote.profiling) started
with the run's samplers, its windows turned into PROFILE events once the run is over.

The loop is started before the run's traffic is released, which waits (a few seconds at most)
until perf is through its start-up: reading every running process and the kernel's symbols costs
a fraction of a CPU-second, which a run's first second would otherwise pay (measured: 23 % of a
5-s run's throughput on the lab, tests/bench/bench_why.py). While the traffic flows only perf
record runs; when the run ends, `finish` closes the loop's stdin and the host folds the samples,
one window a second, outside the measured time (bounded by FOLD_WAIT_S). Windows that ended
before the release are dropped. Each window becomes an event dated on the controller's clock:
the host's clock shifted by the arrival of the loop's `@R` less the first sample's time (perf
is enabled just before `@R`; the link's delay is never added twice), or, failing that, the
smallest arrival-minus-window-end. A host whose loop says it gives no profile (perf missing, not
permitted) says so once per run; the rest goes on.
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
from abtui.remote.profiling import READY_MARK, FoldedWindow, ProfileStream
from abtui.remote.streams import RemoteProcess

if TYPE_CHECKING:  # types only: the objects are handed in by their owner
    from abtui.measure.run.context import ProfileSpec, RunContext

END_GRACE_S = 1.0
# How long a run's end waits for a host to fold its profile (an x86 host: 1-2 s; the one-CPU
# ARM guest under emulation, the machine at load 15: about 90 s for a 10-s run); then the loop
# is ended without its windows
FOLD_WAIT_S = 180.0


async def follow_loop(ctx: RunContext, link: HostLink, command: str, what: str,
                      take: Callable[[list[str]], None],
                      started: Callable[[RemoteProcess[HostLink]], None] | None = None,
                      ) -> str | None:
    """A host loop of the run's started (handed to `started`), its lines handed to `take`
    until it ends or the run cancels the task, then ended for certain; why it could not
    start, or None."""
    try:
        proc = await ctx.start_process(link, command, what)
    except RemoteError as exc:
        return exc.reason
    if started is not None:
        started(proc)
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
        self._ready_at: float | None = None  # when `@R` came (controller clock)
        self._proc: RemoteProcess[HostLink] | None = None
        self._done = asyncio.Event()
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
                                        self._take, started=self._started)
        finally:
            self.ready.set()
            self._done.set()
        if refused or self._stream.refused:
            self._say(refused or self._stream.refused or "")

    def _started(self, proc: RemoteProcess[HostLink]) -> None:
        self._proc = proc

    async def finish(self, timeout: float = FOLD_WAIT_S) -> None:
        """The run is over: the host stops recording and folds; until its windows are in (or
        `timeout` passed, or the loop ended without them)."""
        if self._proc is not None and not self._done.is_set():
            with contextlib.suppress(Exception):
                self._proc.close_stdin()
        with contextlib.suppress(TimeoutError):
            await asyncio.wait_for(self._done.wait(), timeout)

    def _take(self, lines: list[str]) -> None:
        came = time.time()
        for line in lines:
            window = self._stream.feed(line)
            if line == READY_MARK and self._ready_at is None:
                self._ready_at = came
            if window is not None:
                self._window(window, came)
        if self._stream.ready or self._stream.refused:
            self.ready.set()

    def _window(self, window: FoldedWindow, came: float) -> None:
        if self._stream.first is not None and self._ready_at is not None:
            # perf was enabled just before `@R` was printed: its first sample is no earlier
            self._offset = min(self._offset, self._ready_at - self._stream.first)
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
        # the run's release (controller clock): the loop starts ahead of it (with the profile
        # loops), its samples before it are only used to date the rest
        self.since: float | None = None

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
            if self.since is None or at < self.since:
                continue  # taken before the traffic was released
            self.ctx.event(events.CountersSampled(run=self.ctx.spec.run_id, role=self.role,
                                                  at=at, values=pack(values),
                                                  shared=self.spec.shared),
                           host=self.link.alias, t=at)
