"""The 32-bit ARM guest's userspace (abtui.lab.vm.armroot): Debian's armhf packages and the
libraries they need (no maintainer-script tools), busybox's applets where no package put the
command (iproute2's `ip`, which has xfrm, stays), and a cpio archive the kernel can unpack.
The base assembled from the cached packages is checked for what a lab host runs; where the
packages are not cached (`make kernels` fetches them: 12 MB) that check skips, saying so."""

from __future__ import annotations

import gzip
import stat
from pathlib import Path

import pytest

from abtui.core.errors import BadInput
from abtui.lab.vm import armroot


def read_newc(data: bytes) -> dict[str, tuple[int, bytes]]:
    """A newc cpio archive's entries (name -> mode, data), read as the kernel reads them."""
    out: dict[str, tuple[int, bytes]] = {}
    pos = 0
    while True:
        assert data[pos:pos + 6] == b"070701", f"bad magic at {pos}"
        fields = [int(data[pos + 6 + 8 * i:pos + 14 + 8 * i], 16) for i in range(13)]
        mode, size, namesize = fields[1], fields[6], fields[11]
        name = data[pos + 110:pos + 110 + namesize - 1].decode()
        pos += 110 + namesize
        pos += -pos % 4
        body = data[pos:pos + size]
        pos += size
        pos += -pos % 4
        if name == "TRAILER!!!":
            return out
        out[name] = (mode, body)


def test_the_archive_reads_back_entry_for_entry() -> None:
    entries = [("etc", stat.S_IFDIR | 0o755, b""), ("etc/x", stat.S_IFREG | 0o600, b"abc"),
               ("bin/sh", stat.S_IFLNK | 0o777, b"busybox")]
    back = read_newc(armroot.cpio_newc(entries))
    assert back == {n: (m, d) for n, m, d in entries}


def test_an_overlay_brings_its_folders() -> None:
    back = read_newc(gzip.decompress(armroot.overlay({"etc/dropbear/key": (0o600, b"k")})))
    assert stat.S_ISDIR(back["etc"][0]) and stat.S_ISDIR(back["etc/dropbear"][0])
    assert back["etc/dropbear/key"] == (stat.S_IFREG | 0o600, b"k")


def test_dependencies_follow_libraries_not_maintainer_tools() -> None:
    records = {
        "iperf3": "Package: iperf3\nDepends: debconf, adduser, libc6 (>= 2.34), libiperf0",
        "libiperf0": "Package: libiperf0\nDepends: libc6, libssl3 (>= 3.0.0)",
        "dropbear-bin": "Package: dropbear-bin\nDepends: libc6, zlib1g (>= 1:1.1.4)",
        "libc6": "Package: libc6\nDepends: libgcc-s1",
        "libgcc-s1": "Package: libgcc-s1\nDepends: gcc-12-base (= 12.2.0-14), libc6",
        "libssl3": "Package: libssl3\nPre-Depends: debconf (>= 0.5) | debconf-2.0",
        "zlib1g": "Package: zlib1g\nDepends: libc6",
    }
    asked: list[list[str]] = []

    def look(names: list[str]) -> dict[str, str]:
        asked.append(names)
        return {n: records[n] for n in names if n in records}

    got = armroot.closure(["iperf3", "dropbear-bin"], look)
    assert got == ["iperf3", "dropbear-bin", "libc6", "libiperf0", "zlib1g", "libgcc-s1",
                   "libssl3"]
    assert len(asked) == 3  # a level a call
    with pytest.raises(BadInput, match="armhf package nope: not in the package lists"):
        armroot.closure(["nope"], look)


def test_busybox_applets_never_shadow_a_packages_command(tmp_path: Path) -> None:
    (tmp_path / "bin").mkdir()
    (tmp_path / "bin" / "ip").write_text("iproute2")
    made = armroot.link_applets(tmp_path, ["/bin/ip", "/sbin/ifconfig", "/usr/bin/wc"])
    assert made == 2
    assert (tmp_path / "bin" / "ip").read_text() == "iproute2"
    assert Path(str(tmp_path / "sbin" / "ifconfig")).readlink() == Path("/bin/busybox")


def test_the_cached_base_holds_what_a_lab_host_runs() -> None:
    base = armroot.cached()
    if base is None:
        pytest.skip("the armhf packages are not in the kernel cache (`make kernels` fetches "
                    "them: 12 MB)")
    entries = read_newc(gzip.decompress(base.archive.read_bytes()))
    for path in ("init", "bin/busybox", "bin/dash", "usr/sbin/dropbear", "usr/bin/iperf3",
                 "bin/ip",
                 "lib/ld-linux-armhf.so.3", "etc/passwd"):
        assert path in entries, f"{path} missing from the ARM guest's userspace"
    assert not stat.S_ISLNK(entries["bin/ip"][0])  # iproute2's, with xfrm
    assert entries["bin/sh"][1] == b"dash"  # dash's own link: the init runs through PATH too
    # root's shell runs iproute2's `ip` (busybox's shell would run its own applet first)
    assert entries["etc/passwd"][1].startswith(b"root:x:0:0:root:/root:/bin/dash\n")
    assert entries["usr/bin/iperf3"][1][:4] == b"\x7fELF"
    assert entries["usr/bin/iperf3"][1][18] == 40  # e_machine: ARM
    assert base.archive.stat().st_size < 20_000_000
