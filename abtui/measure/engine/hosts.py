"""The engine's host pool: links opened once, what each host has (iperf3's version, bash,
stdbuf), link states reported, and processes left on a host whose link dropped (orphans,
abtui.hosts.restore.Orphans), ended once the link is back.

Every link takes its host's lease (abtui.remote.lease): nothing is changed on any host when
another abtui drives one of them, or when one host's key is in doubt; every host reached is
recorded in the undo journal before any knob is set, so `abtui recover` can reach it after a
crash. Once the leases are held, what a dead controller's journal still lists on these hosts
(its iperf3 and ping) is ended, or the session refuses (abtui.hosts.leftovers).
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from dataclasses import asdict
from typing import TYPE_CHECKING

from abtui.core import events
from abtui.core.cpu import SHARED as CPU_SHARED_SCOPE
from abtui.core.errors import AbtuiError
from abtui.core.events import Event
from abtui.core.model import LinkState, Profile
from abtui.hosts.connect import held_line, open_hosts, probe_tunnels
from abtui.hosts.leftovers import end_leftovers
from abtui.hosts.restore import Orphans
from abtui.hosts.undo import HostRecord, UndoJournal
from abtui.measure.ports import Emit
from abtui.measure.tasks import Tasks
from abtui.remote.iperf_cmd import install_hint, parse_tools, tools_command
from abtui.remote.link import HostLink
from abtui.remote.os.dialect import Dialect

if TYPE_CHECKING:  # types only: the objects are handed in by their owner
    from abtui.measure.phase_book import PhaseBook


OnState = Callable[[HostLink, LinkState, str], None]


class HostPool:
    """The session's hosts; see the module docstring."""

    def __init__(self, profile: Profile, book: PhaseBook, emit: Emit, tasks: Tasks, *,
                 journal: UndoJournal | None = None, use_journal: bool = True) -> None:
        self.profile = profile
        self._book = book
        self._emit = emit
        self._tasks = tasks
        self.links: dict[str, HostLink] = {}
        self.dialects: dict[str, Dialect] = {}
        # originals, tunnels and process groups, for `abtui recover` after a crash
        self.journal = journal
        self._use_journal = use_journal
        # (host, iperf3 program) -> its version, None when it is not there
        self.iperf_versions: dict[tuple[str, str], tuple[int, int] | None] = {}
        self.has_bash: dict[str, bool] = {}
        self.has_stdbuf: dict[str, bool] = {}
        self.has_perf: dict[str, bool] = {}
        self.has_sockperf: dict[str, bool] = {}
        # hosts whose CPUs are a machine's shared with other hosts (namespace hosts)
        self.cpu_shared: set[str] = set()
        self.orphans = Orphans()

    # ---- connecting ---------------------------------------------------------------------
    async def connect(self, on_state: OnState) -> None:
        """Open every host's link (`on_state` hears each change of one); nothing is changed
        on any host when one host's key is in doubt (AbtuiError). Every host reached is
        recorded in the undo journal before any knob is set."""
        hosts = await open_hosts(self.profile, on_state=on_state)
        self.links, self.dialects = hosts.links, hosts.dialects
        if hosts.held or hosts.unleased:  # another abtui drives them: one controller per host
            await self.close()
            self.links = {}
            why = "(one abtui drives a host at a time; wait for it to end)" if hosts.held \
                else "(remove what is at the lease's name)"
            raise AbtuiError(f"{held_line(hosts.held, hosts.unleased)}: nothing was changed "
                             f"on any host {why}")
        doubted = [f"{a}: {hosts.errors.get(a) or link.hostkey_problem}"
                   for a, link in hosts.links.items() if link.hostkey_problem]
        if doubted:  # a host that may not be the one meant: touch no host at all
            await self.close()
            self.links = {}
            raise AbtuiError("; ".join(doubted) + "; nothing was changed on any host "
                             "(update known_hosts if the new key is expected)")
        try:  # no flow but ours: a dead controller's runs end before anything is measured
            await end_leftovers({a: link for a, link in self.links.items()
                                 if self.connected(a)}, self._said)
        except AbtuiError:
            await self.close()
            self.links = {}
            raise
        await probe_tunnels(self.profile, hosts)
        for alias, facts in hosts.facts.items():
            self._emit(Event.of(events.Facts(facts=asdict(facts)), host=alias))
            if facts.cpu_scope == CPU_SHARED_SCOPE:
                self.cpu_shared.add(alias)
        for alias, link in hosts.links.items():
            if link.lease_note:
                self._emit(Event.of(events.Error(message=f"{alias}: {link.lease_note}"),
                                    host=alias))
        for alias, message in hosts.errors.items():
            text = message if alias in message else f"{alias}: {message}"
            self._emit(Event.of(events.Error(message=text), host=alias))
        programs = {(alias, self._book.options(pair).iperf3) for pair in self.profile.pairs
                    for alias in (pair.sender, pair.receiver)}
        await asyncio.gather(*(self._detect(self.links[alias], program)
                               for alias, program in sorted(programs)
                               if self.connected(alias)))
        if self.journal is None and self._use_journal:
            self.journal = UndoJournal()
        if self.journal is not None:  # how `abtui recover` reaches every host it may touch
            for link in self.links.values():
                self.journal.host(HostRecord(link.alias, link.ssh_config, link.known_hosts,
                                             link.sudo))

    def _said(self, alias: str, line: str) -> None:
        """A note of what was done on a host before measuring (a mark on its timeline)."""
        self._emit(Event.of(events.Mark(text=line.removeprefix(f"{alias}: ")), host=alias))

    def connected(self, alias: str) -> bool:
        link = self.links.get(alias)
        return link is not None and link.state is LinkState.CONNECTED

    def link_changed(self, link: HostLink, state: LinkState, message: str) -> None:
        """A link's state changed: LINK, and what it left ended once it is back."""
        self._emit(Event.of(events.Link(state=str(state), message=message), host=link.alias))
        if state is LinkState.CONNECTED and self.orphans.on(link):
            self._tasks.spawn(self.orphans.end(link, self.journal))

    async def _detect(self, link: HostLink, program: str) -> None:
        """What a host has, asked once: iperf3's version (text or --json-stream output), bash
        (a fork-free clock at release) and stdbuf (every iperf3 line flushed as printed)."""
        tools = parse_tools((await link.run(tools_command(program))).stdout)
        version = tools.iperf_version
        self.iperf_versions[(link.alias, program)] = version
        self.has_bash[link.alias] = tools.bash
        self.has_stdbuf[link.alias] = tools.stdbuf
        self.has_perf[link.alias] = tools.perf
        if not tools.perf and any(self._book.options(p).profile_hz for p in self.profile.pairs):
            self._emit(Event.of(events.Error(
                message=f"{link.alias}: perf is not installed: no profile of this host "
                        "(install linux-perf); the rest goes on"), host=link.alias))
        self.has_sockperf[link.alias] = tools.sockperf
        if not tools.sockperf and any(self._book.options(p).sockperf and link.alias in
                                      (p.sender, p.receiver) for p in self.profile.pairs):
            self._emit(Event.of(events.Error(
                message=f"{link.alias}: sockperf is not installed: no request/response latency "
                        "on its pairs (install sockperf); the rest goes on"), host=link.alias))
        if version is None:
            self._emit(Event.of(events.Error(
                message=f"{link.alias}: iperf3 is not installed (`{program}` not "
                        f"found): {install_hint(program)}"), host=link.alias))

    # ---- ending -------------------------------------------------------------------------
    async def end_orphans(self) -> None:
        """End what dropped links left on every host that is connected now."""
        for link in self.orphans.links:
            if link.state is LinkState.CONNECTED:
                await self.orphans.end(link, self.journal)

    async def close(self) -> None:
        await asyncio.gather(*(link.close() for link in self.links.values()),
                             return_exceptions=True)
