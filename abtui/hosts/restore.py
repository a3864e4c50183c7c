"""Setting everything back: processes ended, tunnels removed, knobs restored, the undo journal
closed or finished. The one restorer of abtui's hosts.

A live session sets back through `set_back` (the knob layer's restore, from the engine's
shutdown, which the console's guard and ctrl+q run too), ends what a dropped link left on a
host through `Orphans`, and settles the journal with `settle_journal`. After a crash,
`abtui recover` sets back what the undo journals left with `recover_all` (it only parses
arguments and prints).
"""

from __future__ import annotations

import asyncio
import contextlib
import time
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field

from abtui.core.errors import AbtuiError, LeaseHeld, RemoteError
from abtui.core.model import KnobKind
from abtui.hosts.builds import origin_of
from abtui.hosts.connect import detect_dialect
from abtui.hosts.knobs import KnobManager
from abtui.hosts.leftovers import is_recorded_group
from abtui.hosts.tunnels import TunnelManager
from abtui.hosts.undo import (
    Pending,
    UndoJournal,
    append_record,
    forget_host,
    left_on,
    read_journal,
)
from abtui.hosts.undo_records import (
    BuildRestored,
    BuildSaved,
    GroupGone,
    Restored,
    TunnelDown,
)
from abtui.remote.link import HostLink
from abtui.remote.os.dialect import Dialect, Setting, same_value
from abtui.remote.os.pick import tunnels_of
from abtui.remote.streams import RemoteProcess, group_alive_command

# How `abtui recover` reports: (done, one line).
Say = Callable[[bool, str], None]


async def set_back(knobs: KnobManager | None = None, tunnels: TunnelManager | None = None,
                   journal: UndoJournal | None = None,
                   processes: Iterable[RemoteProcess] = ()) -> list[str]:
    """Undo what this session changed; returns one line per failure (empty: all set back).
    The journal is removed only when everything was set back, else kept for `abtui recover`."""
    failures: list[str] = []
    procs = list(processes)
    ended = await asyncio.gather(*(p.terminate() for p in procs), return_exceptions=True)
    for proc, res in zip(procs, ended, strict=True):
        if isinstance(res, BaseException):
            failures.append(f"{proc.link.alias}: could not end {proc.command[:40]!r}: {res}")
        elif journal is not None and proc.pgid is not None:
            journal.forget_pgid(proc.link.alias, proc.pgid)
    if tunnels is not None:
        try:
            await tunnels.down_all()
        except Exception as exc:  # reported, and the knobs are still restored
            failures.append(str(exc))
    if knobs is not None:
        failures += [f"{r.host}: could not restore {r.setting.label()}: {r.message}"
                     for r in await knobs.restore_all() if not r.ok and r.left is None]
    settle_journal(journal, left=bool(failures))
    return failures


def settle_journal(journal: UndoJournal | None, *, left: bool) -> None:
    """The journal kept (closed) when something is `left` for `abtui recover`, else removed."""
    if journal is None:
        return
    if left:
        journal.close()
    else:
        journal.finish()


def rebooted(before: str | None, now: str | None) -> bool:
    """Did the host boot again between two connects (both boots known and different)?"""
    return before is not None and now is not None and before != now


class Orphans:
    """Process groups left on hosts whose link dropped (a run's iperf3 or ping), ended once the
    link is back. A host that rebooted meanwhile lost them with the reboot, and a group of
    that number now is someone else's: it is forgotten, never killed."""
    def __init__(self) -> None:
        self._left: list[tuple[HostLink, int, str | None]] = []  # link, pgid, its boot then

    def add(self, link: HostLink, pgid: int) -> None:
        """`pgid` was left on `link`'s host (its link dropped while the group ran)."""
        self._left.append((link, pgid, link.boot_id))

    def on(self, link: HostLink) -> bool:
        """Is anything left on `link`'s host?"""
        return any(o[0] is link for o in self._left)

    @property
    def links(self) -> list[HostLink]:
        """The links with something left, each once."""
        return list(dict.fromkeys(o[0] for o in self._left))

    def __bool__(self) -> bool:
        return bool(self._left)

    async def end(self, link: HostLink, journal: UndoJournal | None) -> None:
        """End what was left on `link`'s host (its link is back), forgetting it in the
        journal either way."""
        mine = [o for o in self._left if o[0] is link]
        self._left = [o for o in self._left if o[0] is not link]
        for _, pgid, boot in mine:
            with contextlib.suppress(RemoteError):
                if not rebooted(boot, link.boot_id):
                    await link.kill_group(pgid)
                if journal is not None:
                    journal.forget_pgid(link.alias, pgid)


def describe(p: Pending, forget: list[str] | tuple[str, ...] = ()) -> list[str]:
    """What a pending journal would set back, one line each; a forgotten host's in one."""
    out = [f"{h}: forget {left_on([p], h)} (the host is not contacted)"
           for h in p.involved if h in forget]
    out += [f"{h}: restore {key}{f' on {dev}' if dev else ''} = {v!r}"
            for (h, _k, key, dev), v in p.originals.items() if h not in forget]
    out += [f"{h}: remove tunnel {name}" for (h, name) in p.tunnels if h not in forget]
    out += [f"{h}: end process group {g} ({what or 'started by abtui'})"
            for (h, g), what in p.pgids.items() if h not in forget]
    out += [f"{h}: back on {rec.value or 'the build it ran'} ({k})"
            for (h, k), rec in p.builds.items() if h not in forget]
    out += [k.line for k in p.skipped if k.host not in forget]
    return out


@dataclass(slots=True)
class _Left:
    """What could not be done, per host: one line each at the end."""
    problems: dict[str, list[str]] = field(default_factory=dict)
    busy: set[str] = field(default_factory=set)  # hosts another live abtui drives

    def add(self, host: str, what: str) -> None:
        self.problems.setdefault(host, []).append(what)


async def recover_all(pending: list[Pending], say: Say, *, forget: list[str] | tuple[str, ...] = (),
                      forget_unreachable: bool = False) -> bool:
    """Set back every journal's changes, newest journal first (an older journal holds the
    older, truer original of a setting both touched), reaching each host once. True when
    nothing is left."""
    journals = sorted(pending, key=lambda p: p.path.name, reverse=True)
    for host in dict.fromkeys(forget):
        say(True, f"{host}: forgot {left_on(journals, host)} (the host was not contacted)")
        forget_host(journals, host)
    involved = sorted({h for p in journals for h in p.involved})
    links = _links(journals, involved)
    left = _Left()
    skipped = [k for p in journals for k in p.skipped]
    for k in skipped:  # the rest is still set back
        say(False, k.line + (" (the journal is kept for an abtui that knows it)"
                             if k.keep else ""))
    try:
        dialects = await _reach(links, journals, left, say, forget_unreachable)
        for p in journals:
            await _recover_journal(p, links, dialects, left, say)
    finally:
        await asyncio.gather(*(link.close() for link in links.values()),
                             return_exceptions=True)
    for host, problems in left.problems.items():
        gone = "" if host in left.busy else \
            f" (if {host} is gone for good: `abtui recover --forget {host}`)"
        say(False, f"{host}: {'; '.join(problems)}{gone}")
    for p in journals:
        if read_journal(p.path).empty:
            p.path.unlink(missing_ok=True)
    return not (left.problems or skipped)


def _links(journals: list[Pending], hosts: list[str]) -> dict[str, HostLink]:
    """One link per host, as the newest journal that names it says to reach it."""
    links = {}
    for alias in hosts:
        rec = next((p.hosts[alias] for p in journals if alias in p.hosts), None)
        links[alias] = HostLink(alias, ssh_config=rec.ssh_config if rec else None,
                                known_hosts=rec.known_hosts if rec else None,
                                sudo=bool(rec and rec.sudo), reconnect=False, lease=True)
    return links


async def _reach(links: dict[str, HostLink], journals: list[Pending], left: _Left, say: Say,
                 forget_unreachable: bool) -> dict[str, Dialect]:
    """Connect to every host at once; each one's dialect. A host that cannot be reached is
    reported (or, with --forget-unreachable, forgotten)."""
    dialects = {}
    reached = await asyncio.gather(*(_open(link) for link in links.values()))
    for alias, got in zip(links, reached, strict=True):
        if isinstance(got, LeaseHeld):  # reachable, only busy: never forgotten for it
            left.busy.add(alias)
            left.add(alias, f"busy: {got.reason}; {left_on(journals, alias)} left (run `abtui "
                     "recover` again once that run has ended)")
            continue
        if not isinstance(got, str):
            dialects[alias] = got
            continue
        entries = left_on(journals, alias)
        if forget_unreachable:
            forget_host(journals, alias)
            say(True, f"{alias}: cannot reconnect ({got}); forgot {entries}")
        else:
            left.add(alias, f"cannot reconnect ({got}): {entries} left")
    return dialects


async def _recover_journal(p: Pending, links: dict[str, HostLink],
                           dialects: dict[str, Dialect], left: _Left, say: Say) -> None:
    """Set back one journal's changes on the hosts that were reached."""
    manager = KnobManager(links, dialects)
    for (host, kind, key, dev), value in p.originals.items():
        if host in dialects:
            await _restore(p, manager, (host, kind, key, dev), value, left, say)
    for (host, name), tunnel in p.tunnels.items():
        if host not in dialects:
            continue
        try:
            end = tunnel.end()
            result = await links[host].run(tunnels_of(end).down(end))
        except AbtuiError as exc:  # the link dropped meanwhile
            left.add(host, f"could not remove tunnel {name}: {getattr(exc, 'reason', exc)}")
            continue
        if result.ok:
            append_record(p.path, TunnelDown(host, name))
            say(True, f"{host}: removed tunnel {name} ({tunnel.type})")
        else:
            left.add(host, f"could not remove tunnel {name}: "
                     f"{result.stderr.strip() or f'exit {result.exit_status}'}")
    # all groups at once: each may take its grace period to end
    await asyncio.gather(*(_end_group(p, links[host], pgid, what, left, say)
                           for (host, pgid), what in p.pgids.items() if host in dialects))
    # last: a host's first build (a boot loses what was set back before it anyway)
    await asyncio.gather(*(_build_back(p, manager, host, knob, rec, left, say)
                           for (host, knob), rec in p.builds.items() if host in dialects))


async def _build_back(p: Pending, manager: KnobManager, host: str, knob: str,
                      rec: BuildSaved, left: _Left, say: Say) -> None:
    """One host back on the build it ran before abtui first switched it, verified."""
    try:
        origin = origin_of(knob, rec.origin())
    except (KeyError, TypeError, ValueError):
        left.add(host, f"the journal's first build of {knob} is damaged: boot it by hand")
        return
    try:
        got = await manager.builds.restore(origin, host)
    except Exception as exc:  # reported; the rest goes on
        left.add(host, f"could not go back to {origin.shown} ({knob}): "
                 f"{getattr(exc, 'reason', exc)}")
        return
    append_record(p.path, BuildRestored(host, knob))
    say(True, f"{host}: back on {origin.shown} ({knob}: {got})")


async def _restore(p: Pending, manager: KnobManager, ident: tuple[str, str, str, str | None],
                   value: str, left: _Left, say: Say) -> None:
    """Write one original back, reading the setting first: a value that is no longer abtui's
    (one the live session found set by someone else, or one abtui never wrote, when the
    journal says what it wrote) is left as it is and said in one line. A write that is
    refused while the host holds the original anyway (a read-only setting abtui never
    changed) counts as done."""
    host, kind, key, dev = ident
    s = Setting(KnobKind(kind), key, dev)
    try:
        now: str | None = await manager.read(host, s)
    except Exception:  # cannot say: the write below tells
        now = None
    foreign = _foreign(p, ident, now)
    if foreign:
        append_record(p.path, Restored(host, kind, key, dev, left=now))
        say(True, f"{host}: left {s.label()} = {now!r} as it is: {foreign} (its original "
                  f"was {value!r})")
        return
    if same_value(now, value):
        done = f"{s.label()} already is {value!r}"
    else:
        try:
            await manager.write(host, s, value)
            done = f"restored {s.label()} = {value!r}"
        except Exception as exc:  # reported; the rest goes on
            why = getattr(exc, "reason", str(exc))
            left.add(host, f"could not restore {s.label()} = {value!r}: {why}")
            return
    append_record(p.path, Restored(host, kind, key, dev))
    say(True, f"{host}: {done}")


def _foreign(p: Pending, ident: tuple[str, str, str, str | None], now: str | None) -> str:
    """Why the value `now` is someone else's, not abtui's ("" when it is abtui's, or cannot
    be told): the live session found it set by someone else, or the journal lists every value
    abtui wrote there and `now` is none of them (nor the original)."""
    if now is None or same_value(now, p.originals.get(ident)):
        return ""
    if same_value(now, p.foreign.get(ident)):
        return "set by someone else during the session, recorded as drift"
    wrote = p.written.get(ident)
    if wrote and not any(same_value(now, w) for w in wrote):
        return (f"not a value abtui set ({', '.join(repr(w) for w in wrote)}): someone else "
                "changed it since")
    return ""


async def _end_group(p: Pending, link: HostLink, pgid: int, what: str, left: _Left,
                     say: Say) -> None:
    """End one process group abtui started."""
    host, name = link.alias, f"process group {pgid} ({what or 'abtui'})"
    started = p.started.get((host, pgid))
    age = None if started is None else max(0.0, time.time() - started)
    try:
        if not await is_recorded_group(link, pgid, what, age):
            append_record(p.path, GroupGone(host, pgid))
            say(True, f"{host}: {name} had already ended")
            return
        await link.kill_group(pgid)
        alive = await link.run(group_alive_command(pgid))
    except AbtuiError as exc:  # the link dropped meanwhile
        left.add(host, f"could not end {name}: {getattr(exc, 'reason', exc)}")
        return
    if alive.ok:
        left.add(host, f"{name} is still running")
        return
    append_record(p.path, GroupGone(host, pgid))
    say(True, f"{host}: ended {name}")


async def _open(link: HostLink) -> Dialect | LeaseHeld | str:
    """The host's dialect once connected, or the one-line reason it is not (LeaseHeld:
    another abtui drives it)."""
    try:
        await link.connect()
        return await detect_dialect(link)
    except LeaseHeld as exc:
        return exc
    except Exception as exc:  # any reason is one host's, the rest goes on
        return str(getattr(exc, "reason", "") or exc)
