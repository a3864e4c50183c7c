"""Tunnels between the two hosts of a pair: none, wireguard, vxlan, ipsec, gre.

Each type comes up on both hosts, is verified by a ping through it (the address that answers
becomes iperf3's target), and comes down leaving nothing behind: links, addresses, SAs and
policies, wireguard-go processes (they exit when their interface is deleted). Each end is made
with its own host's commands (its dialect's `tunnels`, abtui.remote.os: Linux or FreeBSD), so a
pair may mix the two. WireGuard keys are made on each host with `wg genkey` for this session;
the private key never leaves its host. Every tunnel is journalled (abtui.hosts.undo) before it
is made, so `abtui recover` can remove it after a crash.
"""

from __future__ import annotations

import asyncio
import secrets
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field

from abtui.core import events
from abtui.core.errors import BadInput, RemoteError
from abtui.core.events import Event
from abtui.core.model import Knob, KnobKind, Pair, TunnelType
from abtui.hosts.undo import UndoJournal
from abtui.remote.link import HostLink
from abtui.remote.os.dialect import Dialect
from abtui.remote.os.pick import tunnels_for
from abtui.remote.os.tunnels import (
    IPSEC_KEY_BYTES,
    End,
    TunnelCommands,
    ifname,
    parse_probe,
    parse_route_source,
    tunnel_addresses,
    valid_ip,
)

Emit = Callable[[Event], None]
# Making a tunnel end may load kernel modules and instantiate its cipher (with the kernel's
# crypto self-tests): seconds on an emulated (TCG) VM host, more under load.
UP_TIMEOUT = 60.0


async def probe_host(link: HostLink, dialect: Dialect | None) -> dict[str, str]:
    """Which tunnel types this host can make (and why not), in one round trip."""
    if dialect is None or dialect.tunnels is None:
        why = "no: abtui makes tunnels on Linux and FreeBSD hosts only" if dialect is not None \
            else "no: the host's OS is not known (it did not answer when connecting)"
        return {t.value: "yes" if t is TunnelType.NONE else why for t in TunnelType}
    return parse_probe(await link.check(dialect.tunnels.probe()))


def uses_tunnels(knobs: Sequence[Knob], tunnels: Sequence[str]) -> bool:
    """Does a profile switch tunnels (a tunnel knob, or a tunnel type besides none)?"""
    return any(k.kind is KnobKind.TUNNEL for k in knobs) or any(t != "none" for t in tunnels)


# ---- the manager ------------------------------------------------------------------------
@dataclass(slots=True)
class Active:
    type: TunnelType
    target: str
    ends: list[End] = field(default_factory=list)


class TunnelManager:
    """Tunnels of a session's pairs: switch live (old one down first), verify, remove all."""

    def __init__(self, links: Mapping[str, HostLink], dialects: Mapping[str, Dialect],
                 pairs: Sequence[Pair], *, journal: UndoJournal | None = None,
                 emit: Emit | None = None, tag: str | None = None) -> None:
        self.links = links
        self.dialects = dialects
        self.pairs = list(pairs)
        self.journal = journal
        self.emit = emit
        self.tag = tag or secrets.token_hex(2)
        self.active: dict[str, Active] = {}
        self._locks: dict[str, asyncio.Lock] = {}

    def _pair(self, label: str) -> tuple[int, Pair]:
        for i, p in enumerate(self.pairs, 1):
            if p.label == label:
                return i, p
        raise BadInput(f"no pair {label!r}")

    def target(self, label: str) -> str:
        act = self.active.get(label)
        return act.target if act else self._pair(label)[1].target

    async def switch_pairs(self, labels: Sequence[str], kind: str) -> dict[str, str]:
        """Switch several pairs concurrently; returns each pair's new iperf3 target."""
        targets = await asyncio.gather(*(self.switch(label, kind) for label in labels))
        return dict(zip(labels, targets, strict=True))

    async def switch(self, label: str, kind: str) -> str:
        """Tear down the pair's tunnel (if any), bring `kind` up, verify; the new target."""
        try:
            ttype = TunnelType(kind)
        except ValueError:
            raise BadInput(f"unknown tunnel type {kind!r} "
                           f"({', '.join(t.value for t in TunnelType)})") from None
        lock = self._locks.setdefault(label, asyncio.Lock())
        async with lock:
            await self._down(label)
            if ttype is TunnelType.NONE:
                target = self._pair(label)[1].target
            else:
                target = await self._up(label, ttype)
            if self.emit is not None:
                self.emit(Event.of(events.Tunnel(type=ttype.value, target=target), pair=label))
            return target

    def _commands(self, host: str, ttype: TunnelType) -> TunnelCommands:
        """The host's tunnel commands: its dialect's, picked when it connected."""
        d = self.dialects.get(host)
        if d is None:
            raise RemoteError(host, f"{ttype} tunnels: not connected (its OS is not known: "
                              "it did not answer when abtui connected)")
        if d.tunnels is None:
            raise RemoteError(host, f"{ttype} tunnels: abtui makes tunnels on Linux and "
                              "FreeBSD hosts only")
        return d.tunnels

    async def _ends(self, label: str, ttype: TunnelType) -> tuple[End, End]:
        index, pair = self._pair(label)
        oses = [self._commands(host, ttype).name for host in (pair.sender, pair.receiver)]
        remote = valid_ip(pair.target)
        out = await self.links[pair.sender].check(
            self._commands(pair.sender, ttype).source(remote))
        local = parse_route_source(out)
        if local is None:
            raise RemoteError(pair.sender, f"no route source towards {remote}: {out.strip()}")
        s_addr, r_addr = tunnel_addresses(index)
        spi_a, spi_b = (secrets.randbits(28) | 0x100 for _ in range(2))
        key_a, key_b = secrets.token_hex(IPSEC_KEY_BYTES), secrets.token_hex(IPSEC_KEY_BYTES)
        snd = End(pair.sender, "s", ttype, ifname(ttype, index, "s", self.tag), local, remote,
                  s_addr, r_addr, index, spi_a, spi_b, key_a, key_b, oses[0])
        rcv = End(pair.receiver, "r", ttype, ifname(ttype, index, "r", self.tag), remote,
                  local, r_addr, s_addr, index, spi_b, spi_a, key_b, key_a, oses[1])
        return snd, rcv

    async def _up(self, label: str, ttype: TunnelType) -> str:
        snd, rcv = await self._ends(label, ttype)
        ends = [snd, rcv]
        if self.journal is not None:
            for e in ends:
                self.journal.tunnel_up(e.host, {**e.record(), "pair": label})
        self.active[label] = Active(ttype, snd.peer_address if ttype is not TunnelType.IPSEC
                                    else rcv.local, ends)
        cmds = {e.host: tunnels_for(e.os) for e in ends}  # each end by its host's OS
        try:
            outs = await asyncio.gather(*(self.links[e.host].check(cmds[e.host].up(e),
                                                                    timeout=UP_TIMEOUT)
                                          for e in ends))
            if ttype is TunnelType.WIREGUARD:
                keys = [o.strip().splitlines()[-1] if o.strip() else "" for o in outs]
                await asyncio.gather(
                    self.links[snd.host].check(cmds[snd.host].peer(snd, keys[1])),
                    self.links[rcv.host].check(cmds[rcv.host].peer(rcv, keys[0])))
            result = await self.links[snd.host].run(cmds[snd.host].verify(
                rcv.local if ttype is TunnelType.IPSEC else snd.peer_address), timeout=15)
            if not result.ok:
                raise RemoteError(snd.host, f"{ttype} tunnel of pair {label} is up but "
                                  f"{snd.peer_address} does not answer through it")
        except BaseException:
            await self._down(label)
            raise
        return self.active[label].target

    async def _down(self, label: str) -> None:
        act = self.active.pop(label, None)
        if act is None:
            return
        errors = []
        for e, res in zip(act.ends, await asyncio.gather(
                *(self.links[e.host].run(tunnels_for(e.os).down(e.record())) for e in act.ends),
                return_exceptions=True), strict=True):
            if isinstance(res, BaseException):
                errors.append(f"{e.host}: {res}")
            elif self.journal is not None:
                self.journal.tunnel_down(e.host, e.ifname)
        if errors:
            raise RemoteError(act.ends[0].host, "could not remove tunnel: " + "; ".join(errors))

    async def intact(self, label: str, host: str) -> bool | None:
        """Are the pair's tunnel ends on `host` still there? None when the pair has no
        tunnel abtui made, or `host` is none of its ends."""
        act = self.active.get(label)
        ends = [e for e in act.ends if e.host == host] if act else []
        if not ends:
            return None
        results = await asyncio.gather(*(self.links[host].run(tunnels_for(e.os).present(
            e.record())) for e in ends))
        return all(r.ok for r in results)

    async def down_all(self) -> None:
        """Remove every tunnel this manager made (on exit, on Ctrl-C)."""
        labels = list(self.active)
        results = await asyncio.gather(*(self.switch(label, "none") for label in labels),
                                       return_exceptions=True)
        errors = [str(r) for r in results if isinstance(r, BaseException)]
        if errors:
            raise RemoteError("tunnels", "; ".join(errors))
