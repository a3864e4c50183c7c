"""The softirq-crypto seed's own change on the lab's 32-bit ARM guest (slow tier: two kernel
builds of 8-9 CPU minutes each when not cached, then TCG boots): Debian's linux-source-6.1
built BEFORE and AFTER the ARM NEON-in-softirq series (profiles/patches/arm-neon-softirq) with
the small `virt` config, the two kernels really different where the series says (AFTER's
`kernel_neon_end` ends in `__local_bh_enable_ip`, BEFORE's does not), and one ARM guest
power-cycled from BEFORE to AFTER and back: each boot reached over SSH (dropbear, the lab's
host key checked), its release and its CE crypto drivers read from inside, on the wall clock
and on the instruction-counted one. Taps, bridge and qemu are removed even on failure."""

from __future__ import annotations

import contextlib
import os
import shutil
import subprocess
from collections.abc import Iterator
from pathlib import Path

import pytest

from abtui.core.clock import parse_clock
from abtui.lab import kbuild
from abtui.lab.vm import armguest, armroot
from tests.lab.namespaces import lab_names

pytestmark = [pytest.mark.lab, pytest.mark.slow]
ROOT = Path(__file__).resolve().parents[2]
CONFIG = ROOT / "profiles" / "kernel-configs" / "arm-virt-ipsec.config"
SERIES = tuple(sorted((ROOT / "profiles" / "patches" / "arm-neon-softirq").glob("*.patch")))
BOOT_TIMEOUT = 900.0  # a TCG boot at load 20 (the crypto self-tests run at boot)


def _missing() -> str | None:
    for program, package in (("qemu-system-arm", "qemu-system-arm"),
                             ("arm-linux-gnueabihf-gcc", "gcc-arm-linux-gnueabihf"),
                             ("arm-linux-gnueabihf-objdump", "binutils-arm-linux-gnueabihf")):
        if shutil.which(program) is None:
            return f"`{program}` is missing (Debian: {package}; `make setup`)"
    if kbuild.cached_source("linux-source-6.1") is None:
        return "linux-source-6.1 is not in the kernel cache (`make kernels` fetches it)"
    if armroot.cached() is None:
        return "the armhf userspace is not in the kernel cache (`make kernels` makes it)"
    return None


@pytest.fixture(scope="module")
def builds() -> tuple[kbuild.Built, kbuild.Built]:
    why = _missing()
    if why:
        pytest.skip(why)
    before = kbuild.build(kbuild.BuildSpec("linux-source-6.1", CONFIG))
    after = kbuild.build(kbuild.BuildSpec("linux-source-6.1", CONFIG, SERIES))
    return before, after


def _tail_of(built: kbuild.Built, function: str) -> str:
    """The disassembly of one function of the build's vmlinux."""
    out = subprocess.run(["arm-linux-gnueabihf-objdump", "-d", "--no-show-raw-insn",
                          str(built.out / "vmlinux")], capture_output=True, text=True).stdout
    start = out.index(f"<{function}>:")
    return out[start:out.index("\n\n", start)]


def test_the_two_builds_differ_where_the_series_says(
        builds: tuple[kbuild.Built, kbuild.Built]) -> None:
    before, after = builds
    assert before.key != after.key and before.image.is_file() and after.image.is_file()
    assert "__local_bh_enable_ip" in _tail_of(after, "kernel_neon_end")
    assert "__local_bh_enable_ip" not in _tail_of(before, "kernel_neon_end")


@pytest.fixture
def links() -> Iterator[dict[str, str]]:
    """A management bridge (with this machine's address on it), a data bridge and the ARM
    guest's two taps, named from the test lab's names; removed afterwards."""
    _, ifprefix, mgmt = lab_names()
    names = {"bridge": f"{ifprefix}-xm", "data": f"{ifprefix}-xd", "tap": f"{ifprefix}-xa",
             "dtap": f"{ifprefix}-xad", "host": f"198.19.{mgmt}.1", "mgmt": mgmt}

    def ip(*args: str, check: bool = True) -> None:
        subprocess.run(["ip", *args], check=check, capture_output=True)

    try:
        for br in (names["bridge"], names["data"]):
            ip("link", "add", "name", br, "type", "bridge")
            ip("link", "set", br, "up")
        ip("addr", "add", f"{names['host']}/24", "dev", names["bridge"])
        for tap, br in ((names["tap"], names["bridge"]), (names["dtap"], names["data"])):
            ip("tuntap", "add", "dev", tap, "mode", "tap")
            ip("link", "set", tap, "master", br, "up")
        yield names
    finally:
        for link in (names["tap"], names["dtap"], names["bridge"], names["data"]):
            ip("link", "del", link, check=False)


def _boot(g: armguest.ArmGuest, key: Path) -> tuple[float, str]:
    """Power on, wait for the guest's word and its SSH; seconds to ready, and what it said
    from inside. Powered off afterwards."""
    pid = armguest.launch(g, armroot.cached())  # type: ignore[arg-type]
    try:
        seconds = armguest.wait_ready(g, pid, BOOT_TIMEOUT)
        address = g.mgmt_address.split("/")[0]
        ssh = ["ssh", "-i", str(key), "-o", f"UserKnownHostsFile={g.state_dir / 'known'}",
               "-o", "StrictHostKeyChecking=yes", "-o", "BatchMode=yes", "-o",
               "ConnectTimeout=120", f"root@{address}",
               "uname -r; cat /proc/cmdline; grep '^driver' /proc/crypto | sort -u"]
        for _ in range(30):
            proc = subprocess.run(ssh, capture_output=True, text=True, timeout=300)
            if proc.returncode == 0:
                return seconds, proc.stdout
        raise AssertionError(f"no SSH into the ARM guest: {proc.stderr.strip()}")
    finally:
        armguest.stop(pid)


def test_one_arm_guest_power_cycles_between_the_builds(
        builds: tuple[kbuild.Built, kbuild.Built], links: dict[str, str],
        tmp_path: Path) -> None:
    key, host = tmp_path / "id", tmp_path / "host"
    for k in (key, host):
        subprocess.run(["ssh-keygen", "-q", "-t", "ed25519", "-N", "", "-f", str(k)],
                       check=True)
    address = f"198.19.{links['mgmt']}.13"
    pub = host.with_suffix(".pub").read_text().split()
    (tmp_path / "known").write_text(f"{address} {pub[0]} {pub[1]}\n")
    before, after = builds
    seen = []
    for built, clock in ((before, ""), (after, ""), (before, "icount:6")):
        g = armguest.ArmGuest(
            alias="arm", image=built.image, mgmt_tap=links["tap"], mgmt_mac="52:54:00:ee:01:30",
            mgmt_address=f"{address}/24", data_tap=links["dtap"], data_mac="52:54:00:ee:01:31",
            data_address="198.19.1.3/24", host_key=host,
            authorized_keys=key.with_suffix(".pub").read_text(), state_dir=tmp_path,
            clock=parse_clock(clock))
        seconds, said = _boot(g, key)
        seen.append((built.key, clock, seconds))
        assert said.splitlines()[0].startswith("6.1.192")
        assert ("abtui.clock=icount:6" in said) == bool(clock)
        assert "driver       : ctr-aes-ce" in said and "driver       : ghash-ce-sync" in said
    assert [s[0] for s in seen] == [before.key, after.key, before.key]
    print(f"ARM guest boots (build key, clock, seconds to ready): {seen}, "
          f"load {os.getloadavg()[0]:.1f}")
    with contextlib.suppress(OSError):
        (tmp_path / "boots.txt").write_text(repr(seen))
