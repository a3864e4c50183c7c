"""Knobs: apply a value on every target host at once, verify it, all or nothing, and set back.

A flip reads the current value on every target (recording the original of a setting the first
time it is touched, in the undo journal and as an ORIGINAL event, before anything changes),
writes the new value with a command that also reads it back, and when any host refuses or
reads back something else, sets the others back to what they had. `restore_all()` puts every
original back (on exit, on Ctrl-C); `abtui recover` does the same from the undo journal.
"""

from __future__ import annotations

import asyncio
import contextlib
import weakref
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from abtui.core import events
from abtui.core.errors import BadInput, KnobRefused, RemoteError, WriteFailed
from abtui.core.events import Event
from abtui.core.model import BUILD_KINDS, Knob, KnobKind, Pair
from abtui.hosts.builds import BuildSwitcher
from abtui.hosts.targets import Target
from abtui.hosts.undo import HostRecord, UndoJournal
from abtui.remote.cork import together
from abtui.remote.link import HostLink
from abtui.remote.os.dialect import Dialect, Setting, same_value
from abtui.remote.refusals import PERMISSION, READ_ONLY, reason_line
from abtui.remote.uring import Uncorker

if TYPE_CHECKING:
    from abtui.hosts.tunnels import TunnelManager

MAX_PLANS = 64  # flips' plans a manager keeps (a knob's values, on its hosts)
HOST_KINDS = (KnobKind.SYSCTL, KnobKind.ETHTOOL_FEATURE, KnobKind.ETHTOOL_COALESCE, KnobKind.MTU,
              KnobKind.NETEM)

Emit = Callable[[Event], None]


@dataclass(slots=True)
class ApplyResult:
    """What a flip did: values read back per host, new iperf3 targets (tunnels), or options."""

    values: dict[str, str] = field(default_factory=dict)
    targets: dict[str, str] = field(default_factory=dict)


@dataclass(frozen=True, slots=True)
class Swap:
    """One host's part of a flip: the value before, and the error if it was not applied
    (`changed`: it was written but reads back something else)."""

    old: str | None
    error: RemoteError | None
    value: str = ""
    changed: bool = False


@dataclass(frozen=True, slots=True)
class _Plan:
    """A flip's hosts worked out (KnobManager._plan): each target's setting, the value its
    OS writes, and the objects they were worked out from."""

    knob: Knob
    targets: tuple[Target, ...]
    settings: list[tuple[str, Setting]]
    wanted: dict[str, str]
    dialects: tuple[Dialect, ...]


@dataclass(frozen=True, slots=True)
class Restored:
    host: str
    setting: Setting
    value: str
    ok: bool
    message: str
    left: str | None = None  # not set back: the host had this value, not the one abtui wrote


def resolve_targets(pairs: Sequence[Pair], knob: Knob,
                    chosen: Sequence[str] | None = None) -> list[Target]:
    """The hosts a knob touches: its scope on the chosen pairs (None: the knob's own, or all).

    A host shared by several pairs (with the same device) appears once."""
    labels = list(chosen) if chosen is not None else list(knob.pairs)
    known = {p.label for p in pairs}
    for label in labels:
        if label not in known:
            raise BadInput(f"knob {knob.name}: no pair {label!r} (pairs: {', '.join(known)})")
    out: list[Target] = []
    seen: set[tuple[str, str | None]] = set()
    for p in pairs:
        if labels and p.label not in labels:
            continue
        for role in knob.scope.roles:
            host = p.host(role)
            device = None if _sysctl_only(knob) else knob.device or p.device(role)
            if (host, device) not in seen:
                seen.add((host, device))
                out.append(Target(host, device, p.label))
    return out


def _sysctl_only(knob: Knob) -> bool:
    """A knob that is a sysctl on every OS needs no device (one target per host)."""
    return all(k is KnobKind.SYSCTL for k in (knob.kind, *knob.os_kinds.values()))


class KnobManager:
    """Applies knobs to hosts over their links; remembers originals and sets them back."""

    def __init__(self, links: Mapping[str, HostLink], dialects: Mapping[str, Dialect], *,
                 journal: UndoJournal | None = None, emit: Emit | None = None,
                 tunnels: TunnelManager | None = None) -> None:
        self.links = links
        self.dialects = dialects
        self.journal = journal
        self.emit = emit
        self.tunnels = tunnels  # for tunnel knobs
        # setting identity -> (original value, knob name), in the order first touched
        self.originals: dict[tuple[str, Setting], tuple[str, str]] = {}
        # setting identity -> the value this manager last wrote (and read back) there
        self.written: dict[tuple[str, Setting], str] = {}
        # setting identity -> the value someone else set there since (abtui.hosts.readback):
        # no longer abtui's, never written again, left as found on exit
        self.foreign: dict[tuple[str, Setting], str] = {}
        # setting identity -> (the value last read there, knob name): what the session's
        # labels name for a value abtui never wrote (the host's own, read at connect), read
        # back as `written` is (abtui.hosts.readback)
        self.seen: dict[tuple[str, Setting], tuple[str, str]] = {}
        self._lock = asyncio.Lock()
        self._plans: dict[tuple[str, str], _Plan] = {}  # (knob, value) -> its flip's plan
        self._uncorker: Uncorker | None = None
        # kernel and module knobs: a switch is a boot or a reload (abtui.hosts.builds)
        self.builds = BuildSwitcher(links, dialects, self.read, journal=journal, emit=emit)

    @property
    def lock(self) -> asyncio.Lock:
        """Held while settings change or are read back (no read sees a flip half done)."""
        return self._lock

    def setting(self, knob: Knob, target: Target) -> Setting:
        """The knob as a setting of this host's OS ([knobs.os.<os>] picks its kind and key)."""
        dialect = self._dialect(target.host)
        kind, key = knob.for_os(dialect.name)
        device = None if kind is KnobKind.SYSCTL else target.device
        try:
            return dialect.check_setting(Setting(kind, key, device))
        except BadInput as exc:
            raise KnobRefused(f"{target.host}: knob {knob.name}: {exc}", invalid=True) from exc

    def _dialect(self, host: str) -> Dialect:
        try:
            return self.dialects[host]
        except KeyError:
            raise KnobRefused(f"{host}: OS not known yet (not connected?)") from None

    def _link(self, host: str) -> HostLink:
        try:
            return self.links[host]
        except KeyError:
            raise KnobRefused(f"{host}: no link to this host") from None

    def _why(self, host: str, stderr: str, status: int) -> str:
        why = reason_line(stderr, status)
        uid = getattr(self.links.get(host), "uid", None)
        if uid not in (None, 0) and why.startswith((READ_ONLY, PERMISSION)):
            why += f" (connected as uid {uid}: connect as root or set sudo = true)"
        return why

    async def read(self, host: str, s: Setting) -> str:
        """The setting's current value on `host`; RemoteError (naming the host) otherwise."""
        dialect = self._dialect(host)
        result = await self._link(host).run(dialect.read_command(s), isolate=False,
                                            again=True)  # a lost link is waited for
        value = dialect.parse_value(s, result.stdout) if result.ok else None
        if value is None:
            why = self._why(host, result.stderr, result.exit_status) if not result.ok \
                else f"unexpected reply {result.stdout[-80:]!r}"
            raise RemoteError(host, f"cannot read {s.label()}: {why}")
        return value

    async def write(self, host: str, s: Setting, value: str) -> str:
        """Write and read back in one round trip; RemoteError unless it reads back `value`."""
        dialect = self._dialect(host)
        want = dialect.normalize(s, value)
        result = await self._link(host).run(dialect.write_command(s, want), isolate=False,
                                            again=True)
        if not result.ok:
            raise RemoteError(host, f"{s.label()}: "
                              f"{self._why(host, result.stderr, result.exit_status)}")
        return self._verified(host, s, want, dialect.parse_value(s, result.stdout))

    def _verified(self, host: str, s: Setting, want: str, got: str | None) -> str:
        if not same_value(got, want):
            raise RemoteError(host, f"{s.label()}: not applied, reads back {got!r} "
                              f"after writing {want!r}")
        return got or want

    async def swap(self, host: str, s: Setting, want: str) -> Swap:
        """Read the current value, write `want` (normalized for the host's OS: the flip did
        it once, checking every host before any change) and read it back: one round trip."""
        dialect = self._dialect(host)
        try:
            result = await self._link(host).run(dialect.swap_command(s, want),
                                                isolate=False, again=True)
        except RemoteError as exc:
            return Swap(None, exc)
        old, got = dialect.parse_swap(s, result.stdout)
        if not result.ok:
            why = self._why(host, result.stderr, result.exit_status)
            return Swap(old, RemoteError(host, f"{s.label()}: {why}" if old is not None else
                                         f"cannot read {s.label()}: {why}"))
        try:
            return Swap(old, None, self._verified(host, s, want, got))
        except RemoteError as exc:
            return Swap(old, exc, changed=True)

    def _record_original(self, knob: Knob, host: str, s: Setting, value: str) -> None:
        ident = (host, s)
        if ident in self.originals:
            return
        if self.journal is not None:
            link = self.links.get(host)
            if link is not None:
                self.journal.host(HostRecord(host, link.ssh_config, link.known_hosts,
                                             link.sudo))
            self.journal.original(host, str(s.kind), s.key, s.device, value, knob.name)
        self.originals[ident] = (value, knob.name)
        if self.emit is not None:
            self.emit(Event.of(events.Original(knob=knob.name, key=s.key, value=value,
                                               device=s.device, kind=str(s.kind)), host=host))

    async def apply(self, knob: Knob, value: str, targets: Sequence[Target],
                    again: bool = False) -> ApplyResult:
        """Set `value` on every target, concurrently; all or nothing (KnobRefused names the
        host and why, after the others were set back). `again`: a build knob's hosts boot
        (reload) the build even when they run it already."""
        if knob.kind is KnobKind.IPERF3:
            raise KnobRefused(f"knob {knob.name}: iperf3 options change no host (the engine "
                              "sets them on the next run)")
        if knob.kind is KnobKind.TUNNEL:
            return await self._apply_tunnel(value, targets)
        if knob.kind in BUILD_KINDS:
            return await self._apply_build(knob, value, targets, again)
        async with self._lock:
            return await self._apply_settings(knob, value, targets)

    def _plan(self, knob: Knob, value: str, targets: Sequence[Target]) -> _Plan:
        """Each target's setting and the value its host's OS writes, checked (KnobRefused
        otherwise): worked out on the first flip of this knob to this value on these hosts
        and kept (a flip back and forth works them out twice, not on every flip: about 20 us
        of the client's CPU a 4-host flip, before the first command leaves). Worked out again
        when the knob, the targets or a host's dialect is another object than it was."""
        hosts = tuple(targets)
        plan = self._plans.get((knob.name, value))
        if plan is not None and plan.knob is knob and plan.targets == hosts and \
                all(self.dialects.get(h) is d for (h, _s), d in
                    zip(plan.settings, plan.dialects, strict=True)):
            return plan
        settings = [(t.host, self.setting(knob, t)) for t in targets]
        # the value as each host's OS writes it ([knobs.os.<os>] values)
        wanted = {h: knob.value_for_os(self._dialect(h).name, value) for h, _s in settings}
        for host, s in settings:
            try:
                wanted[host] = self._dialect(host).normalize(s, wanted[host])
            except BadInput as exc:
                raise KnobRefused(f"{host}: knob {knob.name}: {INVALID}: {exc}",
                                  invalid=True) from exc
        plan = _Plan(knob, hosts, settings, wanted,
                     tuple(self._dialect(h) for h, _s in settings))
        if len(self._plans) >= MAX_PLANS:
            self._plans.clear()
        self._plans[(knob.name, value)] = plan
        return plan

    def uncorker(self) -> Callable[[list[Any]], list[Any]] | None:
        """The lift of several hosts' held writes in one system call (abtui.remote.uring,
        for abtui.remote.cork.together), made on first use; its ring is let go with this
        manager. None where the system gives no ring (lifted one by one)."""
        if self._uncorker is None:
            self._uncorker = Uncorker()
            weakref.finalize(self, self._uncorker.close)
        return self._uncorker.lift if self._uncorker.available else None

    async def _apply_settings(self, knob: Knob, value: str,
                              targets: Sequence[Target]) -> ApplyResult:
        plan = self._plan(knob, value, targets)
        settings, wanted = plan.settings, plan.wanted
        for host, s in settings:  # someone else's value is never overwritten
            if (host, s) in self.foreign:
                raise KnobRefused(_foreign(knob, value, host, s, self.foreign[(host, s)]))
        first = [(h, s) for h, s in settings if (h, s) not in self.originals]
        before: list[str | BaseException] = []
        if first:  # the originals, read on a setting's first touch only
            before = await asyncio.gather(*(self.read(h, s) for h, s in first),
                                          return_exceptions=True)
        for (host, _s), old in zip(first, before, strict=True):
            if isinstance(old, BaseException):
                raise KnobRefused(_message(knob, value, host, old, "nothing was changed"))
        for (host, s), old in zip(first, before, strict=True):  # changed since it was read
            seen = self.seen.get((host, s))
            if seen is not None and not same_value(str(old), seen[0]):
                self.foreign[(host, s)] = str(old)
                raise KnobRefused(_foreign(knob, value, host, s, str(old)))
        # on disk before any change: one fsync for all the hosts of this flip
        try:
            with self.journal.batch() if self.journal is not None else \
                    contextlib.nullcontext():
                for (host, s), old in zip(first, before, strict=True):
                    self._record_original(knob, host, s, str(old))
                if self.journal is not None:  # each value abtui writes, once
                    for host, s in settings:
                        self.journal.wrote(host, str(s.kind), s.key, s.device, wanted[host])
        except WriteFailed:  # not journalled: not changed, now or by a later flip
            for ident in first:
                self.originals.pop(ident, None)
            raise
        # the hosts' commands leave together, not one host's sshd woken before the next
        # host's command is written (abtui.remote.cork.together)
        with together(len(settings), self.uncorker()):
            swaps = await asyncio.gather(*(self.swap(h, s, wanted[h]) for h, s in settings))
        failed = []
        values = {}
        for (host, s), sw in zip(settings, swaps, strict=True):
            if sw.error is None:
                self.written[(host, s)] = values[host] = sw.value
            else:
                failed.append((host, sw.error))
        if not failed:
            return ApplyResult(values=values)
        back = [(h, s, sw.old) for (h, s), sw in zip(settings, swaps, strict=True)
                if sw.old is not None and (sw.error is None or sw.changed)]
        undo = await asyncio.gather(*(self.write(h, s, old) for h, s, old in back),
                                    return_exceptions=True)
        for (host, s, _old), u in zip(back, undo, strict=True):
            if not isinstance(u, BaseException):
                self.written[(host, s)] = u
        stuck = [h for (h, _s, _o), u in zip(back, undo, strict=True)
                 if isinstance(u, BaseException)]
        note = f"set back on {len(back) - len(stuck)} other host(s)" if back else \
            "nothing was changed"
        if stuck:
            note += f"; could NOT set back {', '.join(stuck)}"
        await self._drop_unchanged(first)
        host, error = failed[0]
        raise KnobRefused(_message(knob, value, host, error, note))

    async def _apply_build(self, knob: Knob, value: str, targets: Sequence[Target],
                           again: bool = False) -> ApplyResult:
        """A kernel or module switch (abtui.hosts.builds). Before a module reload the pairs'
        tunnels go down (a module a tunnel uses cannot be unloaded: WireGuard's own) and
        after it they are made again, each pair with its new target."""
        for t in targets:  # every host known before any switch
            self._dialect(t.host)
        kept: dict[str, list[str]] = {}  # tunnel type -> its pairs
        if knob.kind is KnobKind.MODULE and self.tunnels is not None:
            for label in dict.fromkeys(t.pair for t in targets):
                active = self.tunnels.active.get(label)
                if active is not None:
                    kept.setdefault(active.type.value, []).append(label)
            for labels in kept.values():
                await self.tunnels.switch_pairs(labels, "none")
        try:
            got = await self.builds.switch(knob, value, targets, again)
        finally:
            made: dict[str, str] = {}
            for kind, labels in kept.items():
                made.update(await self.tunnels.switch_pairs(labels, kind)
                            if self.tunnels is not None else {})
        return ApplyResult(values=got, targets=made)

    async def _drop_unchanged(self, touched: Sequence[tuple[str, Setting]]) -> None:
        """After a refused flip: the originals it recorded first, for settings that hold them
        still (refused before any change, or set back), are forgotten, so nothing tries to
        restore them (a read-only sysctl could never be) and no undo entry is left. What
        cannot be read, or reads otherwise, stays to be restored."""
        now = await asyncio.gather(*(self.read(h, s) for h, s in touched),
                                   return_exceptions=True)
        for (host, s), value in zip(touched, now, strict=True):
            original = self.originals.get((host, s))
            if original is None or isinstance(value, BaseException) or \
                    not same_value(value, original[0]):
                continue
            del self.originals[(host, s)]
            if self.journal is not None:
                self.journal.unchanged(host, str(s.kind), s.key, s.device)

    async def _apply_tunnel(self, value: str, targets: Sequence[Target]) -> ApplyResult:
        if self.tunnels is None:
            raise KnobRefused("tunnel knobs need a tunnel manager")
        pairs = list(dict.fromkeys(t.pair for t in targets))
        try:
            out = await self.tunnels.switch_pairs(pairs, value)
        except BadInput as exc:
            raise KnobRefused(str(exc), invalid=True) from exc
        except RemoteError as exc:
            raise KnobRefused(str(exc)) from exc
        return ApplyResult(targets=dict(out))

    async def current(self, knob: Knob, pairs: Sequence[Pair]) -> dict[str, dict[str, str]]:
        """Each pair's value of a host knob now, per role of its scope, as the profile writes
        values (a host value that one of the knob's values gives on that OS reads as it; any
        other as the host says it). A host that cannot say is left out, so is a pair's role."""
        wanted = [(p.label, role, Target(p.host(role), None if _sysctl_only(knob)
                                         else knob.device or p.device(role), p.label))
                  for p in pairs for role in knob.scope.roles]
        reads: dict[tuple[str, str | None], asyncio.Future[str]] = {}
        for _label, _role, t in wanted:
            if (t.host, t.device) not in reads:
                reads[(t.host, t.device)] = asyncio.ensure_future(self._read_as_profile(knob, t))
        await asyncio.gather(*reads.values(), return_exceptions=True)
        out: dict[str, dict[str, str]] = {}
        for label, role, t in wanted:
            fut = reads[(t.host, t.device)]
            if fut.exception() is None:
                out.setdefault(label, {})[str(role)] = fut.result()
        return out

    async def _read_as_profile(self, knob: Knob, target: Target) -> str:
        if knob.kind in BUILD_KINDS:
            return await self.builds.current(knob, target)
        s = self.setting(knob, target)
        raw = await self.read(target.host, s)
        self.seen[(target.host, s)] = (raw, knob.name)
        dialect = self._dialect(target.host)
        matches = []
        for v in knob.values:
            try:
                if same_value(raw, dialect.normalize(s, knob.value_for_os(dialect.name, v))):
                    matches.append(v)
            except BadInput:
                continue
        return matches[0] if len(matches) == 1 else " ".join(raw.split())

    async def restore_all(self) -> list[Restored]:
        """Put every original back, concurrently per host; emits RESTORE per setting. Only
        what this manager set is set back: a setting read back first whose value is no
        longer the one it wrote (someone else set it since) is left as it is, said in its
        RESTORE event and noted in the journal. Then every host back on its first build (a
        reboot or a reload: settings first, so a host's reload gives back its interface as
        it was)."""
        out = await self._restore_settings()
        for host, o, ok, msg in await self.builds.restore_all():
            out.append(Restored(host, Setting(o.kind, o.key or o.knob, o.device), o.shown, ok,
                                msg))
            if self.emit is not None:
                self.emit(Event.of(events.Restore(knob=o.knob, value=o.shown, ok=ok,
                                                  message=msg), host=host))
        return out

    async def _restore_settings(self) -> list[Restored]:
        async with self._lock:
            items = list(self.originals.items())
            done = await asyncio.gather(*(self._restore(h, s, v) for (h, s), (v, _k) in items),
                                        return_exceptions=True)
            out = []
            for ((host, s), (value, knob)), res in zip(items, done, strict=True):
                left = res if isinstance(res, str) else None
                ok = res is None
                msg = "" if ok else str(res) if left is None else \
                    (f"left as it is: reads {_words(left)!r}, not the "
                     f"{_words(self.written[(host, s)])!r} "
                     "abtui set (set by someone else since)")
                out.append(Restored(host, s, value, ok, msg, left))
                if ok or left is not None:
                    self.originals.pop((host, s), None)
                    self.written.pop((host, s), None)
                    if self.journal is not None:
                        self.journal.restored(host, str(s.kind), s.key, s.device, left)
                if self.emit is not None:
                    self.emit(Event.of(events.Restore(knob=knob, value=value, ok=ok,
                                                      message=msg, left=left), host=host))
            return out

    async def _restore(self, host: str, s: Setting, original: str) -> str | None:
        """Set `original` back unless the host no longer has what this manager wrote (the
        value it has then, left as it is); None when set back (or already the original)."""
        wrote = self.written.get((host, s))
        if wrote is not None:
            try:
                now: str | None = await self.read(host, s)
            except RemoteError:
                now = None  # cannot say: the write below tells
            if now is not None and same_value(now, original):
                return None
            if now is not None and not same_value(now, wrote):
                return now
        await self.write(host, s, original)
        return None


INVALID = "invalid value"


def _foreign(knob: Knob, value: str, host: str, s: Setting, found: str) -> str:
    return (f"{host}: knob {knob.name}={value!r} refused: {s.label()} was set to "
            f"{_words(found)!r} by someone else during the session; abtui no longer sets it "
            "(nothing was changed)")


def _words(value: str) -> str:
    """A value as one line says it (tcp_rmem's tabs as spaces)."""
    return " ".join(value.split())


def _message(knob: Knob, value: str, host: str, exc: BaseException, note: str) -> str:
    why = exc.reason if isinstance(exc, RemoteError) else str(exc)
    return f"{host}: knob {knob.name}={value!r} refused: {why} ({note})"
