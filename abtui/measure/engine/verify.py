"""The engine's host verifier: hosts read again after a reconnect. A host whose link dropped
may have been reset (rebooted, its lab rebuilt) under a running session, so before any run
starts again on its pairs, every host knob of those pairs is read again on it, and every
tunnel abtui made there is checked (a reset removes its ends; an IPsec pair would go on in
the clear).

A value that differs from the pair's configuration ends the phase and is recorded (a DRIFT
event, shown in the console's log). A knob abtui set is then written back and read back
(re-applied), so the A/B comparison goes on under the values the user chose; a knob abtui never
set (the host's own value changed), or a re-apply the host refused, is relabelled: what follows
is labelled with the host's real value. A tunnel is made again (its pair gets the new
target), or, refused, removed: the pair measures direct, labelled `none`. Either way no
interval is counted under a value the host does not have: those that arrive between the link's
loss and the verified re-apply straddle the change (counted in no phase), and no run starts on
the pair until the host is verified. Intervals measured before the link dropped keep their
label: when a host changed before it went away cannot be known (a reboot or a rebuilt lab ends
iperf3 with it).

The undo journal's originals are never read again: the value to restore on exit stays the
one the host had before abtui first changed it, whatever a reset left there.

`HostGate` holds which hosts wait to be read again (the run scheduler waits on it before it
arms a run there); `HostVerifier` reads them again and settles what differs.

A build switch (a kernel's boot, a module's reload) is a reset abtui makes itself: its pairs'
hosts are held from before the switch (`hold_switch`: no run starts there while they boot,
however long that takes within the build's timeout) and read again once it is done
(`recheck`), so every other knob the session set is re-applied and every tunnel made again
before the pairs measure under the new build.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from abtui.core import events
from abtui.core.configuration import UNKNOWN, pair_value, role_value
from abtui.core.dimensions import TUNNEL
from abtui.core.errors import AbtuiError
from abtui.core.events import Event
from abtui.core.model import BUILD_KINDS, Knob, KnobKind, LinkState, Pair, Profile, now
from abtui.hosts.knobs import HOST_KINDS
from abtui.hosts.restore import rebooted
from abtui.measure.ports import Emit
from abtui.measure.tasks import Tasks
from abtui.remote.link import HostLink

if TYPE_CHECKING:  # types only: the objects are handed in by their owner
    from abtui.measure.engine.hosts import HostPool
    from abtui.measure.engine.knobs import KnobChanger, Runs
    from abtui.measure.phase_book import PhaseBook

# How long a run waits for a reconnected host's knobs to be read again.
VERIFY_WAIT_S = 60.0
NO_TUNNEL = "none"
REAPPLIED = "re-applied"
RELABELLED = "relabelled"


@dataclass(frozen=True, slots=True)
class Found:
    """A knob on the reconnected host that reads otherwise than its pair's configuration."""

    knob: Knob
    label: str
    role: str
    value: str  # the host's
    expected: str  # the host's part of the pair's configuration


@dataclass(slots=True)
class Unverified:
    """A host whose link dropped at `since` and is not read again yet."""

    since: float
    boot_id: str | None = None  # the host's boot before the link dropped
    done: asyncio.Event = field(default_factory=asyncio.Event)
    checking: bool = False
    until: float = 0.0  # a build switch: runs wait for it until then (time.monotonic)


class HostGate:
    """The hosts whose link dropped, until their knobs are read again."""

    def __init__(self, pool: HostPool) -> None:
        self._pool = pool
        self._waiting: dict[str, Unverified] = {}

    def __contains__(self, alias: str) -> bool:
        return alias in self._waiting

    def __bool__(self) -> bool:
        return bool(self._waiting)

    def get(self, alias: str) -> Unverified | None:
        return self._waiting.get(alias)

    def hold(self, alias: str, since: float, boot_id: str | None) -> Unverified:
        """`alias` dropped at `since`: nothing runs there until it is read again."""
        held = self._waiting[alias] = Unverified(since, boot_id)
        return held

    def release(self, alias: str, held: Unverified) -> None:
        """`alias` was read again (the hold is `held`, not a later one)."""
        if self._waiting.get(alias) is held:
            del self._waiting[alias]
            held.done.set()

    async def wait(self, aliases: Sequence[str]) -> None:
        """Wait (bounded) until these hosts, reconnected or switching builds, are read again."""
        t = time.monotonic()
        held = [u for a in dict.fromkeys(aliases) if (u := self._waiting.get(a)) is not None
                and (self._pool.connected(a) or u.until > t)]
        waits = [asyncio.ensure_future(u.done.wait()) for u in held]
        if waits:
            longest = max((u.until - t for u in held), default=0.0)
            _done, late = await asyncio.wait(waits, timeout=max(VERIFY_WAIT_S,
                                                                longest + VERIFY_WAIT_S))
            for waiting in late:
                waiting.cancel()


class HostVerifier:
    """Hosts read again after a reconnect; see the module docstring."""

    def __init__(self, profile: Profile, book: PhaseBook, pool: HostPool, gate: HostGate,
                 changer: KnobChanger, runs: Runs, emit: Emit, tasks: Tasks) -> None:
        self.profile = profile
        self._book, self._pool, self._gate = book, pool, gate  # what is read and relabelled
        self._changer, self._runs = changer, runs  # who writes back, what goes on meanwhile
        self._emit, self._tasks = emit, tasks
        self._standing_down = False

    def stand_down(self) -> None:
        """The session sets the hosts back: a host that reboots now (its first build
        restored) is not read again, nor anything re-applied on it: that would undo the
        restore (boot it back into the build the session last set)."""
        self._standing_down = True

    def link_changed(self, link: HostLink, state: LinkState) -> None:
        """A link dropped (its pairs count nothing from now) or came back (read it again)."""
        if self._standing_down:
            return
        if state is LinkState.LOST and link.alias not in self._gate:
            since = self._gate.hold(link.alias, now(), link.boot_id)
            for label in self._book.labels_of(link.alias):  # nothing counts until read again
                if self._book.phases[label].pending is None:
                    self._book.phases[label].begin_change(since.since)
        elif state is LinkState.CONNECTED and link.alias in self._gate:
            self._tasks.spawn(self._verify(link.alias))

    def hold_switch(self, aliases: Sequence[str], since: float, wait_s: float) -> None:
        """These hosts switch builds from `since`: no run starts there until they are read
        again (`recheck`), for at most `wait_s` seconds."""
        until = time.monotonic() + wait_s
        for alias in aliases:
            held = self._gate.get(alias)
            if held is None:
                link = self._pool.links.get(alias)
                held = self._gate.hold(alias, since, link.boot_id if link else None)
            held.until = max(held.until, until)

    def recheck(self, aliases: Sequence[str]) -> None:
        """The switch is over: read the hosts again (now, or when their link is back)."""
        for alias in aliases:
            if alias in self._gate and self._pool.connected(alias):
                self._tasks.spawn(self._verify(alias))

    async def _verify(self, alias: str) -> None:
        pending = self._gate.get(alias)
        if pending is None or pending.checking or self._standing_down:
            return
        pending.checking = True
        try:
            async with self._changer.changing:
                settled = await self._recheck(alias, pending.since, pending.boot_id,
                                              switched=pending.until > 0)
        finally:
            pending.checking = False
        if settled:
            self._gate.release(alias, pending)

    async def _recheck(self, alias: str, since: float, boot_id: str | None,
                       switched: bool = False) -> bool:
        """Read every host knob of `alias`'s pairs on it and act on what differs; False when
        the link dropped again meanwhile (the next reconnect reads again)."""
        found = await self._read_again(alias)
        if found is None or self._standing_down:
            return found is not None
        if found:
            await self._settle(alias, found, since, boot_id, switched)
            return True
        for label in self._book.labels_of(alias):  # as it was: the phase goes on
            if self._book.phases[label].pending == since:
                self._book.phases[label].abort_change()
        return True

    async def _read_again(self, alias: str) -> list[Found] | None:
        """What differs on `alias`; None when its link dropped again meanwhile."""
        labels = self._book.labels_of(alias)
        knobs = [k for k in self.profile.knobs if k.kind in HOST_KINDS or k.kind in BUILD_KINDS]
        found: list[Found] = []
        for knob in knobs:
            pairs = [self.profile.pair(x) for x in labels if not knob.pairs or x in knob.pairs]
            try:
                by_role = await self._changer.applier.current(knob, pairs) if pairs else {}
            except AbtuiError:
                by_role = {}
            found += self._differs(alias, knob, pairs, by_role)
        found += await self._tunnels_gone(alias, labels)
        if alias in self._pool.links and self._pool.links[alias].state is not LinkState.CONNECTED:
            return None
        return found

    async def _tunnels_gone(self, alias: str, labels: Sequence[str]) -> list[Found]:
        """The pairs whose tunnel (one abtui made) lost its end on `alias`: a reset removes
        them, and an IPsec pair would go on measuring in the clear."""
        tunnel = self._tunnel_knob()
        if tunnel is None:
            return []
        out = []
        for label in labels:
            kind = self._book.phases[label].config.get(tunnel.name, NO_TUNNEL)
            if kind == NO_TUNNEL:
                continue
            try:
                there = await self._changer.applier.tunnel_intact(label, alias)
            except AbtuiError:
                there = False
            if there is False:
                role = "sender" if self.profile.pair(label).sender == alias else "receiver"
                out.append(Found(tunnel, label, role, NO_TUNNEL, kind))
        return out

    def _tunnel_knob(self) -> Knob | None:
        """The knob that switches tunnels (the profile's, or its `tunnels` list's)."""
        named = [k for k in self.profile.knobs if k.kind is KnobKind.TUNNEL]
        if named:
            return named[0]
        return self._changer.knob(TUNNEL) if set(self.profile.tunnels) - {NO_TUNNEL} else None

    def _differs(self, alias: str, knob: Knob, pairs: Sequence[Pair],
                 by_role: dict[str, dict[str, str]]) -> list[Found]:
        roles = [str(r) for r in knob.scope.roles]
        out = []
        for pair in pairs:
            config = self._book.phases[pair.label].config
            if knob.name not in config:
                continue  # no host of the pair could say on connect: nothing was claimed
            for role in knob.scope.roles:
                if pair.host(role) != alias:
                    continue
                value = by_role.get(pair.label, {}).get(str(role), UNKNOWN)
                expected = role_value(config[knob.name], str(role), roles)
                if value != expected:
                    out.append(Found(knob, pair.label, str(role), value, expected))
        return out

    async def _settle(self, alias: str, found: list[Found], since: float,
                      boot_id: str | None = None, switched: bool = False) -> None:
        """End the phase of every pair concerned (from the link's loss on, nothing counts),
        re-apply what abtui set, relabel the rest, and record each finding — but after a
        build switch (`switched`) what a boot resets and abtui re-applies is the switch's
        own work (its knob and tunnel events say it), not drift: only a refusal is told."""
        labels = list(dict.fromkeys(f.label for f in found))
        for label in labels:
            self._book.phases[label].begin_change(since)
        self._book.settings_changed(labels)  # a run prepared before is stale
        updates: dict[str, dict[str, str]] = {label: {} for label in labels}
        reboot = "the host rebooted" if rebooted(boot_id, self._pool.links[alias].boot_id) else ""
        for knob_name in dict.fromkeys(f.knob.name for f in found):
            mine = [f for f in found if f.knob.name == knob_name]
            outcome = await self._reapply(mine)
            for f in mine:
                refused = outcome.get(f.label)
                if refused is not None:
                    updates[f.label][knob_name] = self._relabel(f.label, mine)
                if switched and refused is None:
                    continue
                why = [w for w in (reboot, refused) if w]
                self._emit(Event.of(events.Drift(
                    knob=knob_name, value=f.value, expected=f.expected, pairs=[f.label],
                    action=RELABELLED if refused is not None else REAPPLIED,
                    message="; ".join(why)), host=alias))
        end = now()
        for label in labels:
            closed = self._book.phases[label].commit_change(since, end, updates[label])
            if closed is not None:
                self._emit(closed)
            self._book.phases[label].running(self._runs.running(label) is not None)

    def _relabel(self, label: str, mine: Sequence[Found]) -> str:
        """The pair's value with the reconnected host's parts replaced by what it has (a
        tunnel with an end gone is no tunnel)."""
        knob = mine[0].knob
        if knob.kind is KnobKind.TUNNEL:
            return NO_TUNNEL
        roles = [str(r) for r in knob.scope.roles]
        config = self._book.phases[label].config[knob.name]
        parts = {r: role_value(config, r, roles) for r in roles}
        for f in mine:
            if f.label == label:
                parts[f.role] = f.value
        return pair_value(parts)

    async def _reapply(self, found: list[Found]) -> dict[str, str | None]:
        """Write back the values abtui set (grouped by value), verified by reading back;
        per pair, None when re-applied, else why not (a knob abtui never set: the host's
        own value changed, which abtui does not overrule)."""
        out: dict[str, str | None] = {}
        knob = found[0].knob
        by_value: dict[str, dict[str, None]] = {}  # value -> its pairs, each once
        for f in found:
            if knob.name not in self._changer.applied(f.label):
                out[f.label] = "abtui never set it: the host's own value"
                continue
            by_value.setdefault(self._book.phases[f.label].config[knob.name], {})[f.label] = None
        for value, labels in by_value.items():
            targets: Mapping[str, str] = {}
            try:
                targets = await self._changer.applier.apply(knob, value,
                                                   [self.profile.pair(x) for x in labels])
            except AbtuiError as exc:
                out.update(dict.fromkeys(labels, f"re-apply refused: {exc}"))
                if knob.kind is KnobKind.TUNNEL:  # what is left of it goes, runs go direct
                    targets = await self._untunnel(knob, list(labels))
            else:
                out.update(dict.fromkeys(labels))
            self._retarget(targets)
        return out

    async def _untunnel(self, knob: Knob, labels: list[str]) -> Mapping[str, str]:
        """Remove what is left of the pairs' tunnels; their direct targets."""
        try:
            return await self._changer.applier.apply(knob, NO_TUNNEL,
                                            [self.profile.pair(x) for x in labels])
        except AbtuiError:
            return {x: self.profile.pair(x).target for x in labels}

    def _retarget(self, targets: Mapping[str, str]) -> None:
        """A tunnel made again (or gone) gives its pair a new iperf3 target."""
        for label, target in targets.items():
            self._book.targets[label] = target
            kind = self._tunnel_knob()
            value = self._book.phases[label].config.get(kind.name, NO_TUNNEL) if kind else NO_TUNNEL
            self._emit(Event.of(events.Tunnel(type=value, target=target), pair=label))
