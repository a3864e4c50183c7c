"""A 32-bit ARM guest as a lab host: `qemu-system-arm -M virt,highmem=off -cpu max` (AArch32
with the ARMv8 AES/PMULL extensions the seed's CE crypto drivers use), a kernel built by
abtui.lab.kbuild, Debian's armhf userspace (abtui.lab.vm.armroot) and the guest's own files
appended: its name, addresses, the lab's host key (converted for dropbear) and the lab's client
key authorized, so abtui reaches it over SSH like any host. Its kernel is switched by power:
the qemu is stopped and started on the other build (there is no kexec in the small config).

The NICs are virtio-mmio (`virtio-net-device`), named by MAC address in the guest. The guest
says it is ready on its serial console (qemu's log): the release, then its name.
"""

from __future__ import annotations

import os
import shlex
import signal
import subprocess
import time
from dataclasses import dataclass
from pathlib import Path

from abtui.core.clock import CMDLINE_WORD
from abtui.core.errors import BadInput, LabError
from abtui.lab.vm.armroot import Userspace, overlay
from abtui.lab.vm.cryptorank import HELPER, helper_binary, rank_lines
from abtui.lab.vm.guest import READY, icount_args

QEMU_ARM = "qemu-system-arm"
VERSION = "abtui guest version: "  # the line before the ready line: `uname -v`
MACHINE = ["-M", "virt,highmem=off", "-cpu", "max", "-smp", "1", "-m", "512"]


@dataclass(frozen=True, slots=True)
class ArmGuest:
    """One ARM guest: its kernel image, NICs (tap, MAC, address) and files."""

    alias: str
    image: Path
    mgmt_tap: str
    mgmt_mac: str
    mgmt_address: str  # with its prefix length: 198.18.x.y/24
    data_tap: str
    data_mac: str
    data_address: str
    host_key: Path  # the lab's OpenSSH host key for this alias
    authorized_keys: str
    state_dir: Path
    clock: str = ""  # abtui.core.clock
    # crypto algorithms re-ranked at boot, before any SA exists: (driver, priority), in order
    # (`lab up --arm-crypto-priority`; abtui.lab.vm.cryptorank)
    crypto_priority: tuple[tuple[str, int], ...] = ()

    @property
    def log(self) -> Path:
        return self.state_dir / f"arm-{self.alias}.log"

    @property
    def pidfile(self) -> Path:
        return self.state_dir / f"arm-{self.alias}.pid"

    @property
    def initrd(self) -> Path:
        return self.state_dir / f"arm-{self.alias}.cpio.gz"


def dropbear_key(openssh_private: bytes) -> bytes:
    """An OpenSSH ed25519 private key in dropbear's own format: string "ssh-ed25519", then
    one string of the 32-byte seed and the 32-byte public key (dropbear's ed25519.c)."""
    from cryptography.hazmat.primitives import serialization
    from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey

    key = serialization.load_ssh_private_key(openssh_private, password=None)
    if not isinstance(key, Ed25519PrivateKey):
        raise BadInput("the ARM guest's host key must be ed25519 (dropbear reads it)")
    seed = key.private_bytes(serialization.Encoding.Raw, serialization.PrivateFormat.Raw,
                             serialization.NoEncryption())
    pub = key.public_key().public_bytes(serialization.Encoding.Raw,
                                        serialization.PublicFormat.Raw)

    def string(b: bytes) -> bytes:
        return len(b).to_bytes(4, "big") + b

    return string(b"ssh-ed25519") + string(seed + pub)


def guest_script(g: ArmGuest) -> str:
    """What the guest runs after the base's init: NICs named by MAC and addressed, the ready
    line, dropbear in the foreground (keys only)."""
    return "\n".join([
        "#!/bin/sh",
        # the base's tmpfs /run is world-writable (1777): abtui takes no host lease in a
        # folder others can write, so /run is root's alone, as on a Debian host
        "chmod 0755 /run",
        "for i in /sys/class/net/*; do",
        '  case "$(cat "$i/address")" in',
        f'  {g.mgmt_mac}) /bin/ip link set "${{i##*/}}" name mgmt0 ;;',
        f'  {g.data_mac}) /bin/ip link set "${{i##*/}}" name data0 ;;',
        "  esac",
        "done",
        f"/bin/ip addr add {g.mgmt_address} dev mgmt0 && /bin/ip link set mgmt0 up",
        f"/bin/ip addr add {g.data_address} dev data0 && /bin/ip link set data0 up",
        *rank_lines(g.crypto_priority),
        f'echo "{VERSION}$(uname -v)"',
        f'echo "{READY}$(uname -r) $(hostname)"',
        "exec /usr/sbin/dropbear -F -E -s -r /etc/dropbear/dropbear_ed25519_host_key "
        f"-p {g.mgmt_address.split('/')[0]}:22",
        "",
    ])


def guest_files(g: ArmGuest) -> dict[str, tuple[int, bytes]]:
    files = {
        "etc/hostname": (0o644, f"{g.alias}\n".encode()),
        "etc/abtui/guest.sh": (0o755, guest_script(g).encode()),
        "etc/dropbear/dropbear_ed25519_host_key": (0o600,
                                                   dropbear_key(g.host_key.read_bytes())),
        "root/.ssh/authorized_keys": (0o600, g.authorized_keys.encode()),
    }
    if g.crypto_priority:
        files[HELPER.lstrip("/")] = (0o755, helper_binary(g.state_dir).read_bytes())
    return files


def qemu_command(g: ArmGuest) -> list[str]:
    """The guest's qemu: the machine, its kernel and initramfs, two virtio-mmio NICs on taps,
    the serial console to its log, and the clock (instruction counting where asked)."""
    append = "console=ttyAMA0 panic=-1" + (f" {CMDLINE_WORD}={g.clock}" if g.clock else "")
    return [QEMU_ARM, *MACHINE, "-nographic", "-no-reboot", "-kernel", str(g.image),
            "-initrd", str(g.initrd), "-append", append,
            "-netdev", f"tap,id=mgmt,ifname={g.mgmt_tap},script=no,downscript=no",
            "-device", f"virtio-net-device,netdev=mgmt,mac={g.mgmt_mac}",
            "-netdev", f"tap,id=data,ifname={g.data_tap},script=no,downscript=no",
            "-device", f"virtio-net-device,netdev=data,mac={g.data_mac}",
            *icount_args(g.clock), "-pidfile", str(g.pidfile)]


def launch(g: ArmGuest, base: Userspace) -> int:
    """Write the guest's initramfs (the base, then its own files) and start its qemu in a
    session of its own; the qemu's PID."""
    g.state_dir.mkdir(parents=True, exist_ok=True)
    g.initrd.write_bytes(base.archive.read_bytes() + overlay(guest_files(g)))
    g.pidfile.unlink(missing_ok=True)
    with g.log.open("wb") as log:
        proc = subprocess.Popen(qemu_command(g), stdin=subprocess.DEVNULL, stdout=log,
                                stderr=subprocess.STDOUT, start_new_session=True)
    return proc.pid


def ready_release(g: ArmGuest) -> str | None:
    """The release the guest said it runs on its console, None before it said so."""
    try:
        text = g.log.read_text(errors="replace")
    except OSError:
        return None
    for line in text.splitlines():
        if line.startswith(READY):
            words = line.removeprefix(READY).split()
            return words[0] if words else None
    return None


def ready_version(state_dir: Path, alias: str) -> tuple[str, str] | None:
    """(release, `uname -v`) the guest said it runs on its console, None before its ready
    line: two builds of one source share a release, their versions differ."""
    try:
        text = (state_dir / f"arm-{alias}.log").read_text(errors="replace")
    except OSError:
        return None
    version = None
    for line in text.splitlines():
        line = line.rstrip("\r")
        if line.startswith(VERSION):
            version = line.removeprefix(VERSION).strip()
        elif line.startswith(READY) and version is not None:
            words = line.removeprefix(READY).split()
            return (words[0], version) if words else None
    return None


def wait_ready(g: ArmGuest, pid: int, timeout: float) -> float:
    """Seconds until the guest said it is ready; LabError with its console's last lines when
    it stopped or did not say so in time."""
    t0 = time.monotonic()
    while time.monotonic() - t0 < timeout:
        if ready_release(g):
            return time.monotonic() - t0
        try:
            done, _ = os.waitpid(pid, os.WNOHANG)
        except ChildProcessError:
            done = pid
        if done:
            break
        time.sleep(0.2)
    tail = " | ".join(g.log.read_text(errors="replace").splitlines()[-4:]) \
        if g.log.exists() else ""
    raise LabError(f"ARM guest {g.alias} did not come up: {tail}")


def stop(pid: int) -> None:
    """Power off: the guest's qemu ended (its session: qemu alone)."""
    try:
        os.killpg(pid, signal.SIGTERM)
    except ProcessLookupError:
        return
    deadline = time.monotonic() + 10
    while time.monotonic() < deadline:
        try:
            if os.waitpid(pid, os.WNOHANG)[0]:
                return
        except ChildProcessError:
            return
        time.sleep(0.05)
    os.killpg(pid, signal.SIGKILL)


def shell_line(g: ArmGuest) -> str:
    """The qemu command as one shell line (for docs and logs)."""
    return shlex.join(qemu_command(g))
