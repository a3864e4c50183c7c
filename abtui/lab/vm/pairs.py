"""A lab's VM pairs: each pair given a kernel runs as two guests (abtui.lab.vm.guest) booting it, on
tap devices (`<prefix>-as`, `<prefix>-asd`, ...) with the pair's data link on a bridge of its own
(`<prefix>-ad`). Here the lab starts them, waits for their sshd, and finds their processes (for
`down`); a guest's own command line and script are abtui.lab.vm.guest's.
"""

from __future__ import annotations

import itertools
import json
import time
from collections.abc import Collection, Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Any

from abtui.core.errors import LabError
from abtui.core.pids import pid_alive
from abtui.lab.layout import LabHost, LabLayout
from abtui.lab.ssh_access import LabSsh
from abtui.lab.system import pidfile_pid, run, ssh_banner, terminate

if TYPE_CHECKING:
    from abtui.lab.kernels import Kernel
    from abtui.lab.vm.guest import Guest

# a TCG guest boots in ~17 s alone on this machine's 2 cores; several at once, under load, take
# a few times that
VM_BOOT_TIMEOUT = 300.0
# a guest's sshd re-executes itself for each connection, from the 9p root filesystem: under TCG
# and load its banner takes seconds
VM_BANNER_TIMEOUT = 8.0
VM_SSHD_OPTIONS = ("KexAlgorithms curve25519-sha256,curve25519-sha256@libssh.org",)


class LabVmPairs:
    """A lab's VM hosts: taps, data bridges, guests started and waited for; named by the
    lab's layout, their sshd configured by its SSH side."""

    def __init__(self, layout: LabLayout, ssh: LabSsh) -> None:
        self.layout = layout
        self.ssh = ssh

    def guest(self, h: LabHost, kernel: Kernel) -> Guest:
        """The guest a VM host runs as, booting `kernel`."""
        from abtui.lab.vm import guest as lab_vm
        from abtui.lab.vm.guest import Guest, mac

        p = ord(h.pair.lower()) - ord("a") + 1
        role = 1 if h.role == "sender" else 2
        return Guest(alias=h.alias, kernel=kernel, mgmt_tap=h.root_link,
                     data_tap=f"{h.root_link}d", mgmt_mac=mac(self.layout.mgmt, p, role, 0),
                     data_mac=mac(self.layout.mgmt, p, role, 1), mgmt_address=h.mgmt_address,
                     data_address=h.data_address,
                     sshd_config=self.layout.state_dir / f"sshd_config-{h.alias}",
                     state_dir=self.layout.state_dir, nic=h.nic or lab_vm.DEFAULT_NIC,
                     clock=self.layout.clock())

    def start(self, hosts: list[LabHost], kernels: Mapping[str, Kernel],
              meta: dict[str, Any], restart: Collection[str] = ()
              ) -> dict[str, tuple[Guest, float]]:
        """Taps, data bridges and guests of the VM pairs (a guest that runs is kept, unless
        its alias is in `restart`: it is stopped and booted again); the guests started, with
        their start times."""
        from abtui.lab.vm import guest as lab_vm

        if meta.get("clock"):  # instruction counting is TCG's
            accel, why = "tcg", "instruction-counted clock (-icount runs under TCG only)"
        else:
            accel, why = lab_vm.accelerator(next(iter(kernels.values())))
        meta.update({"accel": accel, "accel_why": why})
        self.layout.meta_path.write_text(json.dumps(meta))
        started: dict[str, tuple[Guest, float]] = {}
        for h in hosts:
            if not h.vm:
                continue
            g = self.guest(h, kernels[h.pair])
            bridge = self.layout.data_bridge(h.pair)
            if not Path(f"/sys/class/net/{bridge}").exists():
                run(["ip", "link", "add", "name", bridge, "type", "bridge"])
                run(["ip", "link", "set", bridge, "up"])
            alive = lab_vm.qemu_pid(g)
            if alive is not None and pid_alive(alive):
                if h.alias not in restart:
                    continue
                self.stop(g)
            for tap, master in ((g.mgmt_tap, self.layout.bridge), (g.data_tap, bridge)):
                run(["ip", "link", "del", tap], check=False)
                run(["ip", "tuntap", "add", "dev", tap, "mode", "tap"])
                run(["ip", "link", "set", tap, "master", master, "up"])
            # the guest's own /run; a key exchange without the post-quantum part, which costs
            # seconds of emulated CPU per connection under TCG
            self.ssh.write_config(h, "/run/sshd.pid", VM_SSHD_OPTIONS)
            g.pidfile.unlink(missing_ok=True)
            vng = lab_vm.launch(g, accel)
            self.vng_pidfile(h.alias).write_text(f"{vng}\n")
            started[h.alias] = (g, time.monotonic())
        return started

    def runs_other(self, h: LabHost, kernels: Mapping[str, Kernel]) -> bool:
        """Whether the VM host's guest said it runs another release than its pair's kernel
        (switched by `lab boot` or a kexec from inside)."""
        from abtui.lab.vm import guest as lab_vm

        said = lab_vm.ready_release(lab_vm.share_of(self.layout.state_dir, h.alias))
        return h.pair in kernels and said is not None and said != kernels[h.pair].release

    def stop(self, g: Guest) -> None:
        """End a guest's qemu and its virtme-ng process (the lab started both), and wait
        until they are gone (its taps are free again)."""
        from abtui.lab.vm import guest as lab_vm

        pids = {p for p in (lab_vm.qemu_pid(g), self.vng_pid(g.alias)) if p is not None}
        terminate([p for p in pids if pid_alive(p)])
        deadline = time.monotonic() + 10.0
        while any(pid_alive(p) for p in pids) and time.monotonic() < deadline:
            time.sleep(0.05)

    def vng_pidfile(self, alias: str) -> Path:
        return self.layout.state_dir / f"vng-{alias}.pid"

    def vng_pid(self, alias: str) -> int | None:
        return pidfile_pid(self.vng_pidfile(alias))

    def wait(self, hosts: list[LabHost], started: Mapping[str, tuple[Guest, float]],
             timeout: float = VM_BOOT_TIMEOUT, *, verify: bool = False) -> dict[str, float]:
        """Wait for every started guest's sshd; seconds from start to SSH, per host. With
        `verify`, a guest is up only once its script said it runs its kernel's release (a
        guest that says another is a LabError: it booted another build)."""
        from abtui.lab.vm import guest as lab_vm

        boot: dict[str, float] = {}
        deadline = time.monotonic() + timeout
        waiting = {h.alias: h for h in hosts if h.alias in started}
        while waiting:
            for alias, h in list(waiting.items()):
                g, t0 = started[alias]
                said = lab_vm.ready_release(g.share) if verify else g.kernel.release
                if said is not None and said != g.kernel.release:
                    raise LabError(f"VM host {alias} came up on {said}, not "
                                   f"{g.kernel.release}")
                if said and ssh_banner(h.mgmt_address, timeout=VM_BANNER_TIMEOUT)[0]:
                    boot[alias] = round(time.monotonic() - t0, 1)
                    del waiting[alias]
                    continue
                vng = self.vng_pid(alias)
                if vng is None or not pid_alive(vng):
                    raise LabError(f"VM host {alias} ({g.kernel.spec}) stopped while booting: "
                                   f"{lab_vm.log_tail(g)}")
            if waiting and time.monotonic() > deadline:
                names = ", ".join(sorted(waiting))
                tails = "; ".join(f"{a}: {lab_vm.log_tail(started[a][0])}" for a in waiting)
                raise LabError(f"VM hosts {names}: sshd did not answer within {timeout:g} s "
                               f"({tails})")
            time.sleep(0.25)
        return boot

    def pids(self) -> set[int]:
        """The lab's guests (qemu) and their virtme-ng processes: from their pidfiles, and any
        qemu whose command line names a pidfile in this lab's folder (its file lost)."""
        pids = set()
        state = self.layout.state_dir
        for path in [*state.glob("vm-*.pid"), *state.glob("vng-*.pid")]:
            pid = pidfile_pid(path)
            if pid is not None and pid_alive(pid):
                pids.add(pid)
        ours = f"{self.layout.state_dir}/vm-"
        for proc in Path("/proc").iterdir():
            if not proc.name.isdigit():
                continue
            try:
                argv = (proc / "cmdline").read_bytes().split(b"\0")
            except OSError:
                continue
            for flag, value in itertools.pairwise(argv):
                if flag == b"-pidfile" and value.decode(errors="replace").startswith(ours):
                    pids.add(int(proc.name))
        return pids
