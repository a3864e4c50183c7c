"""The engine's drift watch: every setting the session set, read back while it measures, so a
value someone else changed (a colleague's `sysctl -w` on a host mid-session) is seen.

It reads back every `READBACK_S` seconds while the engine measures (continuous runs and
plans alike), before every change the engine makes, and whenever it is asked
(`Engine.read_back`: an alternation at every stretch boundary, before the stretch closes);
each read is a round trip of the hosts' control shells, all at once (abtui.hosts.readback).
Hosts that reconnect or switch builds are the host verifier's (abtui.measure.engine.verify)
and are skipped until it has read them again.

A setting found changed is a drift event (DRIFT, `since` and `until` set: the last read that
found abtui's value and this one), in the session's journal with host, setting, expected and
found values; the value is left as found (the knob layer never writes it again, the exit and
`abtui recover` leave it). Each pair of the host whose configuration names the knob has its
phase split there: the phase in force ends at `since`, the next opens at `until` labelled with
the host's value (as the profile writes values, where one matches), and what was measured in
between belongs to no phase (the session reader and an alternation's stretches leave it out,
saying why).
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import Collection, Sequence
from typing import TYPE_CHECKING, Protocol, runtime_checkable

from abtui.core import events
from abtui.core.configuration import pair_value, role_value
from abtui.core.errors import AbtuiError
from abtui.core.events import Event
from abtui.core.model import Knob, Profile, now
from abtui.measure.ports import Emit

if TYPE_CHECKING:  # types only: the objects are handed in by their owner
    from abtui.hosts.readback import Changed
    from abtui.measure.engine.hosts import HostPool
    from abtui.measure.engine.knobs import KnobChanger, Runs
    from abtui.measure.engine.verify import HostGate
    from abtui.measure.phase_book import PhaseBook

# How often settings are read back while measuring (seconds).
READBACK_S = 2.0
LEFT = "left as found, no longer set by abtui"


@runtime_checkable
class ReadsBack(Protocol):
    """A knob layer that reads back what it wrote (abtui.hosts.applier.HostKnobs)."""

    async def read_back(self, hosts: Collection[str]) -> list[Changed]: ...


class DriftWatch:
    """Settings read back while measuring; see the module docstring."""

    def __init__(self, profile: Profile, book: PhaseBook, pool: HostPool, gate: HostGate,
                 changer: KnobChanger, runs: Runs, emit: Emit) -> None:
        self.profile = profile
        self._book, self._pool, self._gate = book, pool, gate
        self._changer, self._runs, self._emit = changer, runs, emit
        self._good: dict[str, float] = {}  # host -> when its settings last read as written
        self._opened = 0.0  # when measuring (re)started: no phase is older
        self._loop: asyncio.Task[None] | None = None
        self._halt = asyncio.Event()  # set: the periodic reads end

    def start(self) -> None:
        """Measuring begins: read back every READBACK_S seconds until `stop`."""
        self._opened = now()
        self._halt.clear()
        if self._loop is None or self._loop.done():
            self._loop = asyncio.get_running_loop().create_task(self._every())

    async def stop(self) -> None:
        """No more periodic reads; a read under way completes (never cut off halfway)."""
        loop, self._loop = self._loop, None
        self._halt.set()
        if loop is not None:
            await asyncio.gather(loop, return_exceptions=True)

    async def _every(self) -> None:
        while True:
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(self._halt.wait(), READBACK_S)
            if self._halt.is_set():
                return
            if self._changer.changing.locked():
                continue  # a change (a boot, seconds) under way: read after it
            with contextlib.suppress(AbtuiError, OSError):
                await self.check()

    async def check(self) -> list[Changed]:
        """Read back now; what someone else changed is recorded and its pairs' phases split
        (see the module docstring)."""
        applier = self._changer.applier
        if not isinstance(applier, ReadsBack):
            return []
        async with self._changer.changing:
            hosts = [a for a in self._pool.links if self._pool.connected(a) and a not in self._gate]
            t = now()
            found = await applier.read_back(hosts)
            if found:
                await self._settle(found, t, now())
            for host in hosts:
                self._good[host] = t
            return found

    async def _settle(self, found: Sequence[Changed], since_read: float, t: float) -> None:
        """Each change said and its pairs' phases split: closed at the last good read,
        the next opened now, labelled with what the hosts have."""
        updates: dict[str, dict[str, str]] = {}
        since_of: dict[str, float] = {}
        for c in found:
            since = max(self._good.get(c.host, self._opened), self._opened)
            knob = self._knob(c.knob)
            labels = self._labels(c.host, knob) if knob is not None else []
            if knob is not None and labels:
                for label, value in (await self._relabel(knob, labels)).items():
                    updates.setdefault(label, {})[knob.name] = value
            for label in labels:
                since_of[label] = min(since_of.get(label, since), since)
            self._emit(Event.of(events.Drift(
                knob=c.knob or c.setting.key, key=c.setting.label(),
                value=" ".join(c.found.split()), expected=" ".join(c.expected.split()),
                pairs=labels, action=LEFT,
                message="what was measured between the two times counts in no phase",
                since=since, until=t, read=None if c.wrote else True), host=c.host))
        for label, since in since_of.items():
            phases = self._book.phases[label]
            if phases.pending is not None:  # a host of it reconnects: the verifier splits it
                continue
            closed = phases.commit_change(max(since, phases.start), t, updates.get(label, {}))
            if closed is not None:
                self._emit(closed)
            phases.running(self._runs.running(label) is not None)

    def _knob(self, name: str) -> Knob | None:
        try:
            return self.profile.knob(name)
        except KeyError:
            return None

    def _labels(self, host: str, knob: Knob) -> list[str]:
        """The pairs `host` is a host of whose configuration names the knob."""
        return [label for label in self._book.labels_of(host)
                if knob.name in self._book.phases[label].config
                and (not knob.pairs or label in knob.pairs)]

    async def _relabel(self, knob: Knob, labels: Sequence[str]) -> dict[str, str]:
        """Each pair's value of `knob` as its hosts have it now (a pair whose hosts cannot
        say keeps its label: its phase is split all the same)."""
        try:
            now_ = await self._changer.applier.current(knob, [self.profile.pair(x)
                                                              for x in labels])
        except AbtuiError:
            return {}
        roles = [str(r) for r in knob.scope.roles]
        out = {}
        for label in labels:
            config = self._book.phases[label].config[knob.name]
            parts = {r: now_.get(label, {}).get(r, role_value(config, r, roles)) for r in roles}
            out[label] = pair_value(parts)
        return out
