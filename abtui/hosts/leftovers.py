"""No flow but ours: before a session measures, the processes a dead controller's undo
journal records on its hosts (iperf3 client and server, ping) are ended, or the session
refuses to measure beside them.

A controller killed with SIGKILL leaves its runs going: an `iperf3 -c … -t 3600` keeps
sending on the data link, and a new session would measure beside it (on the next port, its
numbers shared with a flow nobody watches). So once the new session holds the hosts' leases
(a live controller's hosts are never touched: abtui.remote.lease), every process group a dead
controller's journal (abtui.hosts.undo) still lists on one of these hosts is checked: it is
ended only when it is the very group recorded, by its number (never by a program's name) and
verified there: a member runs the recorded program and the group's oldest member started
when the journal says it did (within `SAME_START_S`, on the controller's clock: the host's
elapsed time, so a host clock set otherwise does not matter). A number reused since (the
host rebooted, another program) is left alone and struck off. Each one ended is said in one
line; one that cannot be ended makes the session refuse, in one line naming them, before
anything is changed.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from pathlib import Path

from abtui.core.errors import AbtuiError
from abtui.core.model import LinkState
from abtui.hosts.undo import Pending, append_record, pending_recovery
from abtui.hosts.undo_records import GroupGone
from abtui.remote.link import HostLink
from abtui.remote.streams import group_alive_command, program_of, same_group_command


@dataclass(frozen=True, slots=True)
class Leftover:
    """A process group a dead controller's journal records on a host."""

    journal: Pending
    host: str
    pgid: int
    what: str
    started: float | None  # the controller's time.time() when it was recorded

    @property
    def name(self) -> str:
        writer = f"pid {self.journal.pid}" if self.journal.pid is not None else "its pid unknown"
        return f"{self.what or 'a process'} (process group {self.pgid}, left by a dead abtui, " \
               f"{writer})"


async def is_recorded_group(link: HostLink, pgid: int, what: str, age: float | None) -> bool:
    """Is process group `pgid` on `link`'s host still the one recorded (same_group_command)?
    A group neither a program nor a start time tells apart is never taken for it."""
    if not program_of(what) and age is None:
        return False
    return (await link.run(same_group_command(pgid, what, age))).ok


def leftovers_on(hosts: Mapping[str, HostLink], directory: Path | None = None
                 ) -> list[Leftover]:
    """The process groups dead controllers' journals still list on these hosts, the iperf3
    clients first: the flows themselves end first, not through their servers' end."""
    found = [Leftover(p, host, pgid, what, p.started.get((host, pgid)))
             for p in pending_recovery(directory)
             for (host, pgid), what in p.pgids.items() if host in hosts]
    return sorted(found, key=lambda left: "client" not in left.what)


async def end_leftovers(links: Mapping[str, HostLink], say: Callable[[str, str], None],
                        directory: Path | None = None) -> None:
    """End every verified leftover on the connected `links`, each said (`say(host, line)`);
    AbtuiError naming those still running. Each one ended, or found gone (or its number
    someone else's now), is struck off its journal."""
    stuck: list[str] = []
    now = time.time()
    for left in leftovers_on(links, directory):
        link = links[left.host]
        if link.state is not LinkState.CONNECTED:
            continue  # nothing is measured there either
        age = None if left.started is None else max(0.0, now - left.started)
        try:
            ours = await is_recorded_group(link, left.pgid, left.what, age)
            if ours:
                await link.kill_group(left.pgid)
                ours = (await link.run(group_alive_command(left.pgid))).ok
                if ours:
                    stuck.append(f"{left.host}: {left.name}")
                    continue
                say(left.host, f"{left.host}: ended {left.name} before measuring")
        except AbtuiError as exc:
            stuck.append(f"{left.host}: {left.name} ({getattr(exc, 'reason', exc)})")
            continue
        append_record(left.journal.path, GroupGone(left.host, left.pgid))
    if stuck:
        raise AbtuiError(f"{'; '.join(stuck)} still running: nothing was measured beside it "
                         "(end it, or run `abtui recover`)")
