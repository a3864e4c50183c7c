"""VM hosts of the lab: a guest booting a kernel of the user's choosing, through virtme-ng.

virtme-ng (`vng`) boots the kernel in qemu with this machine's root filesystem shared
read-only, so the guest has the same sshd, iperf3, ping, wg and tc as a namespace host. Each
guest gets two NICs on tap devices in the root namespace: `mgmt0` on the lab's management
bridge (where its own sshd listens, with the lab's host key and authorized key), and `data0` on
its pair's data bridge. `data0` is one of two NIC models (NIC_MODELS): virtio-net, or an
emulated Intel 82574L (e1000e), whose interrupt throttling (ITR) the guest driver sets with
`ethtool -C data0 rx-usecs` and whose vectors show in the guest's /proc/interrupts (the lab's
analog of ix(4)'s adaptive interrupt moderation). There is no udev in the guest: the script it
runs loads the NICs' drivers, names the NICs by their MAC addresses, sets the addresses and
runs sshd in the foreground; the guest lives as long as that sshd.

virtme-ng-init locks every account in the guest's /etc/shadow; sshd (without PAM) refuses a
locked account even for a key, so the script gives root the host's "no password" mark (`*`)
on a copy bound over /etc/shadow: keys only, as on the namespace hosts.

KVM is used only where it really runs a guest: `/dev/kvm` can exist where guests hang in early
boot (no usable nested virtualization), so a guest is booted under KVM once with a deadline and
the verdict kept per host kernel and qemu; elsewhere TCG (software emulation) runs them.
"""

from __future__ import annotations

import contextlib
import json
import os
import shlex
import shutil
import signal
import subprocess
import sys
import time
from dataclasses import dataclass
from pathlib import Path

from abtui.core.clock import CMDLINE_WORD, shift_of
from abtui.core.errors import MissingPrerequisite
from abtui.lab.kernels import Kernel, cache_root
from abtui.profile.schema import LAB_NICS

QEMU = "qemu-system-x86_64"
VM_PROGRAMS = {QEMU: "qemu-system-x86", "busybox": "busybox-static"}
GUEST_MEMORY = "512M"
# the data NIC's model: qemu's device and the guest's driver module
NIC_MODELS = {"e1000e": ("e1000e", "e1000e"), "virtio": ("virtio-net-pci", "virtio_net")}
assert set(NIC_MODELS) == set(LAB_NICS)  # the models a profile's [lab] may name
DEFAULT_NIC = "virtio"
KVM_PROBE_SECONDS = 20.0
ACCEL_ENV = "ABTUI_VM_ACCEL"  # "kvm" or "tcg": skip the probe
WARM_MODULES = ("wireguard", "esp4", "ip_gre", "vxlan", "sch_netem", "tcp_bbr")
_SA = "src 198.18.0.1 dst 198.18.0.2 proto esp spi 0x00000101"
WARM_SA = (f"ip xfrm state add {_SA} mode transport aead 'rfc4106(gcm(aes))' "
           "0x0102030405060708091011121314151617181920 128")
WARM_SA_DEL = f"ip xfrm state delete {_SA}"


@dataclass(frozen=True, slots=True)
class Guest:
    """One VM host: what its qemu is given and where its files go."""

    alias: str
    kernel: Kernel
    mgmt_tap: str
    data_tap: str
    mgmt_mac: str
    data_mac: str
    mgmt_address: str
    data_address: str
    sshd_config: Path
    state_dir: Path
    nic: str = DEFAULT_NIC  # the data NIC's model (NIC_MODELS)
    clock: str = ""  # abtui.core.clock: "" the host's, "icount:N" instruction-counted

    @property
    def script(self) -> Path:
        return self.state_dir / f"vm-{self.alias}.sh"

    @property
    def pidfile(self) -> Path:
        """qemu's own pidfile (qemu writes it)."""
        return self.state_dir / f"vm-{self.alias}.pid"

    @property
    def log(self) -> Path:
        """virtme-ng's and qemu's output."""
        return self.state_dir / f"vm-{self.alias}.log"

    @property
    def share(self) -> Path:
        """A folder the guest may write (its script's and sshd's log)."""
        return share_of(self.state_dir, self.alias)


def _which(program: str) -> str | None:
    return shutil.which(program, path=os.environ.get("PATH", "") + ":/usr/sbin:/sbin")


def vng_path() -> str | None:
    """virtme-ng's `vng`: on PATH, or beside this Python (abtui's own virtualenv)."""
    beside = Path(sys.executable).parent / "vng"
    return str(beside) if beside.is_file() else _which("vng")


def check_prerequisites() -> None:
    """qemu, busybox (virtme-ng's initramfs), virtme-ng and /dev/net/tun, or one line saying
    what to install."""
    for program, package in VM_PROGRAMS.items():
        if _which(program) is None:
            raise MissingPrerequisite(
                f"VM hosts need `{program}`: install it with "
                f"`apt-get install --no-install-recommends {package}` (or run `make setup`)")
    if vng_path() is None:
        raise MissingPrerequisite("VM hosts need virtme-ng (`vng`): install it with "
                                  "`pip install virtme-ng` (or run `make setup`)")
    if not os.path.exists("/dev/net/tun"):
        raise MissingPrerequisite("VM hosts need /dev/net/tun (the tun module) for their NICs")


def missing_reason() -> str | None:
    """Why VM hosts cannot run here, None when they can (for tests that skip)."""
    try:
        check_prerequisites()
    except MissingPrerequisite as exc:
        return str(exc)
    return None


def mac(mgmt: int, pair: int, role: int, nic: int) -> str:
    """A locally administered MAC, unique per lab (its management octet), pair, role, NIC."""
    return f"52:54:00:{mgmt:02x}:{pair:02x}:{role * 16 + nic:02x}"


def guest_script(g: Guest) -> str:
    """What the guest runs: NICs named and addressed, root unlocked for keys, sshd."""
    log = g.share / "guest.log"
    return "\n".join([
        "#!/bin/sh",
        f"exec >{log} 2>&1",
        "set -x",
        *modules_link(),
        "modprobe virtio_net",
        *([f"modprobe {NIC_MODELS[g.nic][1]}"] if NIC_MODELS[g.nic][1] != "virtio_net" else []),
        "for i in /sys/class/net/*; do",
        '  case "$(cat "$i/address")" in',
        f'  {g.mgmt_mac}) ip link set "${{i##*/}}" name mgmt0 ;;',
        f'  {g.data_mac}) ip link set "${{i##*/}}" name data0 ;;',
        "  esac",
        "done",
        "ip link set lo up",
        f"ip addr add {g.mgmt_address}/24 dev mgmt0 && ip link set mgmt0 up",
        f"ip addr add {g.data_address}/24 dev data0 && ip link set data0 up",
        "mkdir -p /run/sshd",
        "sed 's/^root:[^:]*:/root:*:/' /etc/shadow > /run/abtui-shadow && "
        "mount --bind /run/abtui-shadow /etc/shadow",
        # load what tunnels and netem use, and make the ESP cipher once (its self-tests take
        # seconds under TCG), before sshd answers: a guest that answers is ready, and the
        # first tunnel switch is as quick as the next
        f"modprobe -a {' '.join(WARM_MODULES)}",
        f"{WARM_SA} && {WARM_SA_DEL}",
        f'echo "{READY}$(uname -r) $(hostname)"',
        f"exec /usr/sbin/sshd -D -E {g.share / 'sshd.log'} -f {g.sshd_config}",
        "",
    ])


def modules_link() -> list[str]:
    """Lines that point /lib/modules/RELEASE at the running build's modules when they are
    another build's: a kexec that keeps the guest's kernel command line (`kexec
    --reuse-cmdline`, as on a real host) leaves virtme-ng-init's link on the build the guest
    first booted, whose modules the new kernel refuses. The running build's are found among
    the Debian builds in the kernel cache (the guest sees this machine's files)."""
    found = shlex.quote(str(cache_root())) + '/*/root/lib/modules/"$r"'
    return [
        "r=$(uname -r)",
        'case "$(modinfo -F vermagic virtio_net 2>/dev/null)" in "$r "*) ;; *)',
        f'  for d in {found}; do',
        '    if [ -f "$d/modules.dep" ]; then ln -sfn "$d" "/lib/modules/$r"; break; fi',
        "  done ;;",
        "esac",
    ]


def vng_command(g: Guest, accel: str) -> list[str]:
    vng = vng_path()
    if vng is None:
        raise MissingPrerequisite("virtme-ng (`vng`) is missing: `pip install virtme-ng`")
    qemu_opts = " ".join([
        f"-pidfile {g.pidfile}",
        f"-netdev tap,id=mgmt,ifname={g.mgmt_tap},script=no,downscript=no",
        f"-device virtio-net-pci,netdev=mgmt,mac={g.mgmt_mac}",
        f"-netdev tap,id=data,ifname={g.data_tap},script=no,downscript=no",
        f"-device {NIC_MODELS[g.nic][0]},netdev=data,mac={g.data_mac}",
        *icount_args(g.clock),
    ])
    clock = ["--append", f"{CMDLINE_WORD}={g.clock}"] if g.clock else []
    return [vng, "--run", g.kernel.image, *(["--disable-kvm"] if accel == "tcg" else []),
            *clock, "--cpus", "1", "--memory", GUEST_MEMORY, "--name", g.alias,
            "--rwdir", str(g.share), "--exec", f"sh {g.script}", f"--qemu-opts={qemu_opts}"]


def icount_args(clock: str) -> list[str]:
    """qemu's options for a guest on an instruction-counted clock: `-icount shift=N,sleep=on`
    (the guest's time advances 2^N ns per executed instruction; an idle guest sleeps in real
    time, so timers of a guest that waits on the network still fire). Nothing for the host's
    clock. TCG only: KVM runs instructions without counting them."""
    shift = shift_of(clock)
    return [] if shift is None else ["-icount", f"shift={shift},sleep=on"]


def _env() -> dict[str, str]:
    """vng starts virtme-run through a shell: it must be on PATH."""
    env = dict(os.environ)
    vng = vng_path()
    if vng:
        env["PATH"] = f"{Path(vng).parent}:{env.get('PATH', '')}"
    return env


def launch(g: Guest, accel: str) -> int:
    """Start the guest in the background (its own session); the vng process's PID."""
    g.share.mkdir(parents=True, exist_ok=True)
    g.script.write_text(guest_script(g))
    with g.log.open("wb") as log:
        proc = subprocess.Popen(vng_command(g, accel), stdin=subprocess.DEVNULL, stdout=log,
                                stderr=subprocess.STDOUT, cwd="/", env=_env(),
                                start_new_session=True)
    return proc.pid


def qemu_pid(g: Guest) -> int | None:
    try:
        return int(g.pidfile.read_text().split()[0])
    except (OSError, ValueError, IndexError):
        return None


READY = "abtui guest ready: "  # the script's line once the guest is up: its release, its name


def ready_release(share: Path) -> str | None:
    """The release a guest's script said it runs (the ready line in its log, in the folder
    it shares with the lab), None before it said so: the guest's own word, true after a
    switch the lab did not make (a kexec from inside)."""
    with contextlib.suppress(OSError):
        for line in (share / "guest.log").read_text(errors="replace").splitlines():
            words = line.removeprefix(READY).split()
            if line.startswith(READY) and words:
                return words[0]
    return None


def share_of(state_dir: Path, alias: str) -> Path:
    """The folder a guest shares with the lab (its script's log)."""
    return state_dir / f"vm-{alias}"


def log_tail(g: Guest, lines: int = 6) -> str:
    """The last lines of what the guest and virtme-ng said (for a boot that failed)."""
    out: list[str] = []
    for path in (g.log, g.share / "guest.log", g.share / "sshd.log"):
        with contextlib.suppress(OSError):
            out += [ln for ln in path.read_text(errors="replace").splitlines() if ln.strip()]
    return " | ".join(out[-lines:])


# ---- the accelerator -------------------------------------------------------------------------

def _accel_cache() -> Path:
    return cache_root().parent / "vm-accel.json"


def _machine_key() -> str:
    try:
        qemu = subprocess.run([QEMU, "--version"], capture_output=True, text=True,
                              timeout=10).stdout.splitlines()[0]
    except (OSError, IndexError, subprocess.SubprocessError):
        qemu = "?"
    return f"{os.uname().release} | {qemu}"


def accelerator(kernel: Kernel) -> tuple[str, str]:
    """("kvm" | "tcg", why): KVM only where a guest really boots under it (probed once per
    host kernel and qemu, the verdict kept beside the kernel cache)."""
    forced = os.environ.get(ACCEL_ENV, "").strip().lower()
    if forced in ("kvm", "tcg"):
        return forced, f"{ACCEL_ENV}={forced}"
    if not os.access("/dev/kvm", os.R_OK | os.W_OK):
        return "tcg", "no usable /dev/kvm"
    key = _machine_key()
    cache = _accel_cache()
    with contextlib.suppress(OSError, ValueError):
        known = json.loads(cache.read_text())
        if known.get("key") == key:
            return str(known["accel"]), str(known["why"])
    accel, why = _probe_kvm(kernel)
    cache.parent.mkdir(parents=True, exist_ok=True)
    cache.write_text(json.dumps({"key": key, "accel": accel, "why": why}))
    return accel, why


def _probe_kvm(kernel: Kernel) -> tuple[str, str]:
    """Boot the kernel under KVM to run `true`; a guest that does not finish in time (they
    hang in early boot without nested virtualization) means TCG."""
    vng = vng_path()
    if vng is None:
        return "tcg", "virtme-ng missing"
    proc = subprocess.Popen([vng, "--run", kernel.image, "--cpus", "1", "--memory", "256M",
                             "--exec", "true"], stdin=subprocess.DEVNULL,
                            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, cwd="/",
                            env=_env(), start_new_session=True)
    started = time.monotonic()
    try:
        rc = proc.wait(timeout=KVM_PROBE_SECONDS)
    except subprocess.TimeoutExpired:
        # the probe's own session: vng, its shell and qemu, and nothing else
        with contextlib.suppress(ProcessLookupError):
            os.killpg(proc.pid, signal.SIGKILL)
        proc.wait()
        return "tcg", (f"a KVM guest did not boot within {KVM_PROBE_SECONDS:g} s "
                       "(no usable nested virtualization)")
    if rc != 0:
        return "tcg", f"a KVM guest failed to boot (exit {rc})"
    return "kvm", f"a KVM guest booted in {time.monotonic() - started:.1f} s"
