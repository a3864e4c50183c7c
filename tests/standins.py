"""TEST-ONLY stand-in for a module built in parallel (abtui.knobs).

A sysctl-only knob applier that implements abtui.seams.KnobApplier just enough for the
engine's tests. Replace with the real knob layer as soon as it is on main.
"""

from __future__ import annotations

import shlex
from collections.abc import Mapping, Sequence

from abtui.controller import KnobRefused
from abtui.errors import RemoteError
from abtui.model import (
    Event,
    EventKind,
    Knob,
    KnobKind,
    Pair,
    Scope,
)
from abtui.remote.link import HostLink
from abtui.seams import Emit


class SysctlStandInApplier:
    """Sysctl knobs only, through the links' control shells; restores originals at the end.

    A tunnel knob "brings up" nothing: it returns the target the test put in `tunnel_targets`
    ({(pair, value): address}), which is all the engine needs to see."""

    def __init__(self, links: Mapping[str, HostLink], emit: Emit) -> None:
        self.links = links
        self.emit = emit
        self.originals: dict[tuple[str, str], str] = {}
        self.tunnel_targets: dict[tuple[str, str], str] = {}

    def _hosts(self, knob: Knob, pairs: Sequence[Pair]) -> list[str]:
        out = []
        for p in pairs:
            if knob.scope in (Scope.SENDER, Scope.BOTH):
                out.append(p.sender)
            if knob.scope in (Scope.RECEIVER, Scope.BOTH):
                out.append(p.receiver)
        return list(dict.fromkeys(out))

    async def apply(self, knob: Knob, value: str, pairs: Sequence[Pair]) -> Mapping[str, str]:
        if knob.kind is KnobKind.TUNNEL:
            return {p.label: self.tunnel_targets.get((p.label, value), p.target) for p in pairs}
        if knob.kind is not KnobKind.SYSCTL:
            raise KnobRefused(f"stand-in applier: {knob.kind} knobs are not supported")
        done: list[tuple[str, str]] = []
        try:
            for alias in self._hosts(knob, pairs):
                link = self.links[alias]
                if (alias, knob.key) not in self.originals:
                    old = (await link.check(f"sysctl -n {shlex.quote(knob.key)}")).strip()
                    self.originals[(alias, knob.key)] = old
                    self.emit(Event(EventKind.ORIGINAL, host=alias,
                                    data={"knob": knob.name, "key": knob.key, "value": old}))
                before = (await link.check(f"sysctl -n {shlex.quote(knob.key)}")).strip()
                await link.check(f"sysctl -w {shlex.quote(knob.key + '=' + value)} >/dev/null")
                done.append((alias, before))
        except RemoteError as exc:
            for alias, before in done:
                await self.links[alias].check(
                    f"sysctl -w {shlex.quote(knob.key + '=' + before)} >/dev/null")
            raise KnobRefused(str(exc)) from exc
        return {}

    async def restore(self) -> None:
        for (alias, key), value in self.originals.items():
            ok = True
            try:
                await self.links[alias].check(
                    f"sysctl -w {shlex.quote(key + '=' + value)} >/dev/null")
            except RemoteError:
                ok = False
            self.emit(Event(EventKind.RESTORE, host=alias,
                            data={"knob": key, "value": value, "ok": ok, "message": ""}))
        self.originals.clear()
