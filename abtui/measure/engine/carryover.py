"""What one stretch's connections leave to the next, cleared between an alternation's
stretches: for TCP the kernel's metrics cache (Linux `ip tcp_metrics`, FreeBSD's host cache),
which hands a closed connection's ssthresh and RTT to the next one to the same host, so a
stretch would start from the one before it (a carryover the drawn order cannot balance).

The command is the host's dialect's (abtui.remote); a host that refuses it, or whose OS abtui
knows no way to clear it on, is said once per session (an ERROR event naming the host and
what it keeps), and the alternation goes on.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable, Mapping, Sequence
from typing import Protocol

from abtui.core import events
from abtui.core.errors import AbtuiError
from abtui.core.events import AnyEvent, Event
from abtui.core.model import LinkState, Pair
from abtui.remote.link import HostLink
from abtui.remote.os.dialect import Dialect

# seconds a host has to clear it (a control shell's round trip: milliseconds)
CLEAR_TIMEOUT_S = 5.0


class Hosts(Protocol):
    """What clearing needs of the engine's host pool (abtui.measure.engine.hosts.HostPool)."""

    @property
    def links(self) -> Mapping[str, HostLink]: ...

    @property
    def dialects(self) -> Mapping[str, Dialect]: ...


class Carryover:
    """Clears the pairs' hosts between stretches; says once per host where it cannot."""

    def __init__(self, hosts: Hosts, emit: Callable[[AnyEvent], None]) -> None:
        self._hosts = hosts
        self._emit = emit
        self.said: set[str] = set()  # hosts told about once: not tried again
        self.cleared = 0  # clearings done (every host of a boundary's pairs, each time)

    async def clear(self, pairs: Sequence[Pair]) -> None:
        """Every host of `pairs` (each once) forgets what its connections left, at once."""
        aliases = dict.fromkeys(h for p in pairs for h in (p.sender, p.receiver))
        await asyncio.gather(*(self._clear(a) for a in aliases if a not in self.said))

    async def _clear(self, alias: str) -> None:
        link = self._hosts.links.get(alias)
        dialect = self._hosts.dialects.get(alias)
        if link is None or dialect is None or link.state is not LinkState.CONNECTED:
            return  # not reachable now: its runs do not start either
        if not dialect.carryover_command:
            self._say(alias, f"abtui knows no way to clear the TCP metrics cache on "
                             f"{dialect.name}")
            return
        try:
            result = await link.run(dialect.carryover_command, timeout=CLEAR_TIMEOUT_S,
                                    isolate=False)
        except AbtuiError as exc:
            self._say(alias, f"clearing {dialect.carryover_what} failed: {exc}")
            return
        if not result.ok:
            why = (result.stdout.strip() or result.stderr.strip()
                   or f"exit {result.exit_status}").splitlines()[-1]
            self._say(alias, f"the host refused to clear {dialect.carryover_what}: {why}")
            return
        self.cleared += 1

    def _say(self, alias: str, why: str) -> None:
        self.said.add(alias)
        self._emit(Event.of(events.Error(
            message=f"{why}; its stretches may start from what the previous stretch's "
                    "connections left (ssthresh, RTT), said once"), host=alias))
