"""The knob layer on real hosts (abtui.hosts.knobs, abtui.hosts.tunnels) as the engine's
KnobApplier (abtui.measure.ports): apply, read, check tunnels, set back."""

from __future__ import annotations

from collections.abc import Callable, Collection, Mapping, Sequence
from typing import TYPE_CHECKING

from abtui.core.events import AnyEvent
from abtui.core.model import Knob, Pair, Profile

if TYPE_CHECKING:  # (the console imports this module before its first frame: no SSH layer)
    from abtui.hosts.readback import Changed
    from abtui.hosts.undo import UndoJournal
    from abtui.remote.link import HostLink
    from abtui.remote.os.dialect import Dialect

Emit = Callable[[AnyEvent], None]


class HostKnobs:
    """The knob layer on real hosts (abtui.hosts.knobs, abtui.hosts.tunnels) behind KnobApplier."""

    def __init__(self, profile: Profile, links: Mapping[str, HostLink],
                 dialects: Mapping[str, Dialect], emit: Emit,
                 journal: UndoJournal | None = None) -> None:
        from abtui.hosts.knobs import KnobManager
        from abtui.hosts.tunnels import TunnelManager

        self.profile = profile
        # the engine emits TUNNEL itself, per pair, with the new target
        self.tunnels = TunnelManager(links, dialects, profile.pairs, journal=journal)
        self.manager = KnobManager(links, dialects, journal=journal, emit=emit,
                                   tunnels=self.tunnels)

    async def apply(self, knob: Knob, value: str, pairs: Sequence[Pair],
                    again: bool = False) -> Mapping[str, str]:
        from abtui.hosts.knobs import resolve_targets

        targets = resolve_targets(self.profile.pairs, knob, [p.label for p in pairs])
        return (await self.manager.apply(knob, value, targets, again)).targets

    async def current(self, knob: Knob, pairs: Sequence[Pair]) -> dict[str, dict[str, str]]:
        """Each pair's value of a host knob now, per role (KnobManager.current)."""
        return await self.manager.current(knob, pairs)

    async def tunnel_intact(self, label: str, host: str) -> bool | None:
        """The pair's tunnel ends on `host` still there (None: no tunnel abtui made there)."""
        return await self.tunnels.intact(label, host)

    async def read_back(self, hosts: Collection[str]) -> list[Changed]:
        """Every setting written on `hosts` read back; what someone else changed since
        (abtui.hosts.readback: no longer abtui's, never written again)."""
        from abtui.hosts.readback import read_back

        return await read_back(self.manager, hosts)

    async def restore(self) -> list[str]:
        """Tunnels removed, knobs restored (RESTORE events); the journal is the engine's."""
        from abtui.hosts.restore import set_back

        return await set_back(self.manager, self.tunnels)
