"""Tunnel commands (incl. ipsec and gre, which this kernel cannot run) and replies."""

from __future__ import annotations

import ipaddress
import shlex
from pathlib import Path

import pytest

from abtui.core.errors import BadInput, RemoteError
from abtui.core.model import TunnelType
from abtui.remote.os.freebsd.tunnels import PROBE_FREEBSD
from abtui.remote.os.linux.tunnels import PROBE_LINUX
from abtui.remote.os.pick import tunnels_for, tunnels_of
from abtui.remote.os.tunnels import (
    IPSEC_KEY_BYTES,
    End,
    available,
    ifname,
    parse_probe,
    parse_route_source,
    tunnel_addresses,
)


# each end's commands are its own OS driver's (an End's `os`, a journal record's `os`)
def up_command(e: End) -> str:
    return tunnels_for(e.os).up(e)


def down_command(record: dict) -> str:
    return tunnels_of(record).down(record)


def present_command(record: dict) -> str:
    return tunnels_of(record).present(record)


def peer_command(e: End, key: str) -> str:
    return tunnels_for(e.os).peer(e, key)


def verify_command(address: str, os: str = "linux") -> str:
    return tunnels_for(os).verify(address)


def source_command(target: str, os: str = "linux") -> str:
    return tunnels_for(os).source(target)


def probe_command(os: str) -> str:
    return tunnels_for(os).probe()


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


def test_ipsec_takes_a_256_bit_key_and_abtui_makes_one():
    """rfc4106(gcm(aes)) with a 256-bit key (the softirq-crypto seed's): 32 bytes of AES key
    and RFC 4106's 4-byte salt; a 128-bit one still works, any other length is refused."""
    long_key = "c" * 72
    assert f"aead 'rfc4106(gcm(aes))' 0x{long_key} 128" in up_command(
        _end(TunnelType.IPSEC, key_out=long_key))
    with pytest.raises(BadInput):
        up_command(_end(TunnelType.IPSEC, key_out="c" * 64))  # no salt
    assert IPSEC_KEY_BYTES == 36


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


# ---- FreeBSD -------------------------------------------------------------------------------
# No FreeBSD host here: the commands are checked for what they say, that they parse as POSIX
# sh, and (with stand-in ifconfig/setkey/wg/route recording their arguments and stdin) that the
# shell hands each program exactly the arguments meant.

def _bsd(kind: TunnelType, **kw) -> End:
    return _end(kind, os="freebsd", **kw)


def _run_with_stubs(tmp_path, command: str) -> list[str]:
    """Run `command` under sh with recording stand-ins first in PATH; what they were given."""
    import subprocess

    log = tmp_path / "calls"
    for prog, reply in (("ifconfig", 'case "$2" in create) echo "${1}0";; esac; '
                                      'if [ "$1 $2" = "ix0 inet" ]; then '
                                      'echo "	inet 198.19.1.1 netmask 0xffffff00"; fi; '
                                      'if [ "$1" = -C ]; then echo "bridge lo vxlan wg"; fi; '
                                      'true'),
                        ("setkey", "cat >> \"$LOG.stdin\""),
                        ("wg", 'case "$1" in genkey) echo SECRETKEY;; pubkey) echo ' + "x" * 42
                         + 'A=;; esac'),
                        ("route", 'echo "   interface: ix0"')):
        stub = tmp_path / prog
        stub.write_text(f'#!/bin/sh\nprintf "%s\\n" "{prog} $*" >> "$LOG"\n{reply}\n')
        stub.chmod(0o755)
    out = subprocess.run(["sh", "-c", command], capture_output=True, text=True,
                         env={"PATH": f"{tmp_path}:/usr/bin:/bin", "LOG": str(log)})
    assert out.returncode == 0, out.stderr
    calls = log.read_text().splitlines() if log.exists() else []
    stdin = tmp_path / "calls.stdin"
    return calls + (stdin.read_text().splitlines() if stdin.exists() else []) + \
        out.stdout.splitlines()


def test_freebsd_vxlan_and_gre_are_cloned_renamed_and_addressed(tmp_path):
    calls = _run_with_stubs(tmp_path, up_command(_bsd(TunnelType.VXLAN)))
    assert calls == [
        "ifconfig vxlan create vxlanid 4201 vxlanlocal 198.19.1.1 vxlanremote 198.19.1.2 "
        "vxlanport 4789",
        "ifconfig vxlan0 name abv1sbeef",
        "ifconfig abv1sbeef inet 198.18.101.1/24 up"]
    (tmp_path / "calls").unlink()
    calls = _run_with_stubs(tmp_path, up_command(_bsd(TunnelType.GRE)))
    assert calls == ["ifconfig gre create", "ifconfig gre0 name abg1sbeef",
                     "ifconfig abg1sbeef tunnel 198.19.1.1 198.19.1.2",
                     "ifconfig abg1sbeef inet 198.18.101.1 198.18.101.2 "
                     "netmask 255.255.255.255 up"]
    assert down_command(_bsd(TunnelType.GRE).record()) == \
        "ifconfig abg1sbeef destroy 2>/dev/null; true"
    with pytest.raises(BadInput):
        down_command({"type": "gre", "ifname": "ix0", "os": "freebsd"})


def test_freebsd_wireguard_prints_the_public_key_and_keeps_the_private_one(tmp_path):
    calls = _run_with_stubs(tmp_path, up_command(_bsd(TunnelType.WIREGUARD)))
    assert calls[:4] == ["ifconfig wg create", "ifconfig wg0 name abw1sbeef", "wg genkey",
                         "wg set abw1sbeef listen-port 51821 private-key /dev/stdin"]
    assert "ifconfig abw1sbeef inet 198.18.101.1/24 mtu 1420 up" in calls
    assert calls[-1] == "x" * 42 + "A="  # the public key is what it prints last
    assert not any("SECRETKEY" in c for c in calls)  # never an argument: stdin only


def test_freebsd_ipsec_goes_through_setkey_stdin_and_comes_down_fully(tmp_path):
    e = _bsd(TunnelType.IPSEC)
    up = up_command(e)
    assert KEY not in up.split("|")[-1]  # setkey's own command line carries no key
    calls = _run_with_stubs(tmp_path, up)
    assert calls == [
        "setkey -c",
        f"add 198.19.1.1 198.19.1.2 esp 0x00001234 -m transport -E aes-gcm-16 0x{KEY};",
        f"add 198.19.1.2 198.19.1.1 esp 0x00005678 -m transport -E aes-gcm-16 0x{'b' * 40};",
        "spdadd 198.19.1.1/32 198.19.1.2/32 any -P out ipsec esp/transport//require;",
        "spdadd 198.19.1.2/32 198.19.1.1/32 any -P in ipsec esp/transport//require;"]
    (tmp_path / "calls").unlink()
    (tmp_path / "calls.stdin").unlink()
    assert e.record()["os"] == "freebsd" and KEY not in str(e.record())
    calls = _run_with_stubs(tmp_path, down_command(e.record()))
    assert calls == ["setkey -c", "delete 198.19.1.1 198.19.1.2 esp 0x00001234;",
                     "delete 198.19.1.2 198.19.1.1 esp 0x00005678;",
                     "spddelete 198.19.1.1/32 198.19.1.2/32 any -P out;",
                     "spddelete 198.19.1.2/32 198.19.1.1/32 any -P in;"]


def test_freebsd_route_source_verify_and_probe(tmp_path):
    out = _run_with_stubs(tmp_path, source_command("198.19.1.2", "freebsd"))
    assert out[:2] == ["route -n get 198.19.1.2", "ifconfig ix0 inet"]
    assert parse_route_source("\n".join(out)) == "198.19.1.1"
    assert "ping -c 1 -t 1 198.18.101.2" in verify_command("198.18.101.2", os="freebsd")
    assert "ping -c 1 -W 1 198.18.101.2" in verify_command("198.18.101.2")
    assert probe_command("freebsd") is PROBE_FREEBSD
    with pytest.raises(BadInput, match="linux and freebsd hosts, not darwin"):
        probe_command("darwin")
    import subprocess

    for script in (PROBE_FREEBSD, up_command(_bsd(TunnelType.WIREGUARD)),
                   down_command(_bsd(TunnelType.IPSEC).record())):
        assert subprocess.run(["sh", "-n", "-c", script]).returncode == 0


def test_journal_records_without_os_are_linux_ones():
    assert down_command({"type": "vxlan", "ifname": "abv1sbeef"}) == \
        "ip link del dev abv1sbeef 2>/dev/null; true"


# ---- the manager with a FreeBSD sender and a Linux receiver ----------------------------------

class _ScriptedLink:
    """Answers the tunnel manager's commands as a host would; records them."""

    def __init__(self, alias: str, os: str, log: list[tuple[str, str]]) -> None:
        self.alias, self.os, self.log = alias, os, log

    async def run(self, command: str, timeout: float = 10.0):  # type: ignore[no-untyped-def]
        from abtui.remote.control_shell import CommandResult

        self.log.append((self.alias, command))
        if "route" in command:
            out = "src 198.19.1.1" if self.os == "freebsd" else "198.19.1.1 dev x src 198.19.1.2"
        elif "wg pubkey" in command:
            out = ("x" if self.os == "freebsd" else "y") * 42 + "A="
        else:
            out = ""
        return CommandResult(0, out + "\n", "")

    async def check(self, command: str, timeout: float = 10.0) -> str:
        return (await self.run(command, timeout)).stdout


async def test_each_end_is_made_by_its_own_host_s_commands(tmp_path):
    from abtui.core.model import Pair
    from abtui.hosts.tunnels import TunnelManager
    from abtui.hosts.undo import UndoJournal
    from abtui.remote.os.freebsd.knobs import FreeBSD
    from abtui.remote.os.linux.knobs import Linux

    log: list[tuple[str, str]] = []
    links = {"bsd": _ScriptedLink("bsd", "freebsd", log),
             "lin": _ScriptedLink("lin", "linux", log)}
    journal = UndoJournal(tmp_path)
    manager = TunnelManager(links, {"bsd": FreeBSD(), "lin": Linux()},  # type: ignore[arg-type]
                            [Pair("A", "bsd", "lin", "198.19.1.2")], journal=journal,
                            tag="beef")
    target = await manager.switch("A", "wireguard")
    assert target == "198.18.101.2"
    said = {host: [c for h, c in log if h == host] for host in links}
    assert said["bsd"][0].startswith("i=$(route -n get 198.19.1.2")
    assert said["bsd"][1].startswith("n=$(ifconfig wg create) && ifconfig \"$n\" name abw1sbeef")
    assert said["lin"][0].startswith("{ ip link add name abw1rbeef type wireguard")
    assert "ping -c 1 -t 1 198.18.101.2" in said["bsd"][-1]  # FreeBSD's ping verifies
    await manager.switch("A", "none")
    assert "ifconfig abw1sbeef destroy 2>/dev/null; true" in [c for h, c in log if h == "bsd"]
    assert "ip link del dev abw1rbeef 2>/dev/null; true" in [c for h, c in log if h == "lin"]
    import json

    records = [r for r in map(json.loads, journal.path.read_text().splitlines())
               if r.get("op") == "tunnel"]
    assert [(r["host"], r["os"]) for r in records] == [("bsd", "freebsd"), ("lin", "linux")]


def test_freebsd_probe_changes_nothing_and_reports_each_type(tmp_path):

    out = _run_with_stubs(tmp_path, PROBE_FREEBSD)  # sysctl is this machine's: no IPsec tree
    assert [c for c in out if c.startswith("ifconfig")] == ["ifconfig -C"]  # nothing created
    probe = parse_probe("\n".join(out))
    assert available(probe) == ["none", "wireguard", "vxlan"]
    assert probe["wireguard"] == probe["vxlan"] == "yes"
    assert probe["gre"] == "no: the kernel has no if_gre"
    assert probe["ipsec"].startswith("no: the kernel has no IPsec")


def test_linux_probe_asks_the_module_tree_and_creates_nothing_where_there_is_one(tmp_path):
    """With a module tree, nothing is tried: loaded or built-in modules are `yes`, those
    modprobe would load are `module`, others absent. (Without one, as in the lab, the lab
    tests see each type tried on a scratch link.)"""
    import subprocess


    sysmod, mods, bin_ = tmp_path / "sys", tmp_path / "mods", tmp_path / "bin"
    for d in (sysmod / "vxlan", mods, bin_):
        d.mkdir(parents=True)
    (mods / "modules.builtin").write_text("kernel/net/ipv4/esp4.ko\n")
    log = tmp_path / "calls"
    for prog, body in (("ip", "exit 1"), ("wg", "exit 0"), ("wireguard-go", "exit 0"),
                       ("modprobe", '[ "$3" = ip_gre ]')):
        (bin_ / prog).write_text(f'#!/bin/sh\necho "{prog} $*" >> {log}\n{body}\n')
        (bin_ / prog).chmod(0o755)
    script = PROBE_LINUX.replace("sysmod=/sys/module; mods=/lib/modules/$(uname -r)",
                                 f"sysmod={sysmod}; mods={mods}")
    assert script != PROBE_LINUX
    out = subprocess.run(["sh", "-c", script], capture_output=True, text=True,
                         env={"PATH": f"{bin_}:/usr/bin:/bin"}).stdout
    probe = parse_probe(out)
    assert probe["vxlan"] == "yes" and probe["ipsec"] == "yes" and probe["gre"] == "module"
    assert probe["wireguard"] == ("userspace" if Path("/dev/net/tun").exists() else
                                  "no: no wireguard kernel module and no wireguard-go")
    calls = log.read_text().splitlines()
    assert not any(c.startswith("ip ") for c in calls), calls  # nothing made, nothing loaded
    assert "modprobe -n -q ip_gre" in calls and "modprobe -n -q wireguard" in calls


def test_an_end_is_asked_whether_it_is_still_there(tmp_path):
    """After a reconnect: a reset host has lost its ends (abtui.measure.engine.verify)."""
    import subprocess


    vxlan = _end(TunnelType.VXLAN)
    assert present_command(vxlan.record()) == f"ip link show dev {vxlan.ifname} >/dev/null 2>&1"
    assert present_command(_end(TunnelType.IPSEC).record()) == (
        "ip xfrm state get src 198.19.1.1 dst 198.19.1.2 proto esp spi 0x00001234 "
        ">/dev/null 2>&1")
    assert present_command(_bsd(TunnelType.GRE).record()).startswith(
        f"ifconfig {_bsd(TunnelType.GRE).ifname} ")
    with pytest.raises(BadInput):
        present_command({**vxlan.record(), "ifname": "eth0; reboot"})
    # FreeBSD IPsec: the outbound SA in setkey -D's listing, by its SPI
    stub = tmp_path / "setkey"
    stub.write_text("#!/bin/sh\nprintf '198.19.1.1 198.19.1.2\\n\\tesp mode=transport "
                    "spi=%s reqid=0(0x00000000)\\n' \"$SPI\"\n")
    stub.chmod(0o755)
    command = present_command(_bsd(TunnelType.IPSEC).record())
    for spi, there in (("4660(0x00001234)", 0), ("22136(0x00005678)", 1)):
        got = subprocess.run(["sh", "-c", command], env={
            "PATH": f"{tmp_path}:/usr/bin:/bin", "SPI": spi})
        assert got.returncode == there, spi
