"""What every OS's tunnel commands share (no I/O here): an end's names, addresses and keys,
the peer and verification commands (wg(8) and ping are alike on both OSes), the probe's and
the route's replies parsed, and the `TunnelCommands` base each OS's driver fills in
(abtui.remote.os.linux.tunnels, abtui.remote.os.freebsd.tunnels). Every value that reaches a
shell is validated or quoted; an interface abtui removes must carry its `ab` prefix.

Tunnel addresses are 198.18.<100+P>.1 (sender) and .2 (receiver) for the profile's pair P:
inside the benchmarking block, and apart from the lab's data (198.<o>.P.0/24) and management
(198.<o>.200-255.0/24) subnets.
"""

from __future__ import annotations

import ipaddress
import re
from collections.abc import Mapping
from dataclasses import dataclass
from shlex import quote
from typing import Any

from abtui.core.errors import BadInput, RemoteError
from abtui.core.model import TunnelType, tunnel_refusal

WG_PORT_BASE = 51820
VXLAN_VNI_BASE = 4200
VXLAN_PORT = 4789
AEAD = "rfc4106(gcm(aes))"
# the keys abtui makes: a 256-bit AES key and RFC 4106's 4-byte salt (the softirq-crypto seed's
# `rfc4106(gcm(aes))` with a 256-bit key)
IPSEC_KEY_BYTES = 36
WG_KEY = re.compile(r"[A-Za-z0-9+/]{42}[AEIMQUYcgkosw480]=")
OURS = re.compile(r"ab[a-z0-9]{1,13}")  # abtui's tunnel interfaces, and only those


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


def valid_ip(value: str) -> str:
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
    os: str = "linux"  # the host's dialect: which commands make and remove this end

    def record(self) -> dict[str, Any]:
        """What the undo journal keeps (no key material)."""
        return {"type": str(self.type), "ifname": self.ifname, "local": self.local,
                "remote": self.remote, "spi_out": self.spi_out, "spi_in": self.spi_in,
                "os": self.os}


def our_ifname(name: str) -> str:
    if not OURS.fullmatch(name):
        raise BadInput(f"{name!r} is not an abtui tunnel interface")
    return name


def check_keys(e: End) -> None:
    """An RFC 4106 key: the AES key and a 4-byte salt, 20 bytes (AES-128) or 36 (AES-256)."""
    for key in (e.key_out, e.key_in):
        if not re.fullmatch(r"[0-9a-f]{40}|[0-9a-f]{72}", key):
            raise BadInput("an IPsec key must be 20 or 36 bytes in hex (AES-128 or AES-256, "
                           "each with its 4-byte salt)")


def wg_endpoint(e: End) -> str:
    port, ip = WG_PORT_BASE + e.index, valid_ip(e.remote)
    return f"[{ip}]:{port}" if ":" in ip else f"{ip}:{port}"


def wg_keys(e: End) -> str:
    """A fresh private key for this end, made and kept on its host (wg(8), as on both OSes)."""
    return (f"k=$(wg genkey) && printf '%s\\n' \"$k\" | wg set {quote(e.ifname)} "
            f"listen-port {WG_PORT_BASE + e.index} private-key /dev/stdin")


# what a WireGuard end's up command prints last: its public key, for the peer
WG_PUBKEY = "printf '%s\\n' \"$k\" | wg pubkey"


class TunnelCommands:
    """The commands that make, find and remove one OS's tunnel ends; `LinuxTunnels` and
    `FreeBSDTunnels` fill them in."""

    name = "posix"
    # the script that reports which tunnel types a host can make (`type=...` lines: parse_probe)
    PROBE = ""
    # ping's option to wait one second for a reply (Linux -W is seconds, FreeBSD's is -t)
    PING_WAIT = ""

    def up(self, e: End) -> str:
        """Bring this end up. WireGuard prints this end's public key (the peer is set later)."""
        raise NotImplementedError

    def down(self, record: Mapping[str, Any]) -> str:
        """Remove one end (from an End's record, or the undo journal's); safe to run twice."""
        raise NotImplementedError

    def present(self, record: Mapping[str, Any]) -> str:
        """Succeeds while this end is there (its interface, or for IPsec its outbound SA): what
        a host that reconnected is asked, since a reboot or a reset removes every end."""
        raise NotImplementedError

    def source(self, target: str) -> str:
        """The local underlay address towards `target`, printed as `... src ADDRESS ...`."""
        raise NotImplementedError

    def probe(self) -> str:
        """The script that reports which tunnel types a host can make (`type=...` lines)."""
        return self.PROBE

    def peer(self, e: End, peer_public_key: str) -> str:
        """WireGuard: tell this end about its peer (key checked: it came from a host). wg(8)
        is the same on Linux and FreeBSD."""
        if not WG_KEY.fullmatch(peer_public_key.strip()):
            raise RemoteError(e.host, f"peer sent a malformed WireGuard key {peer_public_key!r}")
        return (f"wg set {quote(e.ifname)} peer {quote(peer_public_key.strip())} "
                f"endpoint {quote(wg_endpoint(e))} "
                f"allowed-ips {quote(valid_ip(e.peer_address) + '/32')}")

    def verify(self, peer_address: str, tries: int = 25) -> str:
        """Ping the peer's tunnel address until it answers (WireGuard needs a handshake
        first), one second per try at most."""
        addr = quote(valid_ip(peer_address))
        return (f"i=0; while [ $i -lt {int(tries)} ]; do ping -c 1 {self.PING_WAIT} {addr} "
                ">/dev/null 2>&1 && exit 0; i=$((i+1)); sleep 0.2; done; "
                "echo 'no answer through the tunnel' >&2; exit 1")


def parse_route_source(out: str) -> str | None:
    """`... src ADDRESS ...` -> the address, None when absent or not an address."""
    m = re.search(r"\bsrc\s+(\S+)", out)
    if not m:
        return None
    try:
        return str(ipaddress.ip_address(m.group(1)))
    except ValueError:
        return None


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
    return [t for t, v in probe.items() if tunnel_refusal(v) is None]
