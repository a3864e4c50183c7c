"""What a run samples beside iperf3: ping replies, watches (sysctls, commands) and host CPU.

Each sampler is a task of the run's own, turning what a host prints into PING, WATCH and CPU
events; a watch or CPU sample that fails is reported once and its sampler goes on. Kept apart
from the iperf3 streaming (abtui.measure.runs), which they never hold up.
"""

from __future__ import annotations

import asyncio
import contextlib
import fnmatch
import shlex
import time
from typing import Any

from abtui.core import events
from abtui.core.errors import RemoteError
from abtui.core.model import LinkState, Watch
from abtui.measure.run_base import RunBase
from abtui.measure.seams import ping_summary_of
from abtui.parse.cputimes import parse_cpu_times, since
from abtui.remote.iperf_cmd import ARMED_MARK, parse_clock, sample_command
from abtui.remote.link import HostLink

# Host CPU is sampled at the run's interval, never more often than this.
CPU_MIN_PERIOD = 1.0


class RunSampling(RunBase):
    """The samplers of one run; see the module docstring."""

    # ---- ping and watches ---------------------------------------------------------------
    async def _ping_loop(self) -> Any:
        assert self._ping is not None and self.hooks.ping_parser_factory is not None
        parser = self.hooks.ping_parser_factory()
        async for line in self._ping.lines():
            if line == ARMED_MARK or parse_clock(line) is not None:
                continue
            for reply in parser.feed(line):
                phase, _ = self.hooks.phase_for(self.label, time.time(), 0.0)
                self._event(events.Ping(run=self.spec.run_id, phase=phase, seq=reply.seq,
                                        rtt_ms=reply.rtt_ms))
        return parser.finish()

    async def _finish_ping(self) -> Any:
        if self._ping is None or self._ping_task is None:
            return self._idle_summary
        if self._ping.pgid is not None and self.sender.state is LinkState.CONNECTED:
            # INT makes ping print its summary; read it before the channel closes
            with contextlib.suppress(RemoteError):
                await self.sender.run(f"kill -INT -{int(self._ping.pgid)} 2>/dev/null; true")
        try:
            result = await asyncio.wait_for(self._ping_task, 3.0)
        except (TimeoutError, Exception):
            return None
        return ping_summary_of(result)

    def _start_watches(self) -> None:
        loop = asyncio.get_running_loop()
        for watch in self.spec.watches:
            link = self.sender if watch.role.value == "sender" else self.receiver
            self._watch_tasks.append(loop.create_task(self._watch_loop(watch, link)))

    async def _watch_loop(self, watch: Watch, link: HostLink) -> None:
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
                    out = await link.check(f"sysctl -n {shlex.join(names)}",
                                           timeout=max(2.0, watch.interval))
                    samples = list(zip((f"{watch.name}:{n}" for n in names),
                                       out.splitlines(), strict=False))
                else:
                    out = await link.check(sample_command(watch.sysctl, watch.command),
                                           timeout=max(2.0, watch.interval))
                    samples = watch_samples(watch.name, out)
            except RemoteError as exc:
                if not complained:
                    self._event(events.Error(message=f"watch {watch.name}: {exc.reason}"),
                                host=link.alias)
                    complained = True
                continue
            for name, text in samples:
                self._event(events.Watch(run=self.spec.run_id, name=name,
                                         value=_number(text.strip())), host=link.alias)

    def _start_cpu(self) -> None:
        loop = asyncio.get_running_loop()
        period = max(self.spec.options.interval, CPU_MIN_PERIOD)
        links = {link.alias: link for link in (self.sender, self.receiver)}
        for alias, link in links.items():
            command = self.spec.cpu_commands.get(alias)
            if command:
                self._watch_tasks.append(loop.create_task(self._cpu_loop(link, command,
                                                                         period)))

    async def _cpu_loop(self, link: HostLink, command: str, period: float) -> None:
        """The host's CPU time every `period` s, one round trip each: a CPU event with what
        each state gained since the previous sample (the first one is only the base)."""
        before = None
        complained = False
        due = time.monotonic()
        role = "sender" if link is self.sender else "receiver"
        while True:
            try:
                now = parse_cpu_times(await link.check(command, timeout=max(2.0, period)))
                if now is None:
                    raise RemoteError(link.alias, "its CPU time counters were not readable")
            except RemoteError as exc:
                if not complained:
                    self._event(events.Error(message=f"host CPU: {exc.reason}"),
                                host=link.alias)
                    complained = True
                before = None
            else:
                got = since(before, now) if before is not None else None
                if got is not None:
                    phase, straddles = self.hooks.phase_for(self.label, time.time(), period)
                    self._event(events.Cpu(run=self.spec.run_id, role=role, phase=phase,
                                           straddles=straddles, total=got[0], cpus=got[1]),
                                host=link.alias)
                before = now
            # on a fixed beat; a sample that took longer than a period (a slow link) is not
            # made up for with a burst
            due = max(due + period, time.monotonic())
            await asyncio.sleep(due - time.monotonic())

    @staticmethod
    async def _sysctl_names(link: HostLink, pattern: str) -> list[str]:
        listed = await link.check("sysctl -aN 2>/dev/null || sysctl -N -a 2>/dev/null; true")
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
