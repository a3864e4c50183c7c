"""The engine's hosts: links opened once, what each host has (iperf3's version, bash,
stdbuf), link states followed, and processes left on a host whose link dropped (orphans),
ended once the link is back.

Nothing is changed on any host when one host's key is in doubt; every host reached is
recorded in the undo journal before any knob is set, so `abtui recover` can reach it after a
crash.
"""

from __future__ import annotations

import asyncio
import shlex
from dataclasses import asdict

from abtui import __version__
from abtui.core import events
from abtui.core.errors import AbtuiError
from abtui.core.events import Event
from abtui.core.model import DEFAULT_IPERF3, LinkState
from abtui.hosts.connect import open_hosts, probe_tunnels
from abtui.hosts.undo import HostRecord, UndoJournal
from abtui.measure.engine_knobs import EngineKnobs
from abtui.measure.seams import HostKnobs
from abtui.remote.iperf_cmd import parse_iperf_version
from abtui.remote.link import HostLink


def install_hint(program: str) -> str:
    """How to get the iperf3 a host lacks (said when connecting and when a run cannot start)."""
    if program == DEFAULT_IPERF3:
        return "install the iperf3 package"
    return "install iperf3 there, or correct the profile's [test] iperf3 option"


class EngineHosts(EngineKnobs):
    """Connecting and following the hosts; see the module docstring."""

    # ---- connecting ---------------------------------------------------------------------
    async def connect(self) -> None:
        """Open the links once: a later call (the console's start after a stop) keeps them,
        and with them the knob layer that knows every original value to restore."""
        if self.links:
            return
        self.emit(Event.of(events.SessionStart.from_data({
            "profile_text": self.profile.source_text, "profile_path": self.profile.source_path,
            "abtui_version": __version__, **self.start_data})))
        hosts = await open_hosts(self.profile, on_state=self._on_link_state)
        self.links, self.dialects = hosts.links, hosts.dialects
        doubted = [f"{a}: {hosts.errors.get(a) or link.hostkey_problem}"
                   for a, link in hosts.links.items() if link.hostkey_problem]
        if doubted:  # a host that may not be the one meant: touch no host at all
            await asyncio.gather(*(link.close() for link in self.links.values()),
                                 return_exceptions=True)
            self.links = {}
            raise AbtuiError("; ".join(doubted) + "; nothing was changed on any host "
                             "(update known_hosts if the new key is expected)")
        await probe_tunnels(self.profile, hosts)
        for alias, facts in hosts.facts.items():
            self.emit(Event.of(events.Facts(facts=asdict(facts)), host=alias))
        for alias, message in hosts.errors.items():
            text = message if alias in message else f"{alias}: {message}"
            self.emit(Event.of(events.Error(message=text), host=alias))
        programs = {(alias, self._options(pair).iperf3) for pair in self.profile.pairs
                    for alias in (pair.sender, pair.receiver)}
        await asyncio.gather(*(self._detect(self.links[alias], program)
                               for alias, program in sorted(programs)
                               if alias in self.links
                               and self.links[alias].state is LinkState.CONNECTED))
        if self.journal is None and self._use_journal:
            self.journal = UndoJournal()
        if self.journal is not None:  # how `abtui recover` reaches every host it may touch
            for link in self.links.values():
                self.journal.host(HostRecord(link.alias, link.ssh_config, link.known_hosts,
                                             link.sudo))
        if self._applier_factory is not None:
            self.applier = self._applier_factory(self.links, self.emit)
        else:
            self.applier = HostKnobs(self.profile, self.links, self.dialects, self.emit,
                                     self.journal)
        await self._read_current()
        await self._apply_initial()

    def _on_link_state(self, link: HostLink, state: LinkState, message: str) -> None:
        self.emit(Event.of(events.Link(state=str(state), message=message), host=link.alias))
        if state is LinkState.CONNECTED and self.orphans.on(link):
            self._spawn(self.orphans.end(link, self.journal))
        if state is LinkState.LOST:  # a pair's run cannot go on half-watched: end it now
            for run in list(self._runs.values()):
                if link in (run.sender, run.receiver):
                    self._spawn(run.interrupt(link.alias))

    async def _detect(self, link: HostLink, program: str) -> None:
        """What a host has, asked once: iperf3's version (text or --json-stream output), bash
        (a fork-free clock at release) and stdbuf (every iperf3 line flushed as printed)."""
        result = await link.run(
            f"{shlex.quote(program)} --version 2>&1 | head -n 1; "
            "command -v bash >/dev/null && echo __abtui_bash; "
            "command -v stdbuf >/dev/null && echo __abtui_stdbuf; true")
        lines = result.stdout.splitlines()
        first = lines[0] if lines else ""
        version = parse_iperf_version(first)
        self.iperf_versions[(link.alias, program)] = version
        self.has_bash[link.alias] = "__abtui_bash" in lines
        self.has_stdbuf[link.alias] = "__abtui_stdbuf" in lines
        if version is None:
            self.emit(Event.of(events.Error(
                message=f"{link.alias}: iperf3 is not installed (`{program}` not "
                        f"found): {install_hint(program)}"), host=link.alias))
