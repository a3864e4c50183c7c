"""A host's CPU time during a run, read from one long remote loop rather than a round trip
a sample.

The loop (abtui.remote.iperf_cmd.cpu_loop_command) prints the host's CPU counters for every
newline it reads. The sampler writes one on its beat, from a timer, and takes the answer in
the SSH channel's own callback (RemoteProcess.feed): a sample costs one write and one packet
read, no task woken, no control-shell round trip (its lock, its markers, its exit status).
The loop is ended at the end of the run (end of file on its stdin, then its process group
for certain); a loop that ends early (a link lost) is started again on the next beat.
"""

from __future__ import annotations

import asyncio
import contextlib
import time
from typing import TYPE_CHECKING

from abtui.core import events
from abtui.core.errors import RemoteError
from abtui.core.model import LinkState
from abtui.parse.cputimes import CpuTimes, parse_cpu_times, since
from abtui.remote.iperf_cmd import CPU_END_MARK, cpu_loop_command
from abtui.remote.link import HostLink
from abtui.remote.streams import RemoteProcess

if TYPE_CHECKING:  # types only: the objects are handed in by their owner
    from abtui.measure.run.context import RunContext

# How long the loop is given to end by itself (end of file on stdin) before it is killed.
END_GRACE_S = 1.0


class CpuSampler:
    """One host's CPU time every `period` s: a CPU event with what each state gained since
    the previous sample (the first one is only the base); a failure is reported once and
    the sampler goes on.

    The base is taken at the release, the samples half a period off that beat: iperf3's
    intervals come on the release's beat, and the four samples a second of a 2-pair run
    came with them, on the console's path from an interval's arrival to its frame (0.3-0.8
    ms of its CPU each time, tripled in wall time on a loaded machine)."""

    def __init__(self, ctx: RunContext, link: HostLink, command: str, period: float) -> None:
        self.ctx = ctx
        self.link = link
        self.command = command
        self.period = period
        self.role = "sender" if link is ctx.sender else "receiver"
        self._before: CpuTimes | None = None
        self._complained = False
        self._proc: RemoteProcess[HostLink] | None = None
        self._answer: list[str] = []  # the lines of the answer coming in
        self._asked: float | None = None  # loop.time() of the request not answered yet
        self._answered = False  # the loop running now answered at least once
        self._timer: asyncio.TimerHandle | None = None
        self._due = 0.0

    async def run(self) -> None:
        """Sample until cancelled; the loop on the host is ended on the way out."""
        loop = asyncio.get_running_loop()
        self._due = loop.time() - self.period / 2  # the next beat: half a period after the base
        try:
            while True:
                await self._one_loop()
                self._before = None  # a new loop's first answer is a base again
                if self._due <= loop.time():
                    self._due = max(self._due + self.period, loop.time())
                await asyncio.sleep(self._due - loop.time())
        finally:
            self._stop_timer()
            if self._proc is not None:
                await self._end(self._proc)

    async def _one_loop(self) -> None:
        """The remote loop started and read until it ends (a failure said once)."""
        start = asyncio.ensure_future(self.ctx.start_process(
            self.link, cpu_loop_command(self.command), "host CPU"))
        try:
            proc = await asyncio.shield(start)
        except RemoteError as exc:
            self._complain(exc.reason)
            return
        except asyncio.CancelledError:  # the run ends meanwhile: what started is ended too
            with contextlib.suppress(Exception):
                await self._end(await start)
            raise
        self._proc, self._answered, self._asked, self._answer = proc, False, None, []
        feed = proc.feed(self._take)
        self._tick()  # the base, at once
        try:
            await feed.until_end()
        finally:
            self._stop_timer()
        if not self._answered and self.link.state is LinkState.CONNECTED:
            # (a lost link is said by the next start, with the link's own reason)
            self._complain(proc.stderr.splitlines()[-1] if proc.stderr.strip()
                           else "its CPU time counters were not readable")
        await self._end(proc)

    def _tick(self) -> None:
        """The beat: a sample asked for, unless the last one is still unanswered (a slow
        link: not made up for with a burst; said once past the timeout)."""
        loop = asyncio.get_running_loop()
        now = loop.time()
        if self._asked is None:
            self._asked = now
            with contextlib.suppress(Exception):  # a closing channel: its feed ends
                if self._proc is not None:
                    self._proc.write("\n")
        elif now - self._asked >= max(2.0, self.period):
            self._complain(f"no answer in {max(2.0, self.period):g} s")
            self._before = None
        self._due = max(self._due + self.period, now)
        self._timer = loop.call_at(self._due, self._tick)

    def _take(self, lines: list[str]) -> None:
        """Lines of the loop's output (from the channel's callback): an answer once whole."""
        for line in lines:
            if line != CPU_END_MARK:
                self._answer.append(line)
                continue
            text, self._answer, self._asked = "\n".join(self._answer), [], None
            self._answered = True
            self._sample(text)

    def _sample(self, text: str) -> None:
        now = parse_cpu_times(text)
        if now is None:
            said = [x for x in text.splitlines() if x.strip()]
            self._complain("its CPU time counters were not readable"
                           + (f": {said[-1].strip()}" if said else ""))
            self._before = None
            return
        got = since(self._before, now) if self._before is not None else None
        if got is not None:
            phase, straddles = self.ctx.phase(time.time(), self.period)
            self.ctx.event(events.Cpu(run=self.ctx.spec.run_id, role=self.role, phase=phase,
                                      straddles=straddles, total=got[0], cpus=got[1]),
                           host=self.link.alias)
        self._before = now

    def _complain(self, reason: str) -> None:
        if not self._complained:
            self.ctx.event(events.Error(message=f"host CPU: {reason}"), host=self.link.alias)
            self._complained = True

    def _stop_timer(self) -> None:
        if self._timer is not None:
            self._timer.cancel()
            self._timer = None

    async def _end(self, proc: RemoteProcess[HostLink]) -> None:
        """The loop ended: it stops at end of file on its stdin; what is left is killed."""
        with contextlib.suppress(Exception):
            proc.close_stdin()
        with contextlib.suppress(TimeoutError):
            await proc.wait(END_GRACE_S)
        await self.ctx.end_process(proc)
        self._proc = None
