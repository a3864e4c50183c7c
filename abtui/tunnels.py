"""Tunnels between the two hosts of a pair: none, wireguard, vxlan, ipsec (ip xfrm), gre.

Each type comes up on both hosts, is verified by a ping through it (the address that answers
becomes iperf3's target), and comes down leaving nothing behind: links, addresses, xfrm states
and policies, wireguard-go processes (they exit when their interface is deleted). Tunnel
addresses are 198.18.<100+P>.1 (sender) and .2 (receiver) for the profile's pair P: inside the
benchmarking block, and apart from the lab's data (198.<o>.P.0/24) and management
(198.<o>.200-255.0/24) subnets. WireGuard keys are made on each host with `wg genkey` for this
session; the private key never leaves its host. Every tunnel is journalled (abtui.undo) before
it is made, so `abtui recover` can remove it after a crash. Linux hosts only, for now.
"""

from __future__ import annotations

import asyncio
import ipaddress
import re
import secrets
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from shlex import quote
from typing import Any

from abtui.errors import BadInput, RemoteError
from abtui.model import Event, EventKind, Pair, TunnelType
from abtui.remote.dialects import Dialect
from abtui.remote.link import HostLink
from abtui.undo import UndoJournal

WG_PORT_BASE = 51820
VXLAN_VNI_BASE = 4200
VXLAN_PORT = 4789
AEAD = "rfc4106(gcm(aes))"
WG_KEY = re.compile(r"[A-Za-z0-9+/]{42}[AEIMQUYcgkosw480]=")
ROLES = ("s", "r")  # sender, receiver

Emit = Callable[[Event], None]


def tunnel_addresses(index: int) -> tuple[str, str]:
    """Sender and receiver tunnel addresses (/24) for pair number `index` (1-based)."""
    if not 1 <= index <= 99:
        raise BadInput(f"tunnels support pairs 1 to 99, not {index}")
    return f"198.18.{100 + index}.1", f"198.18.{100 + index}.2"


def ifname(kind: TunnelType, index: int, role: str, tag: str) -> str:
    """A short interface name: ab + type letter + pair + role + session tag (≤ 15 chars)."""
    letter = {TunnelType.WIREGUARD: "w", TunnelType.VXLAN: "v", TunnelType.GRE: "g",
              TunnelType.IPSEC: "x"}[kind]
    name = f"ab{letter}{index}{role}{tag}"
    if len(name) > 15 or not re.fullmatch(r"[a-z0-9]+", name):
        raise BadInput(f"tunnel interface name {name!r} is not valid")
    return name


def _ip(value: str) -> str:
    """An IP address from a profile or a host's reply, validated before it reaches a shell."""
    try:
        return str(ipaddress.ip_address(value.strip()))
    except ValueError:
        raise BadInput(f"{value!r} is not an IP address") from None


@dataclass(slots=True)
class End:
    """One host's end of a tunnel: everything needed to build its commands and remove it."""

    host: str
    role: str
    type: TunnelType
    ifname: str
    local: str      # underlay address of this host
    remote: str     # underlay address of the peer
    address: str    # this end's tunnel address
    peer_address: str
    index: int
    spi_out: int = 0
    spi_in: int = 0
    key_out: str = ""
    key_in: str = ""

    def record(self) -> dict[str, Any]:
        """What the undo journal keeps (no key material)."""
        return {"type": str(self.type), "ifname": self.ifname, "local": self.local,
                "remote": self.remote, "spi_out": self.spi_out, "spi_in": self.spi_in}


# ---- command builders (Linux, iproute2 + wireguard-tools) -------------------------------
def _addr_up(e: End) -> str:
    dev = quote(e.ifname)
    return (f"ip addr add {quote(e.address + '/24')} dev {dev} && "
            f"ip link set dev {dev} up")


def up_command(e: End) -> str:
    """Bring this end up. WireGuard prints this end's public key (the peer is set later)."""
    dev = quote(e.ifname)
    local, remote = quote(_ip(e.local)), quote(_ip(e.remote))
    if e.type is TunnelType.WIREGUARD:
        port = WG_PORT_BASE + e.index
        return (f"{{ ip link add name {dev} type wireguard 2>/dev/null || "
                f"wireguard-go {dev} >/dev/null 2>&1; }} && "
                f"k=$(wg genkey) && printf '%s\\n' \"$k\" | "
                f"wg set {dev} listen-port {port} private-key /dev/stdin && "
                f"ip link set dev {dev} mtu 1420 && {_addr_up(e)} && "
                "printf '%s\\n' \"$k\" | wg pubkey")
    if e.type is TunnelType.VXLAN:
        return (f"ip link add name {dev} type vxlan id {VXLAN_VNI_BASE + e.index} "
                f"local {local} remote {remote} dstport {VXLAN_PORT} && {_addr_up(e)}")
    if e.type is TunnelType.GRE:
        return (f"ip link add name {dev} type gre local {local} remote {remote} ttl 64 && "
                f"{_addr_up(e)}")
    if e.type is TunnelType.IPSEC:
        return " && ".join(_xfrm_up(e))
    raise BadInput(f"no commands for tunnel type {e.type}")


def _xfrm_up(e: End) -> list[str]:
    """ESP in transport mode between the underlay addresses, AES-GCM (RFC 4106)."""
    local, remote = quote(_ip(e.local)), quote(_ip(e.remote))
    for key in (e.key_out, e.key_in):
        if not re.fullmatch(r"[0-9a-f]{40}", key):
            raise BadInput("an IPsec key must be 20 bytes in hex")
    state = ("ip xfrm state add src {s} dst {d} proto esp spi {spi:#010x} reqid {r} "
             "mode transport aead " + quote(AEAD) + " 0x{k} 128")
    policy = ("ip xfrm policy add src {s}/32 dst {d}/32 dir {dir} tmpl src {s} dst {d} "
              "proto esp reqid {r} mode transport")
    reqid = 0xAB00 + e.index
    return [state.format(s=local, d=remote, spi=e.spi_out, r=reqid, k=e.key_out),
            state.format(s=remote, d=local, spi=e.spi_in, r=reqid, k=e.key_in),
            policy.format(s=local, d=remote, dir="out", r=reqid),
            policy.format(s=remote, d=local, dir="in", r=reqid)]


def peer_command(e: End, peer_public_key: str) -> str:
    """WireGuard: tell this end about its peer (key checked: it came from a host)."""
    if not WG_KEY.fullmatch(peer_public_key.strip()):
        raise RemoteError(e.host, f"peer sent a malformed WireGuard key {peer_public_key!r}")
    port = WG_PORT_BASE + e.index
    endpoint = f"{_ip(e.remote)}:{port}" if ":" not in e.remote else f"[{_ip(e.remote)}]:{port}"
    return (f"wg set {quote(e.ifname)} peer {quote(peer_public_key.strip())} "
            f"endpoint {quote(endpoint)} allowed-ips {quote(_ip(e.peer_address) + '/32')}")


def down_command(record: Mapping[str, Any]) -> str:
    """Remove one end (from an End's record, or the undo journal's); safe to run twice."""
    kind = TunnelType(str(record["type"]))
    if kind is TunnelType.IPSEC:
        local, remote = quote(_ip(str(record["local"]))), quote(_ip(str(record["remote"])))
        spi_out, spi_in = int(record["spi_out"]), int(record["spi_in"])
        return "; ".join([
            f"ip xfrm policy delete src {local}/32 dst {remote}/32 dir out 2>/dev/null",
            f"ip xfrm policy delete src {remote}/32 dst {local}/32 dir in 2>/dev/null",
            f"ip xfrm state delete src {local} dst {remote} proto esp spi {spi_out:#010x} "
            "2>/dev/null",
            f"ip xfrm state delete src {remote} dst {local} proto esp spi {spi_in:#010x} "
            "2>/dev/null",
            "true"])
    name = str(record["ifname"])
    if not re.fullmatch(r"ab[a-z0-9]{1,13}", name):
        raise BadInput(f"{name!r} is not an abtui tunnel interface")
    return f"ip link del dev {quote(name)} 2>/dev/null; true"


def verify_command(peer_address: str, tries: int = 25) -> str:
    """Ping the peer's tunnel address until it answers (WireGuard needs a handshake first)."""
    addr = quote(_ip(peer_address))
    return (f"i=0; while [ $i -lt {int(tries)} ]; do ping -c 1 -W 1 {addr} >/dev/null 2>&1 "
            "&& exit 0; i=$((i+1)); sleep 0.2; done; echo 'no answer through the tunnel' >&2; "
            "exit 1")


SOURCE_COMMAND = "ip -o route get {target}"


def parse_route_source(out: str) -> str | None:
    """`ip -o route get X` -> the `src` address, None when absent."""
    m = re.search(r"\bsrc\s+(\S+)", out)
    if not m:
        return None
    try:
        return str(ipaddress.ip_address(m.group(1)))
    except ValueError:
        return None


PROBE_LINUX = r"""
t=abprb$$; spi=$(printf '0x%08x' $(( $$ + 0x10000 )))
if ! command -v wg >/dev/null 2>&1; then echo "wireguard=no: wg (wireguard-tools) is missing"
elif ip link add name $t type wireguard 2>/dev/null; then ip link del dev $t; echo wireguard=kernel
elif command -v wireguard-go >/dev/null 2>&1 && [ -c /dev/net/tun ]; then echo wireguard=userspace
else echo "wireguard=no: no wireguard kernel module and no wireguard-go"; fi
if ip link add name $t type vxlan id 9 dstport 4789 2>/dev/null
then ip link del dev $t; echo vxlan=yes
else echo "vxlan=no: the kernel has no vxlan support"; fi
if ip link add name $t type gre local 198.18.0.1 remote 198.18.0.2 2>/dev/null
then ip link del dev $t; echo gre=yes
else echo "gre=no: the kernel has no gre support"; fi
k=0x0102030405060708091011121314151617181920
if ip xfrm state add src 198.18.0.1 dst 198.18.0.2 proto esp spi $spi reqid 1 mode transport \
    aead 'rfc4106(gcm(aes))' $k 128 2>/dev/null
then ip xfrm state delete src 198.18.0.1 dst 198.18.0.2 proto esp spi $spi; echo ipsec=yes
else echo "ipsec=no: the kernel has no ESP with AES-GCM (ip xfrm refused it)"; fi
"""


def parse_probe(out: str) -> dict[str, str]:
    """`type=kernel|userspace|yes` or `type=no: why` per tunnel type; `none` always works."""
    found = {"none": "yes"}
    for line in out.splitlines():
        key, sep, value = line.partition("=")
        if sep and key in {t.value for t in TunnelType}:
            found[key] = value.strip()
    for t in TunnelType:
        found.setdefault(t.value, "no: not reported by the host")
    return found


def available(probe: Mapping[str, str]) -> list[str]:
    return [t for t, v in probe.items() if not v.startswith("no")]


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

    async def probe(self, host: str) -> dict[str, str]:
        """Which tunnel types this host can make (and why not)."""
        dialect = self.dialects.get(host)
        if dialect is None or dialect.name != "linux":
            return {t.value: ("yes" if t is TunnelType.NONE else
                              "no: abtui makes tunnels on Linux hosts only")
                    for t in TunnelType}
        return parse_probe(await self.links[host].check(PROBE_LINUX))

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
                self.emit(Event(EventKind.TUNNEL, pair=label,
                                data={"type": ttype.value, "target": target}))
            return target

    async def _ends(self, label: str, ttype: TunnelType) -> tuple[End, End]:
        index, pair = self._pair(label)
        for host in (pair.sender, pair.receiver):
            d = self.dialects.get(host)
            if d is None or d.name != "linux":
                raise RemoteError(host, f"{ttype} tunnels: abtui makes tunnels on Linux only")
        remote = _ip(pair.target)
        out = await self.links[pair.sender].check(SOURCE_COMMAND.format(target=quote(remote)))
        local = parse_route_source(out)
        if local is None:
            raise RemoteError(pair.sender, f"no route source towards {remote}: {out.strip()}")
        s_addr, r_addr = tunnel_addresses(index)
        spi_a, spi_b = (secrets.randbits(28) | 0x100 for _ in range(2))
        key_a, key_b = secrets.token_hex(20), secrets.token_hex(20)
        snd = End(pair.sender, "s", ttype, ifname(ttype, index, "s", self.tag), local, remote,
                  s_addr, r_addr, index, spi_a, spi_b, key_a, key_b)
        rcv = End(pair.receiver, "r", ttype, ifname(ttype, index, "r", self.tag), remote,
                  local, r_addr, s_addr, index, spi_b, spi_a, key_b, key_a)
        return snd, rcv

    async def _up(self, label: str, ttype: TunnelType) -> str:
        snd, rcv = await self._ends(label, ttype)
        ends = [snd, rcv]
        if self.journal is not None:
            for e in ends:
                self.journal.tunnel_up(e.host, {**e.record(), "pair": label})
        self.active[label] = Active(ttype, snd.peer_address if ttype is not TunnelType.IPSEC
                                    else rcv.local, ends)
        try:
            outs = await asyncio.gather(*(self.links[e.host].check(up_command(e))
                                          for e in ends))
            if ttype is TunnelType.WIREGUARD:
                keys = [o.strip().splitlines()[-1] if o.strip() else "" for o in outs]
                await asyncio.gather(self.links[snd.host].check(peer_command(snd, keys[1])),
                                     self.links[rcv.host].check(peer_command(rcv, keys[0])))
            result = await self.links[snd.host].run(verify_command(
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
                *(self.links[e.host].run(down_command(e.record())) for e in act.ends),
                return_exceptions=True), strict=True):
            if isinstance(res, BaseException):
                errors.append(f"{e.host}: {res}")
            elif self.journal is not None:
                self.journal.tunnel_down(e.host, e.ifname)
        if errors:
            raise RemoteError(act.ends[0].host, "could not remove tunnel: " + "; ".join(errors))

    async def down_all(self) -> None:
        """Remove every tunnel this manager made (on exit, on Ctrl-C)."""
        labels = list(self.active)
        results = await asyncio.gather(*(self.switch(label, "none") for label in labels),
                                       return_exceptions=True)
        errors = [str(r) for r in results if isinstance(r, BaseException)]
        if errors:
            raise RemoteError("tunnels", "; ".join(errors))
