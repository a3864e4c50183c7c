"""The 32-bit ARM guest (abtui.lab.vm.armguest): its qemu command line (virt with highmem off,
`-cpu max` for the AES/PMULL extensions, virtio-mmio NICs on taps, instruction counting where
asked, the clock word on the kernel command line), the lab's OpenSSH host key in dropbear's
format, and the files it gets over the base."""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest

from abtui.lab.vm import armguest


def _guest(tmp_path: Path, clock: str = "") -> armguest.ArmGuest:
    key = tmp_path / "host"
    subprocess.run(["ssh-keygen", "-q", "-t", "ed25519", "-N", "", "-f", str(key)], check=True)
    return armguest.ArmGuest(
        alias="lab-a-arm", image=tmp_path / "zImage", mgmt_tap="abl-xa",
        mgmt_mac="52:54:00:ff:01:30", mgmt_address="198.18.255.13/24", data_tap="abl-xad",
        data_mac="52:54:00:ff:01:31", data_address="198.18.1.3/24", host_key=key,
        authorized_keys="ssh-ed25519 AAAA lab\n", state_dir=tmp_path, clock=clock)


def test_the_qemu_command(tmp_path: Path) -> None:
    cmd = armguest.qemu_command(_guest(tmp_path))
    assert cmd[:9] == ["qemu-system-arm", "-M", "virt,highmem=off", "-cpu", "max", "-smp", "1",
                       "-m", "512"]
    assert "virtio-net-device,netdev=mgmt,mac=52:54:00:ff:01:30" in cmd
    assert "tap,id=data,ifname=abl-xad,script=no,downscript=no" in cmd
    assert cmd[cmd.index("-append") + 1] == "console=ttyAMA0 panic=-1"
    assert "-icount" not in cmd
    (tmp_path / "c").mkdir()
    counted = armguest.qemu_command(_guest(tmp_path / "c", "icount:6"))
    assert counted[counted.index("-icount") + 1] == "shift=6,sleep=on"
    assert counted[counted.index("-append") + 1].endswith(" abtui.clock=icount:6")


def test_the_host_key_in_dropbears_format_is_the_same_key(tmp_path: Path) -> None:
    from cryptography.hazmat.primitives import serialization

    g = _guest(tmp_path)
    blob = armguest.dropbear_key(g.host_key.read_bytes())
    assert blob[:15] == b"\x00\x00\x00\x0bssh-ed25519" and blob[15:19] == (64).to_bytes(4, "big")
    pub_line = (tmp_path / "host.pub").read_text().split()[1]
    pub = serialization.load_ssh_public_key(f"ssh-ed25519 {pub_line}".encode())
    assert blob[-32:] == pub.public_bytes(serialization.Encoding.Raw,
                                          serialization.PublicFormat.Raw)
    assert len(blob) == 4 + 11 + 4 + 64


def test_a_key_that_is_not_ed25519_is_refused(tmp_path: Path) -> None:
    rsa = tmp_path / "rsa"
    subprocess.run(["ssh-keygen", "-q", "-t", "rsa", "-b", "1024", "-N", "", "-f", str(rsa)],
                   check=True)
    with pytest.raises(armguest.BadInput, match="must be ed25519"):
        armguest.dropbear_key(rsa.read_bytes())


def test_the_guest_names_its_nics_by_mac_and_runs_dropbear_keys_only(tmp_path: Path) -> None:
    g = _guest(tmp_path)
    files = armguest.guest_files(g)
    script = files["etc/abtui/guest.sh"][1].decode()
    assert '52:54:00:ff:01:31) /bin/ip link set "${i##*/}" name data0' in script
    assert "/bin/ip addr add 198.18.1.3/24 dev data0" in script
    assert script.rstrip().endswith("-p 198.18.255.13:22")
    assert " -s " in script  # no password logins
    assert files["root/.ssh/authorized_keys"] == (0o600, b"ssh-ed25519 AAAA lab\n")
    assert files["etc/hostname"][1] == b"lab-a-arm\n"
