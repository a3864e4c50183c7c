"""What a run samples beside iperf3: ping replies, watches (sysctls, commands) and host CPU
(abtui.measure.run.cpu).

Each sampler is a task of the run's own, turning what a host prints into PING, WATCH and CPU
events; a watch or CPU sample that fails is reported once and its sampler goes on. A part of
a run (abtui.measure.run.pair.PairRun) that owns these tasks; it never holds up the interval
reader (abtui.measure.run.reader).
"""

from __future__ import annotations

import asyncio
import contextlib
import fnmatch
import time
from collections.abc import Callable
from typing import TYPE_CHECKING

from abtui.core import events
from abtui.core.errors import RemoteError
from abtui.core.model import LinkState, PingReply, PingSummary, Watch
from abtui.remote.iperf_cmd import (
    ARMED_MARK,
    interrupt_group,
    parse_clock,
    sample_command,
    sysctl_names_command,
    sysctl_values_command,
    ungathered,
)
from abtui.remote.link import HostLink
from abtui.remote.streams import RemoteProcess

if TYPE_CHECKING:  # types only: the objects are handed in by their owner
    from abtui.measure.ports import PingOutcome
    from abtui.measure.run.context import ProfileSpec, RunContext
    from abtui.measure.run.cpu import CpuSampler
    from abtui.measure.run.profiler import CounterSampler, ProfileSampler
    from abtui.measure.run.traffic import CountersFor, LinkCounterSampler

    CpuSamplerFactory = Callable[[RunContext, HostLink, str, float], CpuSampler]
    LinkSamplerFactory = Callable[[RunContext, CountersFor, float], LinkCounterSampler]
    Profilers = tuple[Callable[[RunContext, HostLink, ProfileSpec], ProfileSampler],
                      Callable[[RunContext, HostLink, ProfileSpec], CounterSampler]]

# Host CPU is sampled at the run's interval, never more often than this.
CPU_MIN_PERIOD = 1.0
# How long a release waits for the profile loops' start-up at most (a TCG guest's perf reads
# its symbols in a few seconds)
PROFILE_READY_S = 15.0


class RunSamplers:
    """The samplers of one run, and their tasks; see the module docstring."""

    def __init__(self, ctx: RunContext, cpu_sampler: CpuSamplerFactory,
                 profilers: Profilers | None = None,
                 link_sampler: LinkSamplerFactory | None = None) -> None:
        self.ctx = ctx
        self._cpu_sampler = cpu_sampler  # the run's (run.cpu.CpuSampler), handed in by it
        # the run's profile and counters samplers (run.profiler), handed in by it
        self._profilers = profilers
        # the run's data-link counters (run.traffic.LinkCounterSampler), handed in by it
        self._link_sampler = link_sampler
        self.spec = ctx.spec
        self.sender = ctx.sender
        self.receiver = ctx.receiver
        self._ping: RemoteProcess[HostLink] | None = None
        self._ping_task: asyncio.Task[PingOutcome] | None = None
        self._tasks: list[asyncio.Task[None]] = []  # watches and host CPU
        self._profiles: list[ProfileSampler] = []  # started ahead of the release
        self._counters: list[CounterSampler] = []  # likewise: their samples kept from it on
        self._profile_tasks: list[asyncio.Task[None]] = []
        self._profiles_started = False

    def start(self, ping: RemoteProcess[HostLink] | None, idle: list[PingReply],
              gathered: bool = False) -> None:
        """The run is released: the replies of an idle-link ping out, the armed ping (when
        there is one; `gathered`: its lines gathered on the host) read, the watches and the
        host CPU sampled until `cancel`."""
        loop = asyncio.get_running_loop()
        if ping is not None:
            self._ping = ping
            self._ping_task = loop.create_task(self._ping_loop(ping, gathered))
        for reply in idle:
            self.ctx.event(events.Ping(run=self.spec.run_id,
                                       phase=self.ctx.phase(time.time(), 0.0)[0],
                                       seq=reply.seq, rtt_ms=reply.rtt_ms))
        for watch in self.spec.watches:
            link = self.sender if watch.role.value == "sender" else self.receiver
            self._tasks.append(loop.create_task(self.sample_watch(watch, link)))
        period = max(self.spec.options.interval, CPU_MIN_PERIOD)
        if self.spec.counters_for is not None and self._link_sampler is not None:
            counters = self._link_sampler(self.ctx, self.spec.counters_for, period)
            self._tasks.append(loop.create_task(counters.run()))
        links = {link.alias: link for link in (self.sender, self.receiver)}
        for alias, link in links.items():
            command = self.spec.cpu_commands.get(alias)
            if command:
                sampler = self._cpu_sampler(self.ctx, link, command, period)
                self._tasks.append(loop.create_task(sampler.run()))
        self.start_profiles()
        released = time.time()
        for profiler in self._profiles:
            profiler.since = released
        for counter in self._counters:
            counter.since = released

    def start_profiles(self) -> None:
        """The hosts' profile loops and their counters loops started (once), ahead of the
        release: see `profiles_ready` (a loop's start, its SSH channel and shell, is not the
        run's to pay)."""
        if self._profiles_started or self._profilers is None:
            return
        self._profiles_started = True
        loop = asyncio.get_running_loop()
        links = {link.alias: link for link in (self.sender, self.receiver)}
        for alias, link in links.items():
            profile = self.spec.profile_commands.get(alias)
            if profile is not None:
                sampler = self._profilers[0](self.ctx, link, profile)
                self._profiles.append(sampler)
                self._profile_tasks.append(loop.create_task(sampler.run()))
                self._tasks.append(self._profile_tasks[-1])
            if profile is not None and profile.counters:  # its start-up outside the run too
                counter = self._profilers[1](self.ctx, link, profile)
                self._counters.append(counter)
                self._tasks.append(loop.create_task(counter.run()))

    async def profiles_ready(self, timeout: float = PROFILE_READY_S) -> None:
        """Until every profile loop is through perf's start-up (or gave up, or `timeout`
        passed): the traffic released after it does not pay for that start-up."""
        if not self._profiles:
            return
        with contextlib.suppress(TimeoutError):
            await asyncio.wait_for(asyncio.gather(*(p.ready.wait() for p in self._profiles)),
                                   timeout)

    async def stop_samples(self) -> None:
        """The watches and host CPU end (the run is being cleaned up), the host CPU's loops
        on the hosts too; the profiles first fold what they recorded (bounded)."""
        ahead = set(self._profile_tasks)
        for task in self._tasks:
            if task not in ahead:  # nothing else samples the fold's CPU
                task.cancel()
        if self._profiles:
            await asyncio.gather(*(p.finish() for p in self._profiles))
        self._cancel_samples()
        await asyncio.gather(*self._tasks, return_exceptions=True)

    def _cancel_samples(self) -> None:
        for task in self._tasks:
            task.cancel()

    def cancel(self) -> None:
        """Every task of the samplers ends, the ping reader too."""
        self._cancel_samples()
        if self._ping_task is not None and not self._ping_task.done():
            self._ping_task.cancel()

    # ---- ping and watches ---------------------------------------------------------------
    async def _ping_loop(self, ping: RemoteProcess[HostLink], gathered: bool) -> PingOutcome:
        """The armed ping's replies, each a PING event dated and phased by when it came (a
        gathered line: when its batch came, less its age), handed on from the SSH channel's
        own callback (RemoteProcess.follow: no task wakes per reply); its outcome once its
        output ends."""
        assert self.ctx.parsers.ping is not None
        parser = self.ctx.parsers.ping()
        armed = [ARMED_MARK, "clock"]  # what the armed command prints before ping's lines

        def take(lines: list[str]) -> None:
            came = time.time()
            for line in lines:
                if armed and (line == ARMED_MARK or parse_clock(line) is not None):
                    armed.pop()
                    continue
                for age, text in ungathered(line) if gathered else ((0.0, line),):
                    when = came - age
                    for reply in parser.feed(text):
                        phase, _ = self.ctx.phase(when, 0.0)
                        self.ctx.event(events.Ping(run=self.spec.run_id, phase=phase,
                                                   seq=reply.seq, rtt_ms=reply.rtt_ms), t=when)

        await ping.follow(take)
        return parser.finish()

    async def finish_ping(self, idle: PingSummary | None) -> PingSummary | None:
        """The ping's summary: the armed ping's, interrupted now; else the idle link's."""
        if self._ping is None or self._ping_task is None:
            return idle
        if self._ping.pgid is not None and self.sender.state is LinkState.CONNECTED:
            # INT makes ping print its summary; read it before the channel closes
            with contextlib.suppress(RemoteError):
                await self.sender.run(interrupt_group(self._ping.pgid))
        try:
            result = await asyncio.wait_for(self._ping_task, 3.0)
        except (TimeoutError, Exception):
            return None
        return result.summary

    async def sample_watch(self, watch: Watch, link: HostLink) -> None:
        """Sample a watch every `interval` s; a sysctl with `*` is one series per match, a
        command printing `<series> <number>` lines one series per line."""
        complained = False
        names: list[str] | None = None
        while True:
            await asyncio.sleep(watch.interval)
            try:
                if watch.sysctl and "*" in watch.sysctl:
                    if names is None:
                        names = await self._sysctl_names(link, watch.sysctl)
                    if not names:
                        raise RemoteError(link.alias, f"no sysctl matches {watch.sysctl}")
                    out = await link.check(sysctl_values_command(names),
                                           timeout=max(2.0, watch.interval))
                    samples = list(zip((f"{watch.name}:{n}" for n in names),
                                       out.splitlines(), strict=False))
                else:
                    out = await link.check(sample_command(watch.sysctl, watch.command),
                                           timeout=max(2.0, watch.interval))
                    samples = watch_samples(watch.name, out)
            except RemoteError as exc:
                if not complained:
                    self.ctx.event(events.Error(message=f"watch {watch.name}: {exc.reason}"),
                                host=link.alias)
                    complained = True
                continue
            for name, text in samples:
                self.ctx.event(events.WatchSampled(run=self.spec.run_id, name=name,
                                                value=_number(text.strip())),
                               host=link.alias)

    @staticmethod
    async def _sysctl_names(link: HostLink, pattern: str) -> list[str]:
        listed = await link.check(sysctl_names_command())
        return sorted(n for n in listed.split() if fnmatch.fnmatchcase(n, pattern))


def watch_samples(name: str, out: str) -> list[tuple[str, str]]:
    """A command watch's output as (series, value) samples: lines of `<series> <number>`
    (e.g. one per interrupt vector) are a series each, `name:<series>`; anything else is
    the watch's one value."""
    lines = [ln.split() for ln in out.strip().splitlines() if ln.strip()]
    if lines and all(len(parts) == 2 and isinstance(_number(parts[1]), float)
                     for parts in lines):
        return sorted((f"{name}:{parts[0]}", parts[1]) for parts in lines)
    return [(name, out.strip())]


def _number(text: str) -> float | str:
    try:
        return float(text)
    except ValueError:
        return text
