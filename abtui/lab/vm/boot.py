"""A lab VM host switched to another kernel build, keeping what makes it the same host.

Two methods, as a real host has them:

- **power-cycle** (`power`): the lab stops the guest's qemu and boots it again on the other
  kernel, from outside, as a lab's power control (IPMI, a PDU) would: the same alias,
  management and data addresses, MACs, taps, sshd config, host key and known_hosts entry; only
  the kernel image virtme-ng is given changes.
- **kexec** (`kexec`): from inside the running guest, `kexec -l IMAGE --initrd=INITRAMFS
  --command-line=…` then `kexec -e`: the same qemu process jumps into the other kernel. The
  initramfs is virtme-ng's, made for the target build (`virtme-run --save-initramfs`), with
  overlayfs in it: virtme-ng-init needs overlayfs for its writable /lib, and only there can
  it make /lib/modules/RELEASE point at the build's modules (the kernel command line's
  `virtme_link_mods=`, rewritten for the target). Without overlayfs (an initramfs made
  without a writable overlay asked for) the new kernel finds no modules: no NIC, no sshd,
  the guest powers off.

Either way the guest runs its script again: NICs named and addressed, sshd started, and a
line `abtui guest ready: RELEASE ALIAS` in its log (written to a folder the lab shares with
it): a switch is done when that line names the target release and the sshd answers. A boot
that fails (the guest powers off, or does not answer in time) is survived: the lab
power-cycles the host back onto the build it ran, and says so.

The lab's record (lab.json) keeps each host's current build (`booted`, per alias, where it is
not its pair's), so `lab status` shows what runs, `lab down` stops it, and `lab up` boots it
back onto its pair's build.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import os
import shlex
import subprocess
import time
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from abtui.core.errors import AbtuiError, BadInput, LabError, MissingPrerequisite

if TYPE_CHECKING:
    from abtui.lab.kernels import Kernel
    from abtui.lab.layout import LabHost, LabLayout
    from abtui.lab.profile import LabBuild
    from abtui.lab.vm.armhost import LabArmHost
    from abtui.lab.vm.guest import Guest
    from abtui.lab.vm.pairs import LabVmPairs

METHODS = ("power", "kexec")
# seconds for the kexec'd kernel to be loaded (the image and initramfs read over 9p under TCG)
KEXEC_LOAD_TIMEOUT = 120.0


@dataclass(frozen=True, slots=True)
class Switched:
    """One host switched: the release it reports, how, and seconds from the switch's start
    (the lab's command) to its sshd answering on that release."""

    alias: str
    release: str
    method: str
    seconds: float


def booted_kernel(layout: LabLayout, h: LabHost) -> Kernel:
    """The build a VM host runs now: the release its guest said it runs, as the lab's record
    names it (its own build where `lab boot` switched it, else its pair's), or as the Debian
    package of that release in the kernel cache (a kexec from inside tells the lab nothing)."""
    from abtui.lab import kernels
    from abtui.lab.kernels import Kernel
    from abtui.lab.vm.guest import ready_release, share_of

    meta = layout.record()
    said = ready_release(share_of(layout.state_dir, h.alias))
    for entry in (meta.get("booted", {}).get(h.alias), meta.get("kernels", {}).get(h.pair)):
        if isinstance(entry, dict) and (said is None or entry.get("release") == said):
            return Kernel(**{k: str(entry[k]) for k in ("spec", "image", "release",
                                                        "modules", "kind")})
    if said is not None:
        with contextlib.suppress(AbtuiError):
            return kernels.resolve(f"linux-image-{said}", fetch=False)
    why = said or "its guest said none"
    raise LabError(f"{h.alias}: the lab cannot tell which build it runs ({why}); bring it up "
                   "again with `abtui lab up`")


def _record_booted(layout: LabLayout, alias: str, pair: str, kernel: Kernel,
                   seconds: float | None) -> None:
    with layout.record_lock():
        meta = layout.record()
        booted: dict[str, Any] = meta.setdefault("booted", {})
        pair_spec = meta.get("kernels", {}).get(pair, {}).get("spec")
        if kernel.spec == pair_spec:
            booted.pop(alias, None)
        else:
            booted[alias] = kernel.to_json()
        if seconds is not None:
            meta.setdefault("boot_s", {})[alias] = round(seconds, 1)
        layout.meta_path.write_text(json.dumps(meta))


class LabVmBoot:
    """Switches a lab's VM hosts to other builds (power-cycle or kexec); given the lab's
    layout and its VM pairs (which name, start and wait for guests)."""

    def __init__(self, layout: LabLayout, vms: LabVmPairs,
                 arm: LabArmHost | None = None) -> None:
        self.layout = layout
        self.vms = vms
        self.arm = arm

    # ---- what is asked ------------------------------------------------------------------
    def hosts_of(self, aliases: Sequence[str]) -> list[LabHost]:
        """The VM hosts named, of the lab that is up; BadInput naming the alias otherwise."""
        pairs = self.layout.pair_count()
        if not pairs:
            raise BadInput(f"lab {self.layout.name!r} is not up (`abtui lab up --kernel ...`)")
        known = {h.alias: h for h in self.layout.hosts(pairs)}
        out = []
        for alias in aliases:
            h = known.get(alias)
            if h is None:
                raise BadInput(f"lab boot {alias}: no such host in lab {self.layout.name!r} "
                               f"(its hosts: {', '.join(known)})")
            if not h.vm:
                raise BadInput(f"lab boot {alias}: a namespace host runs this machine's kernel; "
                               "only VM hosts (`abtui lab up --kernel ...`) boot builds")
            if h not in out:
                out.append(h)
        return out

    # ---- the switch ---------------------------------------------------------------------
    def boot(self, aliases: Sequence[str], spec: str, method: str = "power",
             say: Any = None) -> list[Switched]:
        """Switch the named VM hosts (together) to the build SPEC names; each host answers
        SSH on that build when this returns. LabError (the hosts back on the build they ran)
        when one does not come back on it."""
        from abtui.lab import kernels

        if method not in METHODS:
            raise BadInput(f"lab boot --method {method}: the methods are {', '.join(METHODS)}")
        hosts = self.hosts_of(aliases)
        arm = [h for h in hosts if h.arch == "arm"]
        if arm:
            return self._boot_arm(hosts, spec, method)
        kernel = kernels.resolve(spec)
        t0 = time.monotonic()
        before = {h.alias: booted_kernel(self.layout, h) for h in hosts}
        if method == "kexec":
            guests = self._kexec(hosts, kernel)
        else:
            guests = self._power_cycle(hosts, kernel)
        try:
            seconds = self._await_ready(guests, t0)
        except LabError as exc:
            self._fall_back(hosts, before, say)
            back = ", ".join(sorted({k.release for k in before.values()}))
            raise LabError(f"{exc}; power-cycled back onto {back}") from None
        for h in hosts:
            _record_booted(self.layout, h.alias, h.pair, kernel, seconds[h.alias])
        return [Switched(h.alias, kernel.release, method, seconds[h.alias]) for h in hosts]

    def _boot_arm(self, hosts: Sequence[LabHost], name: str, method: str) -> list[Switched]:
        """The lab's ARM host power-cycled onto its build `name` (abtui.lab.vm.armhost)."""
        if len(hosts) > 1 or self.arm is None:
            raise BadInput("lab boot: the ARM host boots its own builds: name it alone")
        if method != "power":
            raise BadInput("lab boot --method kexec: the ARM guest's small kernel has no "
                           "kexec; it is power-cycled (--method power)")
        build, seconds = self.arm.switch(hosts[0], name)
        return [Switched(hosts[0].alias, f"{build.release} {build.name}", method, seconds)]

    def _power_cycle(self, hosts: Sequence[LabHost], kernel: Kernel
                     ) -> dict[str, Guest]:
        """Every host's guest stopped and booted again on `kernel` (taps, MACs, addresses,
        sshd config and host key are the same: only the kernel differs)."""
        from abtui.lab.vm import guest as lab_vm

        accel = str(self.layout.record().get("accel") or lab_vm.accelerator(kernel)[0])
        guests = {h.alias: self.vms.guest(h, kernel) for h in hosts}
        for g in guests.values():
            self.vms.stop(g)
        for g in guests.values():
            (g.share / "guest.log").unlink(missing_ok=True)
            g.pidfile.unlink(missing_ok=True)
            self.vms.vng_pidfile(g.alias).write_text(f"{lab_vm.launch(g, accel)}\n")
        return guests

    def _kexec(self, hosts: Sequence[LabHost], kernel: Kernel) -> dict[str, Guest]:
        """Every host told to kexec into `kernel` (loaded, then executed a second later, so
        the SSH command returns first); their guests, whose logs say when they are up."""
        initrd = initramfs(kernel)
        guests = {h.alias: self.vms.guest(h, kernel) for h in hosts}
        procs = {}
        for h in hosts:
            (guests[h.alias].share / "guest.log").unlink(missing_ok=True)
            procs[h.alias] = subprocess.Popen(
                ["ssh", "-F", str(self.layout.ssh_config), "-o", "BatchMode=yes", h.alias,
                 kexec_command(kernel, initrd)], stdin=subprocess.DEVNULL,
                stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
        failed = []
        for alias, proc in procs.items():
            try:
                out, _ = proc.communicate(timeout=KEXEC_LOAD_TIMEOUT)
            except subprocess.TimeoutExpired:
                proc.kill()
                out, _ = proc.communicate()
            if proc.returncode != 0:
                tail = " ".join(out.split()[-20:])
                failed.append(f"{alias}: kexec -l failed (exit {proc.returncode}): {tail}")
        if failed:
            raise LabError("; ".join(failed))
        return guests

    def _await_ready(self, guests: dict[str, Guest], t0: float) -> dict[str, float]:
        """Seconds from t0 until each guest said it runs its kernel's release and its sshd
        answers; LabError when one stops, comes up on another release, or takes too long."""
        hosts = self.hosts_of(list(guests))
        return self.vms.wait(hosts, {a: (g, t0) for a, g in guests.items()}, verify=True)

    def _fall_back(self, hosts: Sequence[LabHost], before: dict[str, Kernel],
                   say: Any) -> None:
        """After a switch that failed: every host power-cycled onto the build it ran (best
        effort: a host that does not come back is left for `lab up` or `lab down`)."""
        for h in hosts:
            kernel = before[h.alias]
            if say:
                say(f"lab boot {h.alias}: the switch failed; power-cycling it back onto "
                    f"{kernel.release}")
            guests = self._power_cycle([h], kernel)
            with contextlib.suppress(LabError):
                seconds = self._await_ready(guests, time.monotonic())
                _record_booted(self.layout, h.alias, h.pair, kernel, seconds[h.alias])


# ---- kexec's parts -------------------------------------------------------------------------

def lab_builds(specs: Sequence[str]) -> list[LabBuild]:
    """The builds a lab's kernel knob offers: each SPEC's image and its initramfs (made now
    when it is not yet)."""
    from abtui.lab import kernels
    from abtui.lab.profile import LabBuild

    out = []
    for spec in specs:
        k = kernels.resolve(spec, fetch=False)
        out.append(LabBuild(spec, _image_of(k), str(initramfs(k))))
    return out


def switch_builds(specs: Sequence[str]) -> tuple[list[LabBuild], list[str]]:
    """How the lab's VM hosts reach each of `specs`: by kexec from inside the guest (each
    build's image and initramfs, measured to work under emulation), or, where this machine has
    no `kexec` (the guests run this machine's programs), by the lab's power-cycle: the builds
    bare and the argv of `abtui lab boot {host} {value}`."""
    import shutil
    import sys

    from abtui.lab.profile import LabBuild

    if shutil.which("kexec", path=os.environ.get("PATH", "") + ":/usr/sbin:/sbin"):
        return lab_builds(specs), []
    return ([LabBuild(s, "", "") for s in specs],
            [sys.executable, "-m", "abtui", "lab", "boot", "{host}", "{value}"])


def kexec_command(kernel: Kernel, initrd: Path) -> str:
    """The guest's command: load `kernel` with its initramfs and the guest's own command line,
    its modules link (`virtme_link_mods=`) pointed at the build's, then execute it a second
    later in the background (the SSH command returns first)."""
    link = f"virtme_link_mods={kernel.modules} " if kernel.modules else ""
    strip = r"s/\(^\| \)virtme_link_mods=[^ ]*//"
    line = f'{shlex.quote(link)}"$(sed {shlex.quote(strip)} /proc/cmdline)"'
    load = (f"kexec -l {shlex.quote(_image_of(kernel))} --initrd={shlex.quote(str(initrd))} "
            f"--command-line={line}")
    return f"{load} && {{ nohup sh -c 'sleep 1; kexec -e' >/dev/null 2>&1 & }}"


def _image_of(kernel: Kernel) -> str:
    """The bootable image: a tree's bzImage, else the image itself."""
    if kernel.kind == "tree":
        return str(Path(kernel.image) / "arch" / "x86" / "boot" / "bzImage")
    return kernel.image


def initramfs(kernel: Kernel) -> Path:
    """virtme-ng's initramfs for `kernel` (its 9p, virtio and overlayfs modules), made once
    and kept in the kernel cache beside the builds."""
    from abtui.lab.kernels import cache_root
    from abtui.lab.vm import guest as lab_vm

    image = Path(_image_of(kernel))
    stamp = f"{image.resolve()}:{image.stat().st_mtime_ns}:{kernel.modules}"
    key = hashlib.sha256(stamp.encode()).hexdigest()[:16]
    out = cache_root() / "initramfs" / f"{kernel.release}-{key}.cpio"
    if out.is_file():
        return out
    vng = lab_vm.vng_path()
    if vng is None:
        raise MissingPrerequisite("kexec on VM hosts needs virtme-ng (`pip install virtme-ng`)")
    run = str(Path(vng).with_name("virtme-run"))
    source = ["--kdir", kernel.image] if kernel.kind == "tree" else ["--kimg", kernel.image]
    out.parent.mkdir(parents=True, exist_ok=True)
    tmp = out.with_name(f".{out.name}.{os.getpid()}")
    # a writable overlay asked for puts overlayfs in the initramfs (virtme-ng-init's /lib)
    proc = subprocess.run([run, *source, "--mods=auto", "--overlay-rwdir=/tmp",
                           "--save-initramfs", str(tmp), "--dry-run", "--disable-kvm"],
                          capture_output=True, text=True, cwd="/", timeout=300)
    if proc.returncode != 0 or not tmp.is_file():
        tmp.unlink(missing_ok=True)
        why = (proc.stderr.strip() or proc.stdout.strip()).splitlines()
        raise LabError(f"making an initramfs for {kernel.spec} failed: "
                       f"{why[-1] if why else 'virtme-run wrote none'}")
    os.replace(tmp, out)
    return out
