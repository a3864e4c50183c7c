"""The shell commands that make and remove tunnel ends, per host OS (no I/O here).

Linux: iproute2 (`ip link`, `ip xfrm`) and wireguard-tools (kernel WireGuard, else
wireguard-go). FreeBSD: cloned interfaces through ifconfig(8) (`wg`, `vxlan`, `gre`; each
created under FreeBSD's own name, then renamed to abtui's), `setkey -c` for IPsec (keys go in
on stdin, never on a command line), and `wg(8)` for WireGuard keys. Every value that reaches a
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
TUNNEL_OSES = ("linux", "freebsd")


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


def _our_ifname(name: str) -> str:
    if not OURS.fullmatch(name):
        raise BadInput(f"{name!r} is not an abtui tunnel interface")
    return name


def _keys(e: End) -> None:
    """An RFC 4106 key: the AES key and a 4-byte salt, 20 bytes (AES-128) or 36 (AES-256)."""
    for key in (e.key_out, e.key_in):
        if not re.fullmatch(r"[0-9a-f]{40}|[0-9a-f]{72}", key):
            raise BadInput("an IPsec key must be 20 or 36 bytes in hex (AES-128 or AES-256, "
                           "each with its 4-byte salt)")


def _wg_endpoint(e: End) -> str:
    port, ip = WG_PORT_BASE + e.index, valid_ip(e.remote)
    return f"[{ip}]:{port}" if ":" in ip else f"{ip}:{port}"


def _wg_keys(e: End) -> str:
    """A fresh private key for this end, made and kept on its host (wg(8), as on both OSes)."""
    return (f"k=$(wg genkey) && printf '%s\\n' \"$k\" | wg set {quote(e.ifname)} "
            f"listen-port {WG_PORT_BASE + e.index} private-key /dev/stdin")


# what a WireGuard end's up command prints last: its public key, for the peer
_WG_PUBKEY = "printf '%s\\n' \"$k\" | wg pubkey"


def _os(value: Any) -> str:
    os = str(value or "linux").lower()
    if os not in TUNNEL_OSES:
        raise BadInput(f"abtui makes tunnels on {' and '.join(TUNNEL_OSES)} hosts, not {os}")
    return os


# ---- Linux: iproute2 + wireguard-tools ----------------------------------------------------
def _linux_addr_up(e: End) -> str:
    dev = quote(e.ifname)
    return (f"ip addr add {quote(e.address + '/24')} dev {dev} && "
            f"ip link set dev {dev} up")


def _linux_up(e: End) -> str:
    dev = quote(e.ifname)
    local, remote = quote(valid_ip(e.local)), quote(valid_ip(e.remote))
    if e.type is TunnelType.WIREGUARD:
        return (f"{{ ip link add name {dev} type wireguard 2>/dev/null || "
                f"wireguard-go {dev} >/dev/null 2>&1; }} && {_wg_keys(e)} && "
                f"ip link set dev {dev} mtu 1420 && {_linux_addr_up(e)} && {_WG_PUBKEY}")
    if e.type is TunnelType.VXLAN:
        return (f"ip link add name {dev} type vxlan id {VXLAN_VNI_BASE + e.index} "
                f"local {local} remote {remote} dstport {VXLAN_PORT} && {_linux_addr_up(e)}")
    if e.type is TunnelType.GRE:
        return (f"ip link add name {dev} type gre local {local} remote {remote} ttl 64 && "
                f"{_linux_addr_up(e)}")
    if e.type is TunnelType.IPSEC:
        return " && ".join(_xfrm_up(e))
    raise BadInput(f"no commands for tunnel type {e.type}")


def _xfrm_up(e: End) -> list[str]:
    """ESP in transport mode between the underlay addresses, AES-GCM (RFC 4106)."""
    local, remote = quote(valid_ip(e.local)), quote(valid_ip(e.remote))
    _keys(e)
    state = ("ip xfrm state add src {s} dst {d} proto esp spi {spi:#010x} reqid {r} "
             "mode transport aead " + quote(AEAD) + " 0x{k} 128")
    policy = ("ip xfrm policy add src {s}/32 dst {d}/32 dir {dir} tmpl src {s} dst {d} "
              "proto esp reqid {r} mode transport")
    reqid = 0xAB00 + e.index
    return [state.format(s=local, d=remote, spi=e.spi_out, r=reqid, k=e.key_out),
            state.format(s=remote, d=local, spi=e.spi_in, r=reqid, k=e.key_in),
            policy.format(s=local, d=remote, dir="out", r=reqid),
            policy.format(s=remote, d=local, dir="in", r=reqid)]


def _linux_down(record: Mapping[str, Any], kind: TunnelType) -> str:
    if kind is TunnelType.IPSEC:
        local = quote(valid_ip(str(record["local"])))
        remote = quote(valid_ip(str(record["remote"])))
        spi_out, spi_in = int(record["spi_out"]), int(record["spi_in"])
        return "; ".join([
            f"ip xfrm policy delete src {local}/32 dst {remote}/32 dir out 2>/dev/null",
            f"ip xfrm policy delete src {remote}/32 dst {local}/32 dir in 2>/dev/null",
            f"ip xfrm state delete src {local} dst {remote} proto esp spi {spi_out:#010x} "
            "2>/dev/null",
            f"ip xfrm state delete src {remote} dst {local} proto esp spi {spi_in:#010x} "
            "2>/dev/null",
            "true"])
    return f"ip link del dev {quote(_our_ifname(str(record['ifname'])))} 2>/dev/null; true"


# ---- FreeBSD: ifconfig cloners, setkey, wg(8) ---------------------------------------------
def _bsd_clone(cloner: str, e: End, *args: str) -> str:
    """Create a cloned interface, rename it to ours (FreeBSD picks `vxlan0`, `wg1`, ...)."""
    create = " ".join(["ifconfig", cloner, "create", *args])
    return (f"n=$({create}) && "
            f"ifconfig \"$n\" name {quote(e.ifname)} >/dev/null")


def _freebsd_up(e: End) -> str:
    dev = quote(e.ifname)
    local, remote = quote(valid_ip(e.local)), quote(valid_ip(e.remote))
    addr = quote(valid_ip(e.address) + "/24")
    if e.type is TunnelType.WIREGUARD:
        return (f"{_bsd_clone('wg', e)} && {_wg_keys(e)} && "
                f"ifconfig {dev} inet {addr} mtu 1420 up && {_WG_PUBKEY}")
    if e.type is TunnelType.VXLAN:
        clone = _bsd_clone("vxlan", e, "vxlanid", str(VXLAN_VNI_BASE + e.index),
                           "vxlanlocal", local, "vxlanremote", remote,
                           "vxlanport", str(VXLAN_PORT))
        return f"{clone} && ifconfig {dev} inet {addr} up"
    if e.type is TunnelType.GRE:  # point to point: the peer's tunnel address is the far end
        near, far = quote(valid_ip(e.address)), quote(valid_ip(e.peer_address))
        return (f"{_bsd_clone('gre', e)} && ifconfig {dev} tunnel {local} {remote} && "
                f"ifconfig {dev} inet {near} {far} netmask 255.255.255.255 up")
    if e.type is TunnelType.IPSEC:
        _keys(e)
        lo, re_ = valid_ip(e.local), valid_ip(e.remote)
        return _setkey([
            f"add {lo} {re_} esp {e.spi_out:#010x} -m transport -E aes-gcm-16 0x{e.key_out};",
            f"add {re_} {lo} esp {e.spi_in:#010x} -m transport -E aes-gcm-16 0x{e.key_in};",
            f"spdadd {lo}/32 {re_}/32 any -P out ipsec esp/transport//require;",
            f"spdadd {re_}/32 {lo}/32 any -P in ipsec esp/transport//require;"])
    raise BadInput(f"no commands for tunnel type {e.type}")


def _setkey(lines: list[str]) -> str:
    """setkey(8) reads its commands on stdin: printf is a shell builtin, so the keys never
    show in a process list."""
    return f"printf '%s\\n' {' '.join(quote(x) for x in lines)} | setkey -c"


def _freebsd_down(record: Mapping[str, Any], kind: TunnelType) -> str:
    if kind is TunnelType.IPSEC:
        lo, re_ = valid_ip(str(record["local"])), valid_ip(str(record["remote"]))
        spi_out, spi_in = int(record["spi_out"]), int(record["spi_in"])
        return _setkey([f"delete {lo} {re_} esp {spi_out:#010x};",
                        f"delete {re_} {lo} esp {spi_in:#010x};",
                        f"spddelete {lo}/32 {re_}/32 any -P out;",
                        f"spddelete {re_}/32 {lo}/32 any -P in;"]) + " 2>/dev/null; true"
    return f"ifconfig {quote(_our_ifname(str(record['ifname'])))} destroy 2>/dev/null; true"


# ---- what the manager and `abtui recover` call --------------------------------------------
def up_command(e: End) -> str:
    """Bring this end up. WireGuard prints this end's public key (the peer is set later)."""
    return _freebsd_up(e) if _os(e.os) == "freebsd" else _linux_up(e)


def peer_command(e: End, peer_public_key: str) -> str:
    """WireGuard: tell this end about its peer (key checked: it came from a host). wg(8) is
    the same on Linux and FreeBSD."""
    if not WG_KEY.fullmatch(peer_public_key.strip()):
        raise RemoteError(e.host, f"peer sent a malformed WireGuard key {peer_public_key!r}")
    return (f"wg set {quote(e.ifname)} peer {quote(peer_public_key.strip())} "
            f"endpoint {quote(_wg_endpoint(e))} "
            f"allowed-ips {quote(valid_ip(e.peer_address) + '/32')}")


def down_command(record: Mapping[str, Any]) -> str:
    """Remove one end (from an End's record, or the undo journal's); safe to run twice. A
    record without `os` (journals of abtui before FreeBSD tunnels) is a Linux one."""
    kind = TunnelType(str(record["type"]))
    if _os(record.get("os")) == "freebsd":
        return _freebsd_down(record, kind)
    return _linux_down(record, kind)


def present_command(record: Mapping[str, Any]) -> str:
    """Succeeds while this end is there (its interface, or for IPsec its outbound SA): what a
    host that reconnected is asked, since a reboot or a reset removes every end."""
    kind = TunnelType(str(record["type"]))
    freebsd = _os(record.get("os")) == "freebsd"
    if kind is TunnelType.IPSEC:
        lo, re_ = valid_ip(str(record["local"])), valid_ip(str(record["remote"]))
        spi = int(record["spi_out"])
        if freebsd:
            return (f"setkey -D 2>/dev/null | grep -q {quote(f'spi={spi}(0x{spi:08x})')}")
        return (f"ip xfrm state get src {quote(lo)} dst {quote(re_)} proto esp "
                f"spi {spi:#010x} >/dev/null 2>&1")
    dev = quote(_our_ifname(str(record["ifname"])))
    return f"ifconfig {dev} >/dev/null 2>&1" if freebsd else \
        f"ip link show dev {dev} >/dev/null 2>&1"


def verify_command(peer_address: str, tries: int = 25, os: str = "linux") -> str:
    """Ping the peer's tunnel address until it answers (WireGuard needs a handshake first).
    One second per try at most: Linux ping's -W is seconds, FreeBSD's -t."""
    addr = quote(valid_ip(peer_address))
    wait = "-t 1" if _os(os) == "freebsd" else "-W 1"
    return (f"i=0; while [ $i -lt {int(tries)} ]; do ping -c 1 {wait} {addr} >/dev/null 2>&1 "
            "&& exit 0; i=$((i+1)); sleep 0.2; done; echo 'no answer through the tunnel' >&2; "
            "exit 1")


def source_command(target: str, os: str = "linux") -> str:
    """The local underlay address towards `target`, printed as `... src ADDRESS ...`."""
    t = quote(valid_ip(target))
    if _os(os) == "freebsd":  # route(8) names the interface; its first inet is the source
        return (f"i=$(route -n get {t} | awk '$1==\"interface:\"{{print $2}}') && "
                "ifconfig \"$i\" inet | awk '$1==\"inet\"{print \"src\", $2; exit}'")
    return f"ip -o route get {t}"


def parse_route_source(out: str) -> str | None:
    """`... src ADDRESS ...` -> the address, None when absent or not an address."""
    m = re.search(r"\bsrc\s+(\S+)", out)
    if not m:
        return None
    try:
        return str(ipaddress.ip_address(m.group(1)))
    except ValueError:
        return None


# Linux: asked without loading anything. A kernel module that is loaded or built in is there;
# one that modprobe would load on first use is "module". Only where the kernel has no module
# tree (nothing can be loaded: custom and VM kernels, the lab) is each type tried on a scratch
# link or SA, removed at once.
PROBE_LINUX = r"""
t=abprb$$; spi=$(printf '0x%08x' $(( $$ + 0x10000 )))
sysmod=/sys/module; mods=/lib/modules/$(uname -r)
kmod() {  # 0: loaded or built in, 2: loads on use, 1: absent, 3: no module tree to ask
  [ -d "$sysmod/$1" ] && return 0
  [ -d "$mods" ] || return 3
  grep -q "/$1.ko" "$mods/modules.builtin" 2>/dev/null && return 0
  modprobe -n -q "$1" 2>/dev/null && return 2
  return 1
}
# say TYPE MODULE WHY-NOT TRY-COMMAND UNDO-COMMAND
say() {
  kmod "$2"; r=$?
  if [ $r = 0 ]; then echo "$1=yes"
  elif [ $r = 2 ]; then echo "$1=module"
  elif [ $r = 3 ] && eval "$4" 2>/dev/null; then eval "$5"; echo "$1=yes"
  else echo "$1=no: $3"; fi
}
if ! command -v wg >/dev/null 2>&1; then echo "wireguard=no: wg (wireguard-tools) is missing"
else
  w=$(say wireguard wireguard x "ip link add name $t type wireguard" "ip link del dev $t")
  case $w in
  *=yes) echo wireguard=kernel ;;
  *=module) echo "$w" ;;
  *) if command -v wireguard-go >/dev/null 2>&1 && [ -c /dev/net/tun ]
     then echo wireguard=userspace
     else echo "wireguard=no: no wireguard kernel module and no wireguard-go"; fi ;;
  esac
fi
say vxlan vxlan "the kernel has no vxlan support" \
  "ip link add name $t type vxlan id 9 dstport 4789" "ip link del dev $t"
say gre ip_gre "the kernel has no gre support" \
  "ip link add name $t type gre local 198.18.0.1 remote 198.18.0.2" "ip link del dev $t"
k=0x0102030405060708091011121314151617181920
sa="src 198.18.0.1 dst 198.18.0.2 proto esp spi $spi"
say ipsec esp4 "the kernel has no ESP with AES-GCM (ip xfrm refused it)" \
  "ip xfrm state add $sa reqid 1 mode transport aead 'rfc4106(gcm(aes))' $k 128" \
  "ip xfrm state delete $sa"
"""

# FreeBSD: asked without changing anything. A cloner `ifconfig -C` lists is there ("yes");
# one whose module is on disk but not loaded is "module" (ifconfig loads it when the tunnel is
# made); IPsec is there when the kernel has its sysctl tree and setkey exists.
PROBE_FREEBSD = r"""
cloners=" $(ifconfig -C 2>/dev/null) "
has() {
  case "$cloners" in *" $1 "*) echo "$2=yes"; return ;; esac
  if [ -f "/boot/kernel/if_$1.ko" ]; then echo "$2=module"; else echo "$2=no: $3"; fi
}
if ! command -v wg >/dev/null 2>&1; then echo "wireguard=no: wg (wireguard-tools) is missing"
else has wg wireguard "the kernel has no if_wg (FreeBSD 13.2 or later)"; fi
has vxlan vxlan "the kernel has no if_vxlan"
has gre gre "the kernel has no if_gre"
if ! command -v setkey >/dev/null 2>&1; then echo "ipsec=no: setkey is missing"
elif sysctl -n net.inet.ipsec.def_policy >/dev/null 2>&1; then echo ipsec=yes
else echo "ipsec=no: the kernel has no IPsec (kldload ipsec, or options IPSEC)"; fi
"""


def probe_command(os: str) -> str:
    """The script that reports which tunnel types a host can make (`type=...` lines)."""
    return PROBE_FREEBSD if _os(os) == "freebsd" else PROBE_LINUX


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
