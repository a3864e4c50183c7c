"""Linux's tunnel commands: iproute2 (`ip link`, `ip xfrm`) and wireguard-tools (kernel
WireGuard, else wireguard-go). The shared parts (names, keys, peer, verify):
abtui.remote.os.tunnels.
"""

from __future__ import annotations

from collections.abc import Mapping
from shlex import quote
from typing import Any

from abtui.core.errors import BadInput
from abtui.core.model import TunnelType
from abtui.remote.os import tunnels as shared
from abtui.remote.os.tunnels import End, TunnelCommands, valid_ip

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


class LinuxTunnels(TunnelCommands):
    """Linux: iproute2 links and xfrm, wireguard-tools."""

    name = "linux"
    PROBE = PROBE_LINUX
    PING_WAIT = "-W 1"

    @staticmethod
    def _addr_up(e: End) -> str:
        dev = quote(e.ifname)
        return (f"ip addr add {quote(e.address + '/24')} dev {dev} && "
                f"ip link set dev {dev} up")

    def up(self, e: End) -> str:
        dev = quote(e.ifname)
        local, remote = quote(valid_ip(e.local)), quote(valid_ip(e.remote))
        if e.type is TunnelType.WIREGUARD:
            return (f"{{ ip link add name {dev} type wireguard 2>/dev/null || "
                    f"wireguard-go {dev} >/dev/null 2>&1; }} && {shared.wg_keys(e)} && "
                    f"ip link set dev {dev} mtu 1420 && {self._addr_up(e)} && {shared.WG_PUBKEY}")
        if e.type is TunnelType.VXLAN:
            return (f"ip link add name {dev} type vxlan id {shared.VXLAN_VNI_BASE + e.index} "
                    f"local {local} remote {remote} dstport {shared.VXLAN_PORT} && "
                    f"{self._addr_up(e)}")
        if e.type is TunnelType.GRE:
            return (f"ip link add name {dev} type gre local {local} remote {remote} ttl 64 && "
                    f"{self._addr_up(e)}")
        if e.type is TunnelType.IPSEC:
            return " && ".join(self._xfrm_up(e))
        raise BadInput(f"no commands for tunnel type {e.type}")

    @staticmethod
    def _xfrm_up(e: End) -> list[str]:
        """ESP in transport mode between the underlay addresses, AES-GCM (RFC 4106)."""
        local, remote = quote(valid_ip(e.local)), quote(valid_ip(e.remote))
        shared.check_keys(e)
        state = ("ip xfrm state add src {s} dst {d} proto esp spi {spi:#010x} reqid {r} "
                 "mode transport aead " + quote(shared.AEAD) + " 0x{k} 128")
        policy = ("ip xfrm policy add src {s}/32 dst {d}/32 dir {dir} tmpl src {s} dst {d} "
                  "proto esp reqid {r} mode transport")
        reqid = 0xAB00 + e.index
        return [state.format(s=local, d=remote, spi=e.spi_out, r=reqid, k=e.key_out),
                state.format(s=remote, d=local, spi=e.spi_in, r=reqid, k=e.key_in),
                policy.format(s=local, d=remote, dir="out", r=reqid),
                policy.format(s=remote, d=local, dir="in", r=reqid)]

    def down(self, record: Mapping[str, Any]) -> str:
        if TunnelType(str(record["type"])) is TunnelType.IPSEC:
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
        dev = quote(shared.our_ifname(str(record["ifname"])))
        return f"ip link del dev {dev} 2>/dev/null; true"

    def present(self, record: Mapping[str, Any]) -> str:
        if TunnelType(str(record["type"])) is TunnelType.IPSEC:
            lo, re_ = valid_ip(str(record["local"])), valid_ip(str(record["remote"]))
            return (f"ip xfrm state get src {quote(lo)} dst {quote(re_)} proto esp "
                    f"spi {int(record['spi_out']):#010x} >/dev/null 2>&1")
        return f"ip link show dev {quote(shared.our_ifname(str(record['ifname'])))} >/dev/null 2>&1"

    def source(self, target: str) -> str:
        return f"ip -o route get {quote(valid_ip(target))}"
