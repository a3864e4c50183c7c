"""FreeBSD's tunnel commands: cloned interfaces through ifconfig(8) (`wg`, `vxlan`, `gre`; each
created under FreeBSD's own name, then renamed to abtui's), `setkey -c` for IPsec (keys go in
on stdin, never on a command line), and `wg(8)` for WireGuard keys. The shared parts (names,
keys, peer, verify): abtui.remote.os.tunnels.
"""

from __future__ import annotations

from collections.abc import Mapping
from shlex import quote
from typing import Any

from abtui.core.errors import BadInput
from abtui.core.model import TunnelType
from abtui.remote.os import tunnels as shared
from abtui.remote.os.tunnels import End, TunnelCommands, valid_ip

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



def _clone(cloner: str, e: End, *args: str) -> str:
    """Create a cloned interface, rename it to ours (FreeBSD picks `vxlan0`, `wg1`, ...)."""
    create = " ".join(["ifconfig", cloner, "create", *args])
    return (f"n=$({create}) && "
            f"ifconfig \"$n\" name {quote(e.ifname)} >/dev/null")


def _setkey(lines: list[str]) -> str:
    """setkey(8) reads its commands on stdin: printf is a shell builtin, so the keys never
    show in a process list."""
    return f"printf '%s\\n' {' '.join(quote(x) for x in lines)} | setkey -c"


class FreeBSDTunnels(TunnelCommands):
    """FreeBSD: ifconfig cloners, setkey, wg(8)."""

    name = "freebsd"
    PROBE = PROBE_FREEBSD
    PING_WAIT = "-t 1"

    def up(self, e: End) -> str:
        dev = quote(e.ifname)
        local, remote = quote(valid_ip(e.local)), quote(valid_ip(e.remote))
        addr = quote(valid_ip(e.address) + "/24")
        if e.type is TunnelType.WIREGUARD:
            return (f"{_clone('wg', e)} && {shared.wg_keys(e)} && "
                    f"ifconfig {dev} inet {addr} mtu 1420 up && {shared.WG_PUBKEY}")
        if e.type is TunnelType.VXLAN:
            clone = _clone("vxlan", e, "vxlanid", str(shared.VXLAN_VNI_BASE + e.index),
                           "vxlanlocal", local, "vxlanremote", remote,
                           "vxlanport", str(shared.VXLAN_PORT))
            return f"{clone} && ifconfig {dev} inet {addr} up"
        if e.type is TunnelType.GRE:  # point to point: the peer's tunnel address is the far end
            near, far = quote(valid_ip(e.address)), quote(valid_ip(e.peer_address))
            return (f"{_clone('gre', e)} && ifconfig {dev} tunnel {local} {remote} && "
                    f"ifconfig {dev} inet {near} {far} netmask 255.255.255.255 up")
        if e.type is TunnelType.IPSEC:
            shared.check_keys(e)
            lo, re_ = valid_ip(e.local), valid_ip(e.remote)
            return _setkey([
                f"add {lo} {re_} esp {e.spi_out:#010x} -m transport -E aes-gcm-16 0x{e.key_out};",
                f"add {re_} {lo} esp {e.spi_in:#010x} -m transport -E aes-gcm-16 0x{e.key_in};",
                f"spdadd {lo}/32 {re_}/32 any -P out ipsec esp/transport//require;",
                f"spdadd {re_}/32 {lo}/32 any -P in ipsec esp/transport//require;"])
        raise BadInput(f"no commands for tunnel type {e.type}")

    def down(self, record: Mapping[str, Any]) -> str:
        if TunnelType(str(record["type"])) is TunnelType.IPSEC:
            lo, re_ = valid_ip(str(record["local"])), valid_ip(str(record["remote"]))
            spi_out, spi_in = int(record["spi_out"]), int(record["spi_in"])
            return _setkey([f"delete {lo} {re_} esp {spi_out:#010x};",
                            f"delete {re_} {lo} esp {spi_in:#010x};",
                            f"spddelete {lo}/32 {re_}/32 any -P out;",
                            f"spddelete {re_}/32 {lo}/32 any -P in;"]) + " 2>/dev/null; true"
        dev = quote(shared.our_ifname(str(record["ifname"])))
        return f"ifconfig {dev} destroy 2>/dev/null; true"

    def present(self, record: Mapping[str, Any]) -> str:
        if TunnelType(str(record["type"])) is TunnelType.IPSEC:
            valid_ip(str(record["local"])), valid_ip(str(record["remote"]))
            spi = int(record["spi_out"])
            return f"setkey -D 2>/dev/null | grep -q {quote(f'spi={spi}(0x{spi:08x})')}"
        return f"ifconfig {quote(shared.our_ifname(str(record['ifname'])))} >/dev/null 2>&1"

    def source(self, target: str) -> str:
        """route(8) names the interface; its first inet is the source."""
        t = quote(valid_ip(target))
        return (f"i=$(route -n get {t} | awk '$1==\"interface:\"{{print $2}}') && "
                "ifconfig \"$i\" inet | awk '$1==\"inet\"{print \"src\", $2; exit}'")
