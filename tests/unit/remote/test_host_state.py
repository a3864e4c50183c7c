"""Host state beside the knobs (abtui.remote.host_state): the Linux and FreeBSD readings
parsed into comparable items, what a host cannot say recorded as unavailable, and untrusted
names kept out of the shell."""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest

from abtui.core.errors import BadInput
from abtui.remote.host_state import DEV, parse_state, shown
from abtui.remote.os.freebsd.knobs import FreeBSD
from abtui.remote.os.linux.knobs import Linux
from abtui.remote.traffic import parse_counters

LINUX_OUT = """\
@@ device
eth1
@@ procsys
/proc/sys/net/ipv4/tcp_sack:1
/proc/sys/net/ipv4/tcp_wmem:4096\t16384\t4194304
/proc/sys/net/netfilter/nf_conntrack_count:17
/proc/sys/net/ipv6/conf/eth1/stable_secret:x
/proc/sys/net/ipv4/conf/eth1.100/rp_filter:2
/proc/sys/kernel/hostname:nope
@@ cmdline
BOOT_IMAGE=/vmlinuz-6.1 root=/dev/sda1 isolcpus=2,3
@@ governor
cpu0 performance
cpu1 performance
cpu2 powersave
@@ mtu
9000
@@ ethtool-k
Features for eth1:
rx-checksumming: on
tcp-segmentation-offload: off
\ttx-tcp-segmentation: off
large-receive-offload: off [fixed]
@@ ethtool-c
Coalesce parameters for eth1:
Adaptive RX: on  TX: off
rx-usecs: 3
tx-usecs: n/a
@@ ethtool-g
Ring parameters for eth1:
Pre-set maximums:
RX:\t\t4096
TX:\t\t4096
Current hardware settings:
RX:\t\t512
TX:\t\t1024
@@! ethtool-l netlink error: Operation not supported
@@ ethtool-i
driver: ixgbe
version: 6.1.0
firmware-version: 0x800003df
bus-info: 0000:03:00.1
@@ qdisc
qdisc mq 0: root
qdisc fq_codel 0: parent :1 limit 10240p flows 1024
@@ irq
eth1-TxRx-0 0
eth1-TxRx-1 1-3
"""


def test_linux_reading_becomes_items_named_for_the_data_device() -> None:
    st = parse_state(LINUX_OUT)
    assert st.device == "eth1"
    items = st.items
    assert items["sysctl net.ipv4.tcp_sack"] == "1"
    assert items["sysctl net.ipv4.tcp_wmem"] == "4096 16384 4194304"  # tabs as words
    assert "sysctl net.netfilter.nf_conntrack_count" not in items  # moves by itself
    assert "sysctl net.ipv6.conf.eth1.stable_secret" not in items
    assert "sysctl kernel.hostname" not in items  # only net.*
    assert items["sysctl net.ipv4.conf.eth1/100.rp_filter"] == "2"  # sysctl's own spelling
    assert items["kernel cmdline"].endswith("isolcpus=2,3")
    assert items["cpu governor"] == "performance (cpu0 cpu1), powersave (cpu2)"
    assert items[f"{DEV} mtu"] == "9000"
    assert items[f"{DEV} offload tcp-segmentation-offload"] == "off"
    assert items[f"{DEV} offload tx-tcp-segmentation"] == "off"
    assert items[f"{DEV} offload large-receive-offload"] == "off [fixed]"
    assert items[f"{DEV} coalesce adaptive-rx"] == "on"
    assert items[f"{DEV} coalesce adaptive-tx"] == "off"
    assert items[f"{DEV} coalesce rx-usecs"] == "3"
    assert items[f"{DEV} ring RX"] == "512"  # the current setting, not the maximum
    assert items[f"{DEV} ring TX"] == "1024"
    assert items[f"{DEV} driver"] == "ixgbe"
    assert items[f"{DEV} firmware-version"] == "0x800003df"
    assert f"{DEV} bus-info" not in items
    assert items[f"{DEV} qdisc"] == ("qdisc mq 0: root; qdisc fq_codel 0: parent :1 limit "
                                     "10240p flows 1024")
    assert items[f"{DEV} irq eth1-TxRx-1 affinity"] == "1-3"
    assert st.unavailable == {f"{DEV} channels": "netlink error: Operation not supported"}
    assert shown(f"{DEV} mtu", st.device) == "eth1 mtu"
    assert shown("sysctl net.ipv4.tcp_sack", st.device) == "net.ipv4.tcp_sack"


def test_sysctl_output_where_grep_is_missing() -> None:
    st = parse_state("@@ sysctl\nnet.ipv4.tcp_sack = 0\nnet.core.somaxconn = 4096\n")
    assert st.items == {"sysctl net.ipv4.tcp_sack": "0", "sysctl net.core.somaxconn": "4096"}


def test_freebsd_reading() -> None:
    out = """\
@@ device
ix2
@@ sysctl
net.inet.tcp.sack.enable=1
net.inet.tcp.pcbcount=12
@@ cmdline
kernel=kernel
@@! governor no cpufreq governor on FreeBSD (powerd, if any, is a daemon)
@@ ifconfig
ix2: flags=8843<UP,BROADCAST,RUNNING,SIMPLEX,MULTICAST> metric 0 mtu 1500
\toptions=4e538bb<RXCSUM,TXCSUM,VLAN_MTU,TSO4,LRO>
\tcapabilities=4f5bbbb<RXCSUM,TXCSUM,VLAN_MTU,TSO4,TSO6,LRO>
\tmedia: Ethernet autoselect (10Gbase-SR <full-duplex>)
@@ devsysctl
dev.ix.2.enable_aim=1
dev.ix.2.fw_version=Phy ID 0x0
@@! qdisc no tc on FreeBSD
@@ irq
irq264 0, 2
"""
    st = parse_state(out)
    assert st.device == "ix2"
    assert st.items["sysctl net.inet.tcp.sack.enable"] == "1"
    assert "sysctl net.inet.tcp.pcbcount" not in st.items
    assert st.items[f"{DEV} mtu"] == "1500"
    assert st.items[f"{DEV} offloads"] == "RXCSUM TXCSUM VLAN_MTU TSO4 LRO"
    assert st.items["sysctl dev.ix.2.enable_aim"] == "1"
    assert st.items[f"{DEV} media"].startswith("Ethernet autoselect")
    assert st.items[f"{DEV} irq irq264 affinity"] == "0, 2"
    assert set(st.unavailable) == {"cpu governor", f"{DEV} qdisc"}


@pytest.mark.parametrize("junk", ["", "@@", "@@!", "@@ sysctl\n= =\n", "\x00\xff", "@@ irq\n\n"])
def test_parser_never_raises(junk: str) -> None:
    parse_state(junk)
    assert parse_counters(junk) is None


def test_device_and_target_never_reach_the_shell_as_code() -> None:
    with pytest.raises(BadInput):
        Linux().host_state_command("eth0; reboot", None)
    with pytest.raises(BadInput):
        FreeBSD().link_counters_command("$(id)", None)
    # a target that is not an address is left out, never quoted into a command
    assert "reboot" not in Linux().host_state_command(None, "1.2.3.4; reboot")
    assert "reboot" not in Linux().link_counters_command(None, "$(reboot)")


def test_linux_script_runs_in_a_shell_and_says_what_is_missing() -> None:
    """The real script under sh with the loopback device: no error, and what lo has not
    (a driver, rings) recorded as unavailable rather than failing."""
    run = subprocess.run(["sh", "-c", Linux().host_state_command("lo", None)],
                         capture_output=True, text=True, timeout=30)
    assert run.returncode == 0
    st = parse_state(run.stdout)
    assert st.device == "lo"
    assert st.items[f"{DEV} mtu"].isdigit()
    assert any(k.startswith("sysctl net.") for k in st.items) or "net.* sysctls" in \
        st.unavailable
    # a device that is not there: every device item unavailable, still no error
    run = subprocess.run(["sh", "-c", Linux().host_state_command("nosuchdev0", None)],
                         capture_output=True, text=True, timeout=30)
    st = parse_state(run.stdout)
    assert run.returncode == 0 and st.unavailable[f"{DEV} mtu"].startswith("no data device")


def test_counters_line() -> None:
    got = parse_counters("data0 1796609417.030427 39706664 22336 714 336\n")
    assert got is not None and got.device == "data0" and got.clock == 1796609417.030427
    assert (got.tx_bytes, got.rx_bytes, got.tx_packets, got.rx_packets) == (
        39706664, 22336, 714, 336)
    assert parse_counters("ix2 - 10 20 1 2").clock is None  # type: ignore[union-attr]
    run = subprocess.run(["bash", "-c", Linux().link_counters_command("lo", None)],
                         capture_output=True, text=True, timeout=30)
    assert parse_counters(run.stdout) is not None, run.stderr


def test_counters_in_a_shell_without_epochrealtime_carry_the_uptime_clock() -> None:
    """dash (the ARM guest's root shell) has no EPOCHREALTIME: the reading's clock is the
    host's seconds since boot, the guest's own clock, so an instruction-counted guest's link
    rate and its iperf3 figures are on one clock."""
    run = subprocess.run(["dash", "-c", Linux().link_counters_command("lo", None)],
                         capture_output=True, text=True, timeout=30)
    got = parse_counters(run.stdout)
    assert got is not None and got.clock is not None, run.stdout + run.stderr
    uptime = float(Path("/proc/uptime").read_text().split()[0])
    assert abs(got.clock - uptime) < 5.0
