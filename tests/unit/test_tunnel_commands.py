"""Tunnel commands (incl. ipsec and gre, which this kernel cannot run) and replies."""

from __future__ import annotations

import ipaddress
import shlex

import pytest

from abtui.errors import BadInput, RemoteError
from abtui.model import TunnelType
from abtui.tunnels import (
    End,
    available,
    down_command,
    ifname,
    parse_probe,
    parse_route_source,
    peer_command,
    tunnel_addresses,
    up_command,
    verify_command,
)

KEY = "a" * 40


def _end(kind: TunnelType, **kw) -> End:
    base = dict(host="h", role="s", type=kind, ifname=ifname(kind, 1, "s", "beef"),
                local="198.19.1.1", remote="198.19.1.2", address="198.18.101.1",
                peer_address="198.18.101.2", index=1, spi_out=0x1234, spi_in=0x5678,
                key_out=KEY, key_in="b" * 40)
    base.update(kw)
    return End(**base)


def test_tunnel_addresses_stay_clear_of_lab_subnets():
    for index in range(1, 100):
        for addr in tunnel_addresses(index):
            ip = ipaddress.ip_address(addr)
            assert ip in ipaddress.ip_network("198.18.0.0/15")
            third = int(addr.split(".")[2])
            assert 100 < third < 200  # lab data: 1..8, lab management: 200..255
    with pytest.raises(BadInput):
        tunnel_addresses(0)


def test_ipsec_uses_esp_aes_gcm_both_ways_and_comes_down_fully():
    e = _end(TunnelType.IPSEC)
    cmd = up_command(e)
    parts = cmd.split(" && ")
    assert parts[0] == ("ip xfrm state add src 198.19.1.1 dst 198.19.1.2 proto esp "
                        "spi 0x00001234 reqid 43777 mode transport aead 'rfc4106(gcm(aes))' "
                        f"0x{KEY} 128")
    assert "src 198.19.1.2 dst 198.19.1.1 proto esp spi 0x00005678" in parts[1]
    assert "dir out tmpl src 198.19.1.1 dst 198.19.1.2 proto esp" in parts[2]
    assert "dir in tmpl src 198.19.1.2 dst 198.19.1.1 proto esp" in parts[3]
    down = down_command(e.record())
    assert "KEY" not in str(e.record()) and KEY not in str(e.record())  # no keys journalled
    for needle in ("policy delete src 198.19.1.1/32 dst 198.19.1.2/32 dir out",
                   "policy delete src 198.19.1.2/32 dst 198.19.1.1/32 dir in",
                   "state delete src 198.19.1.1 dst 198.19.1.2 proto esp spi 0x00001234",
                   "state delete src 198.19.1.2 dst 198.19.1.1 proto esp spi 0x00005678"):
        assert needle in down
    with pytest.raises(BadInput):
        up_command(_end(TunnelType.IPSEC, key_out="zz; reboot"))


def test_gre_vxlan_wireguard_commands():
    assert up_command(_end(TunnelType.GRE)).startswith(
        "ip link add name abg1sbeef type gre local 198.19.1.1 remote 198.19.1.2 ttl 64 && "
        "ip addr add 198.18.101.1/24 dev abg1sbeef && ip link set dev abg1sbeef up")
    assert "type vxlan id 4201 local 198.19.1.1 remote 198.19.1.2 dstport 4789" in \
        up_command(_end(TunnelType.VXLAN))
    wg = up_command(_end(TunnelType.WIREGUARD))
    assert "type wireguard" in wg and "wireguard-go abw1sbeef" in wg and "wg genkey" in wg
    assert down_command({"type": "gre", "ifname": "abg1sbeef"}) == \
        "ip link del dev abg1sbeef 2>/dev/null; true"
    with pytest.raises(BadInput):
        down_command({"type": "vxlan", "ifname": "eth0"})  # never anything not ours


def test_peer_keys_and_addresses_from_hosts_are_checked():
    e = _end(TunnelType.WIREGUARD)
    good = "x" * 42 + "A="
    assert shlex.split(peer_command(e, good + "\n"))[4] == good
    for bad in ("$(reboot)", "short=", "x" * 42 + "B=", good + "; reboot"):
        with pytest.raises(RemoteError):
            peer_command(e, bad)
    with pytest.raises(BadInput):
        up_command(_end(TunnelType.VXLAN, remote="198.19.1.2; reboot"))
    with pytest.raises(BadInput):
        verify_command("$(reboot)")


def test_route_source_and_probe_replies():
    assert parse_route_source("198.19.1.2 dev data0 src 198.19.1.1 uid 0 \\    cache") == \
        "198.19.1.1"
    assert parse_route_source("src $(x)") is None
    assert parse_route_source("") is None
    probe = parse_probe("wireguard=userspace\nvxlan=yes\ngre=no: the kernel has no gre "
                        "support\nipsec=no: no ESP\njunk\n=x\n")
    assert available(probe) == ["none", "wireguard", "vxlan"]
    assert probe["gre"].startswith("no:")
    assert parse_probe("")["wireguard"].startswith("no")
