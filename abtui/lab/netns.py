"""The local lab: real hosts on one machine, as Linux network namespaces.

Each host is a namespace with its own hostname (its sshd runs in a UTS namespace of its own),
addresses, sysctls and processes. Pair P has a veth data link 198.<o>.P.1 <-> 198.<o>.P.2/24
(device `data0` on both ends); every host also has `mgmt0` on a bridge in the root namespace
(198.<o>.255.0/24 by default; test labs take another /24) on which its own OpenSSH sshd
listens. Everything the lab makes carries its name prefix, and `down` removes exactly that:
a user's lab and a test run's never collide.

A pair given a kernel (`up(kernels={"A": SPEC})`) has VM hosts instead (abtui.lab.vm.guest): two
guests booting that kernel, their data NIC of the model `up(nics={"A": "e1000e"})` names,
with the same names, addresses, keys and sshd as namespace hosts,
their NICs on tap devices (`<prefix>-as`, `<prefix>-asd`, ...) and the pair's data link on a
bridge of its own (`<prefix>-ad`).

This module brings a lab up (namespaces, veth links, the management bridge), takes it down and
says how it is. A Lab owns its parts: its names and addresses (abtui.lab.layout.LabLayout), its
keys, sshd and client files (abtui.lab.ssh_access.LabSsh, given the layout) and its VM pairs
(abtui.lab.vm.pairs.LabVmPairs, given both).
"""

from __future__ import annotations

import contextlib
import json
import os
import shutil
from collections.abc import Mapping, Sequence
from dataclasses import asdict
from pathlib import Path
from typing import TYPE_CHECKING, Any, Self

from abtui.core.errors import BadInput, MissingPrerequisite
from abtui.core.pids import pid_alive
from abtui.lab.layout import MAX_PAIRS, LabHost, LabLayout, check_kernel_pairs, check_nic_pairs
from abtui.lab.lease import LabInUse
from abtui.lab.ssh_access import LabSsh
from abtui.lab.system import pidfile_pid, run, ssh_banner, terminate
from abtui.lab.vm.armhost import ArmBuild, LabArmHost, recorded_builds, recorded_priorities
from abtui.lab.vm.boot import LabVmBoot
from abtui.lab.vm.pairs import VM_BANNER_TIMEOUT, LabVmPairs
from abtui.remote.lease import lease_files

if TYPE_CHECKING:
    from abtui.lab.kernels import Kernel

VM_CONGESTION = ("reno", "cubic", "bbr")
REQUIRED_PROGRAMS = {
    "ip": "iproute2",
    "sshd": "openssh-server",
    "ssh-keygen": "openssh-client",
    "iperf3": "iperf3",
    "unshare": "util-linux",
    "ethtool": "ethtool",
    "ping": "iputils-ping",
}


def _which(program: str) -> str | None:
    return shutil.which(program, path=os.environ.get("PATH", "") + ":/usr/sbin:/sbin")


class Lab:
    """A lab brought up, taken down and asked how it is: namespaces, links and daemons.

    Composed of parts it owns: its layout (names, addresses, paths, its record), its SSH
    access (keys, sshd, client files) given the layout, and its VM pairs given both. The
    names callers read (`lab.hosts(...)`, `lab.ssh_config`, ...) are the layout's, given
    through."""

    def __init__(self, name: str = "lab", octet: int = 18, ifprefix: str = "abl",
                 state_dir: Path | None = None, mgmt: int = 255, *,
                 layout: LabLayout | None = None) -> None:
        self.layout = layout or LabLayout(name=name, octet=octet, ifprefix=ifprefix,
                                          state_dir=state_dir, mgmt=mgmt)
        self.ssh = LabSsh(self.layout)
        self.vms = LabVmPairs(self.layout, self.ssh)
        self.arm = LabArmHost(self.layout)
        self.boots = LabVmBoot(self.layout, self.vms, self.arm)

    @classmethod
    def default(cls) -> Self:
        """The user's lab; ABTUI_LAB="name,ifprefix,mgmt" picks other names (tests do)."""
        return cls(layout=LabLayout.default())

    # ---- the layout's names, given through ----------------------------------------------
    @property
    def name(self) -> str:
        return self.layout.name

    @property
    def octet(self) -> int:
        return self.layout.octet

    @property
    def ifprefix(self) -> str:
        return self.layout.ifprefix

    @property
    def mgmt(self) -> int:
        return self.layout.mgmt

    @property
    def state_dir(self) -> Path:
        return self.layout.state_dir

    @property
    def ssh_config(self) -> Path:
        return self.layout.ssh_config

    @property
    def known_hosts(self) -> Path:
        return self.layout.known_hosts

    @property
    def client_key(self) -> Path:
        return self.layout.client_key

    @property
    def profile_path(self) -> Path:
        return self.layout.profile_path

    @property
    def meta_path(self) -> Path:
        return self.layout.meta_path

    def hosts(self, pairs: int, kernels: Mapping[str, str] | None = None,
              nics: Mapping[str, str] | None = None, arm: str | None = None
              ) -> list[LabHost]:
        return self.layout.hosts(pairs, kernels, nics, arm)

    def pair_count(self) -> int:
        return self.layout.pair_count()

    def kernel_specs(self) -> dict[str, str]:
        return self.layout.kernel_specs()

    def nic_models(self) -> dict[str, str]:
        return self.layout.nic_models()

    def clock(self) -> str:
        """The VM guests' clock (abtui.core.clock), as the lab was brought up."""
        return self.layout.clock()

    def refuse_if_used(self, doing: str) -> None:
        self.layout.refuse_if_used(doing)

    # ---- the SSH access's, given through ------------------------------------------------
    def start_sshd(self, alias: str) -> None:
        self.ssh.start_sshd(alias)

    def sshd_pid(self, alias: str) -> int | None:
        return self.ssh.sshd_pid(alias)

    # ---- prerequisites ------------------------------------------------------------------
    @staticmethod
    def check_prerequisites() -> None:
        if os.geteuid() != 0:
            raise MissingPrerequisite(
                "the lab needs root (network namespaces): run it as root, e.g. `sudo abtui lab up`")
        for program, package in REQUIRED_PROGRAMS.items():
            if _which(program) is None:
                raise MissingPrerequisite(
                    f"`{program}` is missing: install it with "
                    f"`apt-get install --no-install-recommends {package}` (or run `make demo`)")

    # ---- up -----------------------------------------------------------------------------
    def up(self, pairs: int = 2, kernels: Mapping[str, str] | None = None,
           nics: Mapping[str, str] | None = None, clock: str = "",
           user: str | None = None,
           arm: Mapping[str, ArmBuild] | None = None,
           arm_crypto: Sequence[tuple[str, int]] | None = None) -> list[LabHost]:
        """Bring the lab up; idempotent: what exists and works is kept. `kernels` maps a pair
        letter to the kernel SPEC (abtui.lab.kernels) its two VM hosts boot, `nics` a VM pair
        to its data NIC's model (abtui.lab.vm.guest.NIC_MODELS; the default where not named),
        `clock` the VM guests' clock (abtui.core.clock: "" their host's, "icount:N"), `arm`
        the ARM builds pair A's sender boots as the lab's ARM guest (abtui.lab.vm.armhost: the
        first at once; None keeps the ones the lab that is up has, {} none), `arm_crypto`
        the crypto ranking the ARM guest applies at each boot (abtui.lab.vm.cryptorank; None
        keeps the lab's)."""
        from abtui.lab.vm.guest import DEFAULT_NIC

        if user is not None:
            from abtui.lab.users import check_name

            check_name(user)  # said before anything changes
        wanted = check_kernel_pairs(kernels or {}, pairs)
        models = {k: DEFAULT_NIC for k in wanted} | check_nic_pairs(nics or {}, wanted)
        if clock and not wanted:
            raise BadInput("--clock: only VM hosts run on an instruction-counted clock; give "
                           "the lab a --kernel (namespace hosts share this machine's)")
        had_arm = recorded_builds(self.layout)
        arm_builds = dict(had_arm if arm is None else arm)
        had_rank = recorded_priorities(self.layout)
        rank = had_rank if arm_crypto is None else tuple(arm_crypto)
        if rank and not arm_builds:
            raise BadInput("--arm-crypto-priority: the lab has no ARM guest (--arm-build)")
        if arm_builds and "A" not in wanted:
            raise BadInput("--arm-build: the ARM guest is pair A's sender; its receiver is an "
                           "x86 VM guest: give pair A a --kernel (A=linux-image-...)")
        existing = self.pair_count()
        rebuild = bool(existing) and (existing != pairs or self.kernel_specs() != wanted
                                      or self.layout.vm_nics() != models
                                      or (bool(wanted) and self.layout.clock() != clock)
                                      or had_arm != arm_builds or had_rank != rank)
        if rebuild:  # said before anything is checked or changed
            self.refuse_if_used(f"rebuilding it with {pairs} pairs (it has {existing})"
                                if existing != pairs else
                                "rebuilding it for other kernels, NICs or clock")
        self.check_prerequisites()
        self.refuse_if_clashing()
        resolved: dict[str, Kernel] = {}
        if wanted:
            from abtui.lab import kernels as kernel_specs
            from abtui.lab.vm import guest as lab_vm

            lab_vm.check_prerequisites()
            if arm_builds:
                from abtui.lab.vm.armhost import check_prerequisites as arm_prerequisites

                arm_prerequisites()
            resolved = {letter: kernel_specs.resolve(spec) for letter, spec in wanted.items()}
        if rebuild:
            self.down()
        hosts = self.hosts(pairs, wanted, models, arm=next(iter(arm_builds), ""))
        x86 = [h for h in hosts if h.arch != "arm"]
        self.state_dir.mkdir(parents=True, exist_ok=True)
        os.chmod(self.state_dir, 0o700)
        Path("/run/sshd").mkdir(parents=True, exist_ok=True)
        try:
            self.ssh.make_keys(hosts)
            self._make_bridge()
            present = set(self._netns_list())
            for h in hosts:
                if not h.vm and h.netns not in present:
                    self._make_host(h)
            for p in range(1, pairs + 1):
                snd, rcv = hosts[2 * (p - 1)], hosts[2 * (p - 1) + 1]
                if not snd.vm:
                    self._make_data_link(snd, rcv)
            for h in hosts:
                if not h.vm:
                    self.ssh.start(h)
            self.ssh.write_client_files(hosts)
            if user is not None:
                from abtui.lab import users

                users.admit(self.layout, user)
            previous = self.layout.record()
            kept = previous.get("boot_s", {})  # of guests that run and are kept
            meta: dict[str, Any] = {"pairs": pairs, "name": self.name, "octet": self.octet,
                                    "kernels": {k: v.to_json() for k, v in resolved.items()},
                                    "nics": models, "clock": clock,
                                    "boot_s": kept if isinstance(kept, dict) else {}}
            if arm_builds:
                self.arm.record(arm_builds, meta, rank)
                if isinstance(previous.get("booted"), dict):  # a kept ARM guest's build
                    meta["booted"] = {a: b for a, b in previous["booted"].items()
                                      if isinstance(b, dict) and "arm" in b}
            self.meta_path.write_text(json.dumps(meta))
            self._write_profile(hosts, pairs)
            # a kept guest running another build (`lab boot`, a kexec) boots its pair's again
            switched = {h.alias for h in x86 if h.vm and self.vms.runs_other(h, resolved)}
            started = self.vms.start(x86, resolved, meta, restart=switched) \
                if resolved else {}
            arm_started = self._start_arm(hosts, arm_builds)
            for h in hosts:
                if not h.vm:
                    self.ssh.wait(h)
            if started:
                meta["boot_s"].update(self.vms.wait(x86, started))
            for h, build, t0 in arm_started:
                meta["boot_s"][h.alias] = self.arm.wait(h, build, t0)
                meta.get("booted", {}).pop(h.alias, None)
            if started or arm_started:
                self.meta_path.write_text(json.dumps(meta))
        except BaseException:
            with contextlib.suppress(LabInUse):  # a lab others use is left as it is
                self.down()
            raise
        return hosts

    def _start_arm(self, hosts: list[LabHost], builds: Mapping[str, ArmBuild]
                   ) -> list[tuple[LabHost, ArmBuild, float]]:
        """The ARM host's guest started on its first build, unless it runs that build
        already; (host, build, start time) of the one started."""
        out = []
        for h in hosts:
            if h.arch != "arm":
                continue
            first = builds[h.kernel]
            if self.arm.pid(h.alias) is not None and self.arm.running(h.alias) == first:
                continue
            out.append((h, first, self.arm.start(h, first, self.layout.data_bridge(h.pair))))
        return out

    def _make_bridge(self) -> None:
        bridge = self.layout.bridge
        if not Path(f"/sys/class/net/{bridge}").exists():
            run(["ip", "link", "add", "name", bridge, "type", "bridge"])
        run(["ip", "addr", "replace", f"{self.layout.bridge_address}/24", "dev", bridge])
        run(["ip", "link", "set", bridge, "up"])

    def _netns_list(self) -> list[str]:
        out = run(["ip", "netns", "list"], check=False)
        return [line.split()[0] for line in out.splitlines() if line.strip()]

    def _make_host(self, h: LabHost) -> None:
        run(["ip", "netns", "add", h.netns])
        ns = ["ip", "-n", h.netns]
        run([*ns, "link", "set", "lo", "up"])
        run(["ip", "link", "del", h.root_link], check=False)
        run(["ip", "link", "add", "name", h.root_link, "type", "veth",
             "peer", "name", "mgmt0", "netns", h.netns])
        run(["ip", "link", "set", h.root_link, "master", self.layout.bridge, "up"])
        run([*ns, "addr", "add", f"{h.mgmt_address}/24", "dev", "mgmt0"])
        run([*ns, "link", "set", "mgmt0", "up"])

    def _make_data_link(self, snd: LabHost, rcv: LabHost) -> None:
        if run(["ip", "-n", snd.netns, "-o", "link", "show", "data0"], check=False).strip():
            return
        run(["ip", "link", "add", "name", "data0", "netns", snd.netns, "type", "veth",
             "peer", "name", "data0", "netns", rcv.netns])
        for h in (snd, rcv):
            run(["ip", "-n", h.netns, "addr", "add", f"{h.data_address}/24", "dev", "data0"])
            run(["ip", "-n", h.netns, "link", "set", "data0", "up"])

    def _allowed_congestion(self, h: LabHost) -> list[str]:
        out = run(["ip", "netns", "exec", h.netns, "sysctl", "-n",
                   "net.ipv4.tcp_allowed_congestion_control"], check=False)
        return out.split()

    def _write_profile(self, hosts: list[LabHost], pairs: int) -> None:
        from abtui.lab.profile import render_lab_profile

        if hosts[0].arch == "arm":
            self._write_arm_profile(hosts)
            return
        namespaces = [h for h in hosts if not h.vm]
        # a VM guest's own (root) namespace loads any algorithm its kernel has on first use
        allowed = self._allowed_congestion(namespaces[0]) if namespaces else list(VM_CONGESTION)
        self.profile_path.write_text(render_lab_profile(
            lab_name=self.name, ssh_config=str(self.ssh_config),
            known_hosts=str(self.known_hosts), hosts=hosts, pairs=pairs,
            congestion=allowed or ["reno"], all_vm=not namespaces,
            kernel=self._kernel_knob(hosts)))

    def _write_arm_profile(self, hosts: list[LabHost]) -> None:
        """The lab's profile when pair A's sender is the ARM guest (its knobs are what the
        guest's busybox userspace can set): abtui.lab.vm.armhost.lab_profile."""
        import sys

        from abtui.lab.profile import SWITCH_TIMEOUT_S
        from abtui.lab.vm.armhost import lab_profile

        power = [sys.executable, "-m", "abtui", "lab", "boot", "{host}", "{value}"]
        self.profile_path.write_text(lab_profile(
            lab_name=self.name, ssh_config=str(self.ssh_config),
            known_hosts=str(self.known_hosts), sender=hosts[0], receiver=hosts[1],
            builds=list(recorded_builds(self.layout).values()), power=power,
            timeout=SWITCH_TIMEOUT_S, crypto_priority=recorded_priorities(self.layout)))

    def _kernel_knob(self, hosts: list[LabHost]) -> str:
        """The VM pairs' kernel knob (abtui.lab.profile.kernel_knob): offered when every VM
        pair boots a Debian build (a kexec finds a Debian build's modules in the cache)."""
        from abtui.lab import kernels
        from abtui.lab.profile import kernel_knob
        from abtui.lab.vm.boot import switch_builds

        vm_pairs = sorted({h.pair for h in hosts if h.vm})
        if not vm_pairs or not all(kernels.DEBIAN_PACKAGE_RE.fullmatch(h.kernel)
                                   for h in hosts if h.vm):
            return ""
        builds, power = switch_builds(kernels.cached_packages())
        return kernel_knob(builds, vm_pairs, power=power)

    # ---- down ---------------------------------------------------------------------------
    def down(self) -> None:
        """Remove every namespace, link, process and file of this lab, and nothing else;
        LabInUse (nothing removed) while another process uses it (abtui.lab.lease)."""
        self.refuse_if_used("taking it down")
        namespaces = [n for n in self._netns_list() if n.startswith(self.layout.netns_prefix)]
        pids: set[int] = set()
        for ns in namespaces:
            pids.update(int(p) for p in run(["ip", "netns", "pids", ns], check=False).split())
        for h in self.hosts(MAX_PAIRS):
            pid = self.ssh.pid_of(h)
            if pid is not None:
                pids.add(pid)
        pids.update(self.vms.pids())
        pids.update(self.arm.pids())
        terminate(pids)
        for ns in namespaces:
            run(["ip", "netns", "del", ns], check=False)
        for h in self.hosts(MAX_PAIRS):  # the hosts' leases, held by no shell any more
            for lease_file in lease_files(h.alias):
                lease_file.unlink(missing_ok=True)
        for link in self._root_links():
            run(["ip", "link", "del", link], check=False)
        from abtui.lab import users

        users.remove(self.layout)  # the admitted users' keys and sudo rights (lab up --user)
        if self.state_dir.exists():
            shutil.rmtree(self.state_dir, ignore_errors=True)

    def _root_links(self) -> list[str]:
        out = run(["ip", "-o", "link", "show"], check=False)
        names = []
        for line in out.splitlines():
            parts = line.split(":", 2)
            if len(parts) < 2:
                continue
            name = parts[1].strip().split("@")[0]
            if name.startswith(f"{self.ifprefix}-"):
                names.append(name)
        # the bridge last: its ports first
        return sorted(names, key=lambda n: n == self.layout.bridge)

    def refuse_if_clashing(self) -> None:
        """BadInput, before anything is made, when another lab uses this one's management
        subnet or interface prefix (abtui.lab.reach.clash)."""
        from abtui.lab.reach import clash, root_addresses

        why = clash(root_addresses(), self.layout.bridge, self.layout.bridge_address)
        if why is not None:
            raise BadInput(f"lab {self.name!r}: {why}; nothing was made (give this lab "
                           "others: ABTUI_LAB=name,ifprefix,mgmt)")

    # ---- status -------------------------------------------------------------------------
    def status(self, login: bool = False) -> dict[str, object]:
        """The lab's hosts and whether each works (`ok`; `why` not): its namespace (or
        guest), its sshd and its SSH banner; with `login`, SSH logs in with the lab's keys
        too."""
        from abtui.lab.vm.guest import ready_release, share_of

        pairs = self.pair_count()
        meta = self.layout.record()
        kernels = meta.get("kernels", {})
        booted = meta.get("booted", {})
        boot = meta.get("boot_s", {})
        present = set(self._netns_list())
        hosts = []
        for h in self.hosts(pairs) if pairs else []:
            entry = asdict(h)
            if h.arch == "arm":
                alive = self.arm.pid(h.alias) is not None
                ok = alive and ssh_banner(h.mgmt_address, timeout=VM_BANNER_TIMEOUT)[0]
                why = "" if ok else "its ARM guest is not running" if not alive else \
                    f"no SSH server answers at {h.mgmt_address}"
                runs = self.arm.running(h.alias)
                entry.update({"release": runs.release if runs else "",
                              "booted": runs.name if runs else "",
                              "accel": "tcg", "boot_s": boot.get(h.alias), "cpu": "own",
                              "arch": "arm"})
            elif h.vm:
                qemu = pidfile_pid(self.state_dir / f"vm-{h.alias}.pid")
                alive = qemu is not None and pid_alive(qemu)
                ok = alive and ssh_banner(h.mgmt_address, timeout=VM_BANNER_TIMEOUT)[0]
                why = "" if ok else "its guest is not running" if not alive else \
                    f"no SSH server answers at {h.mgmt_address}"
                now = booted.get(h.alias) or kernels.get(h.pair, {})
                # the guest's own word first: a kexec from inside does not tell the lab
                said = ready_release(share_of(self.state_dir, h.alias))
                entry.update({"release": said or now.get("release", ""),
                              "booted": now.get("spec", "") if h.alias in booted else "",
                              "accel": meta.get("accel", ""), "boot_s": boot.get(h.alias),
                              "cpu": "own"})
            else:
                why = ("its namespace is gone" if h.netns not in present else
                       "its sshd is not running" if self.ssh.pid_of(h) is None else
                       "" if ssh_banner(h.mgmt_address)[0] else
                       f"no SSH server answers at {h.mgmt_address}")
                ok = not why
                # a namespace's /proc/stat is this machine's: its CPU is every host's
                entry.update({"release": os.uname().release, "booted": "", "accel": "",
                              "boot_s": None,
                              "cpu": "shared"})
            entry.update({"address": h.mgmt_address, "ok": bool(ok), "nic": h.nic_name,
                          "why": why})
            hosts.append(entry)
        if login and hosts:
            from abtui.lab.reach import logins

            failed = logins(self.ssh_config, [str(e["alias"]) for e in hosts if e["ok"]])
            for e in hosts:
                if failed.get(str(e["alias"])):
                    e.update({"ok": False, "why": failed[str(e["alias"])]})
        return {
            "name": self.name,
            "up": bool(pairs),
            "ok": bool(hosts) and all(h["ok"] for h in hosts),
            "profile": str(self.profile_path),
            "ssh_config": str(self.ssh_config),
            "known_hosts": str(self.known_hosts),
            "pairs": pairs,
            "accel": meta.get("accel", ""),
            "accel_why": meta.get("accel_why", ""),
            # the VM guests' clock (abtui.core.clock): "" their host's, "icount:N" counted
            "clock": str(meta.get("clock") or ""),
            "hosts": hosts,
        }
