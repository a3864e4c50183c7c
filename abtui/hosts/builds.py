"""Builds switched on hosts: a kernel by a boot, a module by a reload, each verified by what the
host reports after it, the host's first build journalled before anything changes and booted
or reloaded back at the end.

A kernel switch records the host's boot id, starts the boot (a kexec, a GRUB entry for the next
boot, FreeBSD's nextboot, or the user's command on the controller: abtui.hosts.power) and
waits for the host's link to come back with another boot id (the link reconnects on its own;
a link that does not, `abtui recover`'s, is connected again here), then reads `uname -r`/`-v`.
A module switch reads the data interface (MAC, MTU, state, addresses), reloads the module and
gives the interface back in the same round trip, then reads /sys/module (or kldstat) and the
build's `reports` setting. Both hosts of a pair switch at once; when one fails, the others go
back to what they ran, so a pair never runs two builds under one label. What the engine does
around a switch (the other knobs re-applied, tunnels, runs) is abtui.measure's.
"""

from __future__ import annotations

import asyncio
import contextlib
import time
from collections.abc import Awaitable, Callable, Mapping, Sequence
from dataclasses import dataclass

from abtui.core import events
from abtui.core.builds import Build, Method, Reports
from abtui.core.errors import BadInput, KnobRefused, RemoteError
from abtui.core.events import Event
from abtui.core.model import Knob, KnobKind, LinkState
from abtui.hosts.power import command_argv, run_command
from abtui.hosts.targets import Target
from abtui.hosts.undo import UndoJournal
from abtui.remote.link import HostLink
from abtui.remote.os.builds import (
    BuildCommands,
    Interface,
    KernelState,
    ModuleState,
    kernel_mismatch,
    module_mismatch,
)
from abtui.remote.os.dialect import Dialect, Setting, as_function, same_value

Emit = Callable[[Event], None]
ReadSetting = Callable[[str, Setting], Awaitable[str]]
POLL_S = 0.25  # how often a host coming back is looked at
# how long the command that starts a boot may take on the host at least (`kexec -l` reads the
# image and initramfs: over 30 s in an emulated guest under load), and at most the build's timeout
BOOT_START_S = 30.0


@dataclass(slots=True)
class Origin:
    """A host's build before abtui first switched it: the knob value it matched ("" none)
    and how to come back to it."""

    knob: str
    kind: KnobKind
    key: str
    value: str
    build: Build
    device: str | None = None
    iface: Interface | None = None

    @property
    def shown(self) -> str:
        """The first build as a line names it: its value, else its release."""
        return self.value or self.build.release or "the build it ran"


class BuildSwitcher:
    """Switches builds on hosts and switches them back; see the module docstring."""

    def __init__(self, links: Mapping[str, HostLink], dialects: Mapping[str, Dialect],
                 read: ReadSetting, *, journal: UndoJournal | None = None,
                 emit: Emit | None = None) -> None:
        self.links = links
        self.dialects = dialects
        self._read = read  # a host setting read (a build's `reports`)
        self.journal = journal
        self.emit = emit
        self.originals: dict[tuple[str, str], Origin] = {}  # (host, knob name) -> first build
        # (host, knob name) -> (the value, the boot id before): a boot started (its command
        # ran) that was not seen to end; the host may come up on that build later
        self.in_flight: dict[tuple[str, str], tuple[str, str | None]] = {}

    def _commands(self, host: str) -> BuildCommands:
        dialect = self.dialects.get(host)
        if dialect is None:
            raise KnobRefused(f"{host}: OS not known yet (not connected?)")
        if dialect.builds is None:
            raise KnobRefused(f"{host}: abtui switches builds on Linux and FreeBSD hosts only")
        return dialect.builds

    def _link(self, host: str) -> HostLink:
        link = self.links.get(host)
        if link is None:
            raise KnobRefused(f"{host}: no link to this host")
        return link

    async def _run(self, host: str, command: str, timeout: float = 30.0,
                   again: bool = True) -> str:
        """`again`: the command may run twice (a read, a reload to one build): a link lost
        meanwhile is waited for and the command sent again (never a boot's command)."""
        result = await self._link(host).run(as_function(command), timeout=timeout,
                                            isolate=False, again=again)
        if not result.ok:
            why = (result.stderr.strip().splitlines() or [f"exit status {result.exit_status}"])
            raise RemoteError(host, why[-1])
        return result.stdout

    # ---- reading -----------------------------------------------------------------------
    async def kernel(self, host: str) -> KernelState:
        cmds = self._commands(host)
        return cmds.parse_kernel_state(await self._run(host, cmds.kernel_state()))

    async def module(self, knob: Knob, host: str, build: Build) -> ModuleState:
        cmds = self._commands(host)
        return cmds.parse_module_state(await self._run(host, cmds.module_state(knob.key, build)))

    async def _reports(self, where: Target, build: Build) -> str | None:
        """Why the build's `reports` setting does not read its value (None: it does)."""
        if build.reports is None:
            return None
        s = _reported(build.reports, where)
        return _reads(build.reports, s, await self._read(where.host, s))

    async def current(self, knob: Knob, where: Target) -> str:
        """The knob's value the host runs (as the profile names it), else what it reports."""
        if knob.kind is KnobKind.KERNEL:
            state = await self.kernel(where.host)
            found = [v for v, b in knob.builds.items() if kernel_mismatch(b, state) is None]
            return found[0] if len(found) == 1 else indistinct(found) if found else \
                state.label()
        # one read of every parameter the builds name, one of each `reports` setting
        names = tuple({p[0]: p for b in knob.builds.values() for p in b.params}.values())
        mod = await self.module(knob, where.host, Build(Method.MODPROBE, params=names))
        why = {r: await self._reports(where, Build(Method.MODPROBE, reports=r))
               for r in dict.fromkeys(b.reports for b in knob.builds.values()) if r is not None}
        found = [v for v, b in knob.builds.items() if module_mismatch(b, mod) is None
                 and (b.reports is None or why[b.reports] is None)]
        shown = " ".join(f"{k}={v}" for k, v in sorted(mod.params.items())) or "loaded"
        if len(found) > 1:
            return indistinct(found)
        return found[0] if found else shown if mod.loaded else "not loaded"

    # ---- switching ---------------------------------------------------------------------
    async def switch(self, knob: Knob, value: str, targets: Sequence[Target],
                     again: bool = False) -> dict[str, str]:
        """Every target on `value`'s build, at once; per host, what it reports. KnobRefused
        (naming the host and why) when one fails, after the others went back. `again`: a
        host on that build already boots (reloads) it again: a build alternation's stretch is
        one boot, whether its build changed or not."""
        build = knob.builds.get(value)
        if build is None:
            raise KnobRefused(f"knob {knob.name}: {value!r} is not one of its builds")
        before = await asyncio.gather(*(self.current(knob, t) for t in targets),
                                      return_exceptions=True)
        for t, old in zip(targets, before, strict=True):
            if isinstance(old, BaseException):
                raise KnobRefused(f"{t.host}: knob {knob.name}: cannot read its build: "
                                  f"{getattr(old, 'reason', old)} (nothing was changed)")
        await self._record(knob, targets, [str(b) for b in before])
        done = await asyncio.gather(*(self._one(knob, value, build, t, str(old), again)
                                      for t, old in zip(targets, before, strict=True)),
                                    return_exceptions=True)
        failed = [(t, r) for t, r in zip(targets, done, strict=True)
                  if isinstance(r, BaseException)]
        if not failed:
            return {t.host: str(r) for t, r in zip(targets, done, strict=True)}
        back = [(t, str(old)) for t, old, r in zip(targets, before, done, strict=True)
                if not isinstance(r, BaseException) and str(old) in knob.builds
                and str(old) != value]
        undone = await asyncio.gather(*(self._one(knob, old, knob.builds[old], t, value)
                                        for t, old in back), return_exceptions=True)
        stuck = [t.host for (t, _o), u in zip(back, undone, strict=True)
                 if isinstance(u, BaseException)]
        note = f"switched back on {len(back) - len(stuck)} other host(s)" if back else \
            "no other host was switched"
        if stuck:
            note += f"; could NOT switch back {', '.join(stuck)}"
        host, exc = failed[0]
        raise KnobRefused(f"{host.host}: knob {knob.name}={value!r} refused: "
                          f"{getattr(exc, 'reason', exc)} ({note})")

    async def _record(self, knob: Knob, targets: Sequence[Target], before: list[str]) -> None:
        """Each host's first build, journalled before anything changes (with a module's data
        interface as it is: what a reload must give back)."""
        for t, old in zip(targets, before, strict=True):
            if (t.host, knob.name) in self.originals:
                continue
            build = knob.builds.get(old)
            if build is None:
                build = await self._unlisted(knob, t, old)
            iface = await self._interface(t) if knob.kind is KnobKind.MODULE else None
            origin = Origin(knob.name, knob.kind, knob.key, old if old in knob.builds else "",
                            build, t.device, iface)
            self.originals[(t.host, knob.name)] = origin
            if self.journal is not None:
                self.journal.build(t.host, knob.name, record(origin))
            if self.emit is not None:
                self.emit(Event.of(events.Original(knob=knob.name, key=knob.key, value=old,
                                                   device=t.device, kind=str(knob.kind)),
                                   host=t.host))

    async def _unlisted(self, knob: Knob, t: Target, shown: str) -> Build:
        """How to come back to a first build none of the values is: a plain reboot (kexec,
        grub-reboot and nextboot leave the default boot alone) verified by its release."""
        if shown.endswith(INDISTINCT):
            raise KnobRefused(f"{t.host}: knob {knob.name}: the host runs {shown}: {TELL_APART} "
                              "(nothing was changed)")
        if knob.kind is KnobKind.MODULE or any(b.method is Method.COMMAND
                                               for b in knob.builds.values()):
            raise KnobRefused(f"{t.host}: knob {knob.name}: the host runs {shown}, which none "
                              "of its values is: add it as a value, so abtui can come back to "
                              "it (nothing was changed)")
        state = await self.kernel(t.host)
        return Build(Method.REBOOT, release=state.release or "")

    async def _interface(self, t: Target) -> Interface | None:
        if not t.device:
            return None
        cmds = self._commands(t.host)
        iface = cmds.parse_interface(await self._run(t.host, cmds.interface(t.device)), t.device)
        if iface is None:
            raise KnobRefused(f"{t.host}: cannot read interface {t.device} (nothing was changed)")
        return iface

    async def _one(self, knob: Knob, value: str, build: Build, t: Target, old: str,
                   again: bool = False) -> str:
        """One host onto `build`; what it reports once there (RemoteError why not)."""
        if old == value and not again:
            return value
        say = self._say(knob, value, build, t.host)
        say("booting")
        start = time.monotonic()
        try:
            if build.is_kernel:
                got = await self.boot(knob.name, value, build, t)
            else:
                got = await self.reload(knob, build, t)
        except (RemoteError, BadInput, OSError) as exc:
            say("failed", seconds=time.monotonic() - start,
                message=str(getattr(exc, "reason", exc)))
            raise
        say("up", seconds=time.monotonic() - start, build=got)
        return got

    def _say(self, knob: Knob, value: str, build: Build, host: str) -> Callable[..., None]:
        def say(stage: str, **more: object) -> None:
            if self.emit is not None:
                self.emit(Event.of(events.BuildSwitch(knob=knob.name, value=value,
                                                      method=str(build.method), stage=stage,
                                                      **more), host=host))  # type: ignore[arg-type]
        return say

    async def boot(self, knob: str, value: str, build: Build, t: Target) -> str:
        """Boot the host into `build` and wait for it; its release once verified."""
        link = self._link(t.host)
        before = link.boot_id
        deadline = time.monotonic() + build.timeout
        if build.method is Method.COMMAND:
            await self._power(knob, value, build, t, before)
        else:
            await self._run(t.host, self._commands(t.host).boot(build),
                            max(BOOT_START_S, build.timeout / 3), again=False)
        self.in_flight[(t.host, knob)] = (value, before)  # from here it may boot it any time
        try:
            await wait_new_boot(link, before, deadline, build.timeout)
        except RemoteError as exc:
            raise RemoteError(t.host, f"{exc.reason}; its boot was started: it may still come "
                                      f"up on {value!r} later") from exc
        del self.in_flight[(t.host, knob)]
        state = await self.kernel(t.host)
        why = kernel_mismatch(build, state)
        if why is not None:
            raise RemoteError(t.host, why)
        return state.label()

    async def _power(self, knob: str, value: str, build: Build, t: Target,
                     boot_id: str | None) -> None:
        values = {"host": t.host, "value": value, "release": build.release, "knob": knob,
                  "pair": t.pair}
        env = {"ABTUI_HOST": t.host, "ABTUI_VALUE": value, "ABTUI_RELEASE": build.release,
               "ABTUI_BOOT_ID": boot_id or ""}
        argv = command_argv(build.command, values)
        try:
            ran = await run_command(argv, build.command_timeout, env)
        except OSError as exc:
            raise RemoteError(t.host, f"cannot run {argv[0]}: {exc.strerror or exc}") from exc
        if ran.status is None:
            raise RemoteError(t.host, f"{argv[0]} did not end within "
                              f"{build.command_timeout:g} s (ended)")
        if ran.status != 0:
            said = f": {ran.last_line}" if ran.last_line else ""
            raise RemoteError(t.host, f"{argv[0]} exited {ran.status}{said}")

    async def reload(self, knob: Knob, build: Build, t: Target) -> str:
        """Reload the module as `build` says, the data interface given back; what it reports."""
        cmds = self._commands(t.host)
        iface = await self._interface(t)
        # the reload, the interface given back, the module and its `reports` setting read
        # again: one round trip
        dialect = self.dialects[t.host]
        read = None
        if build.reports is not None:
            s = _reported(build.reports, t)
            read = dialect.read_body(dialect.check_setting(s))
        command = cmds.reload_and_read(knob.key, build, iface, read)
        out, reported = cmds.split_reload(await self._run(t.host, command, build.timeout))
        state = cmds.parse_module_state(out)
        why = module_mismatch(build, state)
        if why is None and build.reports is not None:
            why = _reads(build.reports, s, dialect.parse_value(s, reported))
        if why is not None:
            raise RemoteError(t.host, why)
        shown = [f"{k}={v}" for k, v in sorted(state.params.items())]
        if build.srcversion:  # what proves which build of the module runs
            shown.append(f"srcversion {state.srcversion}")
        if build.reports is not None:
            shown.append(f"{build.reports.key} {build.reports.value}")
        return ", ".join(shown) or "loaded"

    # ---- back --------------------------------------------------------------------------
    async def restore_all(self) -> list[tuple[str, Origin, bool, str]]:
        """Every host back on its first build, at once: (host, its origin, ok, message)."""
        items = list(self.originals.items())
        done = await asyncio.gather(*(self.restore(o, host) for (host, _k), o in items),
                                    return_exceptions=True)
        out = []
        for ((host, knob), o), res in zip(items, done, strict=True):
            ok = not isinstance(res, BaseException)
            out.append((host, o, ok, "" if ok else str(getattr(res, "reason", res))))
            if ok:
                del self.originals[(host, knob)]
                if self.journal is not None:
                    self.journal.build_restored(host, knob)
        return out

    async def restore(self, o: Origin, host: str) -> str:
        """One host back on its first build (nothing done when it runs it); what it reports.
        A host whose boot into another build was started and not seen to end (it has not come
        back, or not booted again yet) is not set back: RemoteError, and its entry stays in
        the undo journal for `abtui recover` once it is up."""
        t = Target(host, o.device, "")
        started = self.in_flight.get((host, o.knob))
        if started is not None:
            link = self.links.get(host)
            up = link is not None and link.state is LinkState.CONNECTED
            if not up or link is None or not link.boot_id or link.boot_id == started[1]:
                why = "has not come back" if not up else "has not booted again"
                raise RemoteError(host, f"its boot into {started[0]!r} was started and it {why}: "
                                        f"it may come up on {started[0]!r} later; run `abtui "
                                        "recover` once it is up")
            del self.in_flight[(host, o.knob)]  # it booted since: whatever it runs, set back
        if o.kind is KnobKind.KERNEL:
            state = await self.kernel(host)
            if kernel_mismatch(o.build, state) is None:
                return state.label()
            knob = Knob(name=o.knob, kind=o.kind, values=(o.value or "first",), key=o.key)
            return await self._one(knob, o.value or state.label(), o.build, t, "")
        knob = Knob(name=o.knob, kind=o.kind, values=(o.value,), key=o.key)
        mod = await self.module(knob, host, o.build)
        if module_mismatch(o.build, mod) is None and await self._reports(t, o.build) is None:
            return "as it was"
        if o.iface is not None and await self._interface_gone(t):
            return await self._reload_with(knob, o, t)
        return await self._one(knob, o.value, o.build, t, "")

    async def _interface_gone(self, t: Target) -> bool:
        try:
            return await self._interface(t) is None
        except (KnobRefused, RemoteError):
            return True

    async def _reload_with(self, knob: Knob, o: Origin, t: Target) -> str:
        """A reload whose interface is gone (a crash mid-reload): given back as journalled."""
        await self._run(t.host, self._commands(t.host).reload(o.key, o.build, o.iface),
                        o.build.timeout)
        return "reloaded, interface given back as journalled"


INDISTINCT = "(its builds that cannot be told apart)"
TELL_APART = ("give each build something the host shows that differs (a `reports` setting, "
              "a parameter the module shows, a release or version)")


def indistinct(found: Sequence[str]) -> str:
    """What a host runs when several builds match what it shows (e1000e does not show its
    InterruptThrottleRate): their values, said to be alike rather than "none of them"."""
    return f"{' or '.join(repr(v) for v in found)} {INDISTINCT}"


def _reported(r: Reports, where: Target) -> Setting:
    """The setting a build's `reports` names, on the target's data device."""
    return Setting(KnobKind(r.kind), r.key, None if r.kind == "sysctl" else where.device)


def _reads(r: Reports, s: Setting, got: str | None) -> str | None:
    """Why the setting read `got` is not the build's (None: it is)."""
    return None if same_value(got, r.value) else f"{s.label()} reads {got}, expected {r.value}"


async def wait_new_boot(link: HostLink, before: str | None, deadline: float,
                        timeout: float) -> None:
    """Until the link is back on another boot (its own reconnects, or here for a link that
    does not reconnect); RemoteError when the deadline passes first."""
    while True:
        if link.state is LinkState.CONNECTED and link.boot_id and link.boot_id != before:
            return
        if time.monotonic() >= deadline:
            why = "did not reboot (same boot id)" if link.state is LinkState.CONNECTED else \
                "did not come back"
            raise RemoteError(link.alias, f"{why} within {timeout:g} s")
        if not link.reconnect and link.state in (LinkState.LOST, LinkState.FAILED):
            with contextlib.suppress(RemoteError, TimeoutError):
                await asyncio.wait_for(link.connect(), max(1.0, deadline - time.monotonic()))
        await asyncio.sleep(POLL_S)


def record(o: Origin) -> dict[str, object]:
    """A first build as the undo journal keeps it (`abtui recover` reads it back)."""
    iface = None if o.iface is None else {
        "name": o.iface.name, "mac": o.iface.mac, "mtu": o.iface.mtu, "up": o.iface.up,
        "addresses": list(o.iface.addresses)}
    return {"kind": str(o.kind), "key": o.key, "value": o.value, "device": o.device,
            "build": o.build.to_record(), "iface": iface}


def origin_of(knob: str, rec: Mapping[str, object]) -> Origin:
    """A journal's first build back (KeyError, TypeError or ValueError when it is damaged)."""
    build = rec["build"]
    iface = rec.get("iface")
    if not isinstance(build, dict):
        raise TypeError("build is a table")
    got = None
    if isinstance(iface, dict):
        got = Interface(str(iface["name"]), str(iface["mac"]), str(iface["mtu"]),
                        bool(iface["up"]), tuple(str(a) for a in iface["addresses"]))
    device = rec.get("device")
    return Origin(knob, KnobKind(str(rec["kind"])), str(rec["key"]), str(rec["value"]),
                  Build.from_record(build), None if device is None else str(device), got)
