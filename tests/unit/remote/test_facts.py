"""Host facts: the one-round-trip script's replies, Linux and FreeBSD."""

from __future__ import annotations

import pytest

from abtui.core.errors import BadInput
from abtui.remote.facts import facts_command, parse_facts

LINUX = """os=Linux
hostname=box
kernel_release=6.1.0-18-amd64
kernel_version=#1 SMP PREEMPT_DYNAMIC Debian 6.1.76-1 (2024-02-01)
cpu_model=AMD EPYC 7302 16-Core Processor
cpu_count=32
nic_driver=mlx5_core
nic_firmware=16.35.2000 (MT_0000000012)
link_speed=100000
iperf3_version=iperf 3.12 (cJSON 1.7.15)
ping_version=ping from iputils 20221126
"""

FREEBSD = """os=FreeBSD
hostname=fbsd
kernel_release=14.0-RELEASE
kernel_version=FreeBSD 14.0-RELEASE #0 releng/14.0-n265380-f9716eee8ab4: GENERIC
cpu_model=Intel(R) Xeon(R) CPU E5-2650 v2 @ 2.60GHz
cpu_count=16
nic_driver=ix
nic_desc=Intel(R) X520 82599ES (SFI/SFP+)
nic_firmware=
link_speed=Ethernet autoselect (10Gbase-SR <full-duplex>)
pciconf:ix2@pci0:4:0:0:\tclass=0x020000 vendor=0x8086
pciconf:    vendor     = 'Intel Corporation'
pciconf:    device     = '82599ES 10-Gigabit SFI/SFP+ Network Connection'
iperf3_version=iperf 3.16 (cJSON 1.7.15)
ping_version=present
"""


def test_linux_facts():
    f = parse_facts("h", LINUX, "eth0")
    assert (f.os, f.hostname, f.cpu_count, f.nic_driver, f.link_speed) == \
        ("Linux", "box", 32, "mlx5_core", "100000 Mb/s")
    assert f.kernel_version.startswith("#1 SMP") and f.nic_firmware.startswith("16.35")


def test_freebsd_facts_use_pciconf():
    f = parse_facts("h", FREEBSD, "ix2")
    assert f.os == "FreeBSD" and f.cpu_count == 16
    assert f.nic_driver == "ix (Intel Corporation 82599ES 10-Gigabit SFI/SFP+ Network Connection)"
    assert f.link_speed.startswith("Ethernet autoselect (10Gbase-SR")


@pytest.mark.parametrize("junk", ["", "\x00\x01", "=\n==\nfoo", "cpu_count=lots\nlink_speed=-1"])
def test_parser_never_raises(junk):
    f = parse_facts("h", junk, "eth0")
    assert f.alias == "h" and f.cpu_count is None


def test_device_is_validated_before_it_reaches_the_script():
    assert "dev=data0\n" in facts_command("data0")
    with pytest.raises(BadInput):
        facts_command("eth0; reboot")


def test_facts_report_the_iperf3_program_the_runs_use(tmp_path):
    """The script, run by the local sh, asks the profile's program for its version."""
    import subprocess

    fake = tmp_path / "iperf3-own-build"
    fake.write_text("#!/bin/sh\necho 'iperf 3.18 (cJSON 1.7.15)'\n")
    fake.chmod(0o755)
    out = subprocess.run(["sh", "-c", facts_command(None, str(fake))], capture_output=True,
                         text=True).stdout
    assert parse_facts("h", out).iperf3_version == "iperf 3.18 (cJSON 1.7.15)"
    with pytest.raises(BadInput):
        facts_command(None, "iperf3; reboot")


def test_cpu_frequency_and_scope() -> None:
    from abtui.remote.facts import parse_facts

    f = parse_facts("h", "os=Linux\ncpu_count=2\ncpu_mhz=2596.138\ncpu_scope=shared\n")
    assert f.cpu_mhz == 2596.138 and f.cpu_scope == "shared"
    g = parse_facts("h", "os=FreeBSD\ncpu_mhz=\ncpu_scope=own\n")
    assert g.cpu_mhz is None and g.cpu_scope == "own"
    assert parse_facts("h", "cpu_mhz=fast\n").cpu_mhz is None
