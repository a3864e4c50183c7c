"""`abtui recover`: after a crash, set back what abtui changed on hosts.

Reads the undo journals left by abtui processes that are gone, reconnects to their hosts,
restores every original setting, removes every tunnel and ends every process group started,
printing one line per action. A journal whose actions all succeeded is deleted. Exit 0 when
everything was set back (or nothing was pending), 1 otherwise.
"""

from __future__ import annotations

import argparse
import asyncio
from collections.abc import Callable
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from abtui.remote.dialects import Dialect
    from abtui.remote.link import HostLink
    from abtui.undo import Pending

Say = Callable[[bool, str], None]


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--dry-run", action="store_true",
                        help="only list what would be set back")


def run(args: argparse.Namespace) -> int:
    from abtui.undo import pending_recovery

    pending = pending_recovery()
    if not pending:
        print("nothing to recover")
        return 0
    if args.dry_run:
        for p in pending:
            for line in describe(p):
                print(line)
        return 0
    ok = asyncio.run(recover_all(pending, _print))
    return 0 if ok else 1


def _print(ok: bool, line: str) -> None:
    print(f"{'ok  ' if ok else 'FAIL'} {line}", flush=True)


def describe(p: Pending) -> list[str]:
    """What a pending journal would set back, one line each."""
    out = [f"{h}: restore {key}{f' on {dev}' if dev else ''} = {v!r}"
           for (h, _k, key, dev), v in p.originals.items()]
    out += [f"{h}: remove tunnel {name}" for (h, name) in p.tunnels]
    out += [f"{h}: end process group {g} ({what or 'started by abtui'})"
            for (h, g), what in p.pgids.items()]
    return out


async def recover_all(pending: list[Pending], say: Say) -> bool:
    results = [await recover_one(p, say) for p in pending]
    return all(results)


async def recover_one(p: Pending, say: Say) -> bool:
    """Set back one journal's changes; True when all of them were."""
    from abtui.knobs import KnobManager
    from abtui.model import KnobKind
    from abtui.remote.dialects import Setting
    from abtui.remote.link import HostLink
    from abtui.tunnel_commands import down_command
    from abtui.undo import append_record

    involved = {h for h, *_ in p.originals} | {h for h, _ in p.tunnels} | \
        {h for h, _ in p.pgids}
    links = {}
    for alias in sorted(involved):
        rec = p.hosts.get(alias)
        links[alias] = HostLink(alias, ssh_config=rec.ssh_config if rec else None,
                                known_hosts=rec.known_hosts if rec else None,
                                sudo=bool(rec and rec.sudo), reconnect=False)
    ok = True
    dialects = {}
    reached = await asyncio.gather(*(_open(link) for link in links.values()))
    for alias, error in zip(links, reached, strict=True):
        if isinstance(error, str):
            say(False, f"{alias}: cannot reconnect: {error}")
            ok = False
        else:
            dialects[alias] = error
    try:
        manager = KnobManager(links, dialects)
        for (host, kind, key, dev), value in p.originals.items():
            if host not in dialects:
                continue
            s = Setting(KnobKind(kind), key, dev)
            try:
                await manager.write(host, s, value)
            except Exception as exc:  # one line per failure, go on with the rest
                say(False, f"{host}: could not restore {s.label()} = {value!r}: "
                    f"{getattr(exc, 'reason', exc)}")
                ok = False
                continue
            append_record(p.path, {"op": "restored", "host": host, "kind": kind, "key": key,
                                   "device": dev})
            say(True, f"{host}: restored {s.label()} = {value!r}")
        for (host, name), tunnel in p.tunnels.items():
            if host not in dialects:
                continue
            result = await links[host].run(down_command(tunnel))
            if result.ok:
                append_record(p.path, {"op": "tunnel_down", "host": host, "ifname": name})
            say(result.ok, f"{host}: removed tunnel {name} ({tunnel.get('type')})" if result.ok
                else f"{host}: could not remove tunnel {name}: {result.stderr.strip()}")
            ok = ok and result.ok
        # all groups at once: each may take its grace period to end
        ended = await asyncio.gather(*(
            _end_group(p, links[host], pgid, what, say)
            for (host, pgid), what in p.pgids.items() if host in dialects))
        ok = ok and all(ended)
    finally:
        await asyncio.gather(*(link.close() for link in links.values()),
                             return_exceptions=True)
    if ok:
        p.path.unlink(missing_ok=True)
    return ok


async def _end_group(p: Pending, link: HostLink, pgid: int, what: str, say: Say) -> bool:
    """End one process group abtui started; True when it is gone."""
    from abtui.remote.link import group_alive_command
    from abtui.undo import append_record

    host = link.alias
    if not await _group_runs(link, pgid, what):
        append_record(p.path, {"op": "pgid_gone", "host": host, "pgid": pgid})
        say(True, f"{host}: process group {pgid} ({what or 'abtui'}) had already ended")
        return True
    await link.kill_group(pgid)
    alive = await link.run(group_alive_command(pgid))
    if not alive.ok:
        append_record(p.path, {"op": "pgid_gone", "host": host, "pgid": pgid})
    say(not alive.ok, f"{host}: ended process group {pgid} ({what or 'abtui'})"
        if not alive.ok else f"{host}: process group {pgid} is still running")
    return not alive.ok


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
    from abtui.errors import AbtuiError
    from abtui.remote.hosts import detect_dialect

    try:
        await link.connect()
        return await detect_dialect(link)
    except AbtuiError as exc:
        return getattr(exc, "reason", str(exc))
