"""`abtui recover`: after a crash, set back what abtui changed on hosts.

Reads the undo journals left by abtui processes that are gone, reconnects to their hosts (each
once), restores every original setting, removes every tunnel and ends every process group
started, printing one line per action done and one line per host for what could not be done.
`--forget HOST` drops a host's entries without touching it (a host that is gone for good),
`--forget-unreachable` does so for every host that cannot be reached. A journal left with
nothing to do is deleted. Exit 0 when everything was set back or forgotten (or nothing was
pending), 1 when something is left, 2 for a bad argument.
"""

from __future__ import annotations

import argparse
import asyncio
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from abtui.core.errors import EXIT_FAILED, EXIT_OK, AbtuiError, BadInput

if TYPE_CHECKING:
    from abtui.hosts.knobs import KnobManager
    from abtui.hosts.undo import Pending
    from abtui.remote.dialect import Dialect
    from abtui.remote.link import HostLink

Say = Callable[[bool, str], None]


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.description = (
        "After a crash (or a run whose hosts could not be set back), restore the knobs, remove "
        "the tunnels and end the processes an earlier abtui left on hosts, from its undo "
        "journal. One line per action; one line per host for what could not be done.")
    parser.epilog = (
        "Exit codes: 0 everything set back or forgotten (or nothing pending), 1 something "
        "could not be set back (the journal keeps it; run again later), 2 bad arguments.")
    parser.add_argument("--dry-run", action="store_true",
                        help="only list what would be set back (and forgotten)")
    parser.add_argument("--forget", action="append", default=[], metavar="HOST",
                        help="drop HOST's entries without contacting it, for a host that is "
                             "gone for good (a lab taken down); repeatable")
    parser.add_argument("--forget-unreachable", action="store_true",
                        help="drop the entries of every host that cannot be reached, after "
                             "trying it")


def run(args: argparse.Namespace) -> int:
    from abtui.hosts.undo import pending_recovery

    pending = pending_recovery()
    if not pending:
        print("nothing to recover")
        return EXIT_OK
    known = sorted({h for p in pending for h in p.involved})
    for host in args.forget:
        if host not in known:
            raise BadInput(f"--forget {host}: no pending change names host {host!r} "
                           f"(pending: {', '.join(known)})")
    if args.dry_run:
        for p in pending:
            for line in describe(p, args.forget):
                print(line)
        return EXIT_OK
    ok = asyncio.run(recover_all(pending, _print, forget=args.forget,
                                 forget_unreachable=args.forget_unreachable))
    return EXIT_OK if ok else EXIT_FAILED


def _print(ok: bool, line: str) -> None:
    print(f"{'ok  ' if ok else 'FAIL'} {line}", flush=True)


def describe(p: Pending, forget: list[str] | tuple[str, ...] = ()) -> list[str]:
    """What a pending journal would set back, one line each; a forgotten host's in one."""
    from abtui.hosts.undo import left_on

    out = [f"{h}: forget {left_on([p], h)} (the host is not contacted)"
           for h in p.involved if h in forget]
    out += [f"{h}: restore {key}{f' on {dev}' if dev else ''} = {v!r}"
            for (h, _k, key, dev), v in p.originals.items() if h not in forget]
    out += [f"{h}: remove tunnel {name}" for (h, name) in p.tunnels if h not in forget]
    out += [f"{h}: end process group {g} ({what or 'started by abtui'})"
            for (h, g), what in p.pgids.items() if h not in forget]
    return out


@dataclass(slots=True)
class _Left:
    """What could not be done, per host: one line each at the end."""

    problems: dict[str, list[str]] = field(default_factory=dict)

    def add(self, host: str, what: str) -> None:
        self.problems.setdefault(host, []).append(what)


async def recover_all(pending: list[Pending], say: Say, *, forget: list[str] | tuple[str, ...] = (),
                      forget_unreachable: bool = False) -> bool:
    """Set back every journal's changes, newest journal first (an older journal holds the
    older, truer original of a setting both touched), reaching each host once. True when
    nothing is left."""
    from abtui.hosts.undo import forget_host, left_on, read_journal

    journals = sorted(pending, key=lambda p: p.path.name, reverse=True)
    for host in dict.fromkeys(forget):
        say(True, f"{host}: forgot {left_on(journals, host)} (the host was not contacted)")
        forget_host(journals, host)
    involved = sorted({h for p in journals for h in p.involved})
    links = _links(journals, involved)
    left = _Left()
    try:
        dialects = await _reach(links, journals, left, say, forget_unreachable)
        for p in journals:
            await _recover_journal(p, links, dialects, left, say)
    finally:
        await asyncio.gather(*(link.close() for link in links.values()),
                             return_exceptions=True)
    for host, problems in left.problems.items():
        say(False, f"{host}: {'; '.join(problems)} (if {host} is gone for good: "
            f"`abtui recover --forget {host}`)")
    for p in journals:
        if read_journal(p.path).empty:
            p.path.unlink(missing_ok=True)
    return not left.problems


def _links(journals: list[Pending], hosts: list[str]) -> dict[str, HostLink]:
    """One link per host, as the newest journal that names it says to reach it."""
    from abtui.remote.link import HostLink

    links = {}
    for alias in hosts:
        rec = next((p.hosts[alias] for p in journals if alias in p.hosts), None)
        links[alias] = HostLink(alias, ssh_config=rec.ssh_config if rec else None,
                                known_hosts=rec.known_hosts if rec else None,
                                sudo=bool(rec and rec.sudo), reconnect=False)
    return links


async def _reach(links: dict[str, HostLink], journals: list[Pending], left: _Left, say: Say,
                 forget_unreachable: bool) -> dict[str, Dialect]:
    """Connect to every host at once; each one's dialect. A host that cannot be reached is
    reported (or, with --forget-unreachable, forgotten)."""
    from abtui.hosts.undo import forget_host, left_on

    dialects = {}
    reached = await asyncio.gather(*(_open(link) for link in links.values()))
    for alias, got in zip(links, reached, strict=True):
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
    from abtui.hosts.knobs import KnobManager
    from abtui.hosts.tunnel_commands import down_command
    from abtui.hosts.undo import append_record

    manager = KnobManager(links, dialects)
    for (host, kind, key, dev), value in p.originals.items():
        if host in dialects:
            await _restore(p, manager, (host, kind, key, dev), value, left, say)
    for (host, name), tunnel in p.tunnels.items():
        if host not in dialects:
            continue
        try:
            result = await links[host].run(down_command(tunnel))
        except AbtuiError as exc:  # the link dropped meanwhile
            left.add(host, f"could not remove tunnel {name}: {getattr(exc, 'reason', exc)}")
            continue
        if result.ok:
            append_record(p.path, {"op": "tunnel_down", "host": host, "ifname": name})
            say(True, f"{host}: removed tunnel {name} ({tunnel.get('type')})")
        else:
            left.add(host, f"could not remove tunnel {name}: "
                     f"{result.stderr.strip() or f'exit {result.exit_status}'}")
    # all groups at once: each may take its grace period to end
    await asyncio.gather(*(_end_group(p, links[host], pgid, what, left, say)
                           for (host, pgid), what in p.pgids.items() if host in dialects))


async def _restore(p: Pending, manager: KnobManager, ident: tuple[str, str, str, str | None],
                   value: str, left: _Left, say: Say) -> None:
    """Write one original back. A write that is refused while the host holds the original
    anyway (a read-only setting abtui never changed) counts as done."""
    from abtui.core.model import KnobKind
    from abtui.hosts.undo import append_record
    from abtui.remote.dialect import Setting, same_value

    host, kind, key, dev = ident
    s = Setting(KnobKind(kind), key, dev)
    try:
        await manager.write(host, s, value)
        done = f"restored {s.label()} = {value!r}"
    except Exception as exc:  # reported; the rest goes on
        why = getattr(exc, "reason", str(exc))
        try:
            now = await manager.read(host, s)
        except Exception:  # the write's reason is the one to give
            now = None
        if not same_value(now, value):
            left.add(host, f"could not restore {s.label()} = {value!r}: {why}")
            return
        done = f"{s.label()} already is {value!r}"
    append_record(p.path, {"op": "restored", "host": host, "kind": kind, "key": key,
                           "device": dev})
    say(True, f"{host}: {done}")


async def _end_group(p: Pending, link: HostLink, pgid: int, what: str, left: _Left,
                     say: Say) -> None:
    """End one process group abtui started."""
    from abtui.hosts.undo import append_record
    from abtui.remote.streams import group_alive_command

    host, name = link.alias, f"process group {pgid} ({what or 'abtui'})"
    try:
        if not await _group_runs(link, pgid, what):
            append_record(p.path, {"op": "pgid_gone", "host": host, "pgid": pgid})
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
    append_record(p.path, {"op": "pgid_gone", "host": host, "pgid": pgid})
    say(True, f"{host}: ended {name}")


async def _group_runs(link: HostLink, pgid: int, what: str) -> bool:
    """Does process group `pgid` still run `what`? (A reused number is left alone.)"""
    from shlex import quote

    prog = what.split()[0].rsplit("/", 1)[-1] if what.strip() else ""
    test = f"$1=={int(pgid)}" + (" && $2==w" if prog else "")
    result = await link.run(f"ps -A -o pgid= -o comm= | awk -v w={quote(prog)} "
                            f"'{test} {{f=1}} END {{exit !f}}'")
    return result.ok


async def _open(link: HostLink) -> Dialect | str:
    """The host's dialect once connected, or the one-line reason it is not."""
    from abtui.hosts.connect import detect_dialect

    try:
        await link.connect()
        return await detect_dialect(link)
    except Exception as exc:  # any reason is one host's, the rest goes on
        return str(getattr(exc, "reason", "") or exc)
