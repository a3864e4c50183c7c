"""The local lab: real hosts on one machine, as Linux network namespaces.

Each host is a namespace with its own hostname (its sshd runs in a UTS namespace of its own),
addresses, sysctls and processes. Pair P has a veth data link 198.<o>.P.1 <-> 198.<o>.P.2/24
(device `data0` on both ends); every host also has `mgmt0` on a bridge in the root namespace
(198.<o>.255.0/24 by default; test labs take another /24) on which its own OpenSSH sshd
listens. Everything the lab makes carries its name prefix, and `down` removes exactly that:
a user's lab and a test run's never collide.

A pair given a kernel (`up(kernels={"A": SPEC})`) has VM hosts instead (abtui.lab.vm): two
guests booting that kernel, with the same names, addresses, keys and sshd as namespace hosts,
their NICs on tap devices (`<prefix>-as`, `<prefix>-asd`, ...) and the pair's data link on a
bridge of its own (`<prefix>-ad`).
"""

from __future__ import annotations

import contextlib
import itertools
import json
import os
import shutil
import signal
import socket
import subprocess
import time
from collections.abc import Iterable, Mapping
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from abtui.core.errors import AbtuiError, BadInput, LabError, MissingPrerequisite
from abtui.core.pids import pid_alive

if TYPE_CHECKING:
    from abtui.lab.kernels import Kernel
    from abtui.lab.vm import Guest

MAX_PAIRS = 8
# a TCG guest boots in ~17 s alone on this machine's 2 cores; several at once, under load, take
# a few times that
VM_BOOT_TIMEOUT = 300.0
VM_CONGESTION = ("reno", "cubic", "bbr")
# a guest's sshd re-executes itself for each connection, from the 9p root filesystem: under TCG
# and load its banner takes seconds
VM_BANNER_TIMEOUT = 8.0
VM_CONNECT_TIMEOUT = 60
VM_SSHD_OPTIONS = ("KexAlgorithms curve25519-sha256,curve25519-sha256@libssh.org",)
SSHD = "/usr/sbin/sshd"
REQUIRED_PROGRAMS = {
    "ip": "iproute2",
    "sshd": "openssh-server",
    "ssh-keygen": "openssh-client",
    "iperf3": "iperf3",
    "unshare": "util-linux",
    "ethtool": "ethtool",
    "ping": "iputils-ping",
}


@dataclass(frozen=True, slots=True)
class LabHost:
    """One lab host: its SSH alias, namespace and addresses."""

    alias: str
    netns: str
    pair: str
    role: str  # "sender" | "receiver"
    mgmt_address: str
    data_address: str
    root_link: str  # the root-namespace end of its management veth (a VM host's tap)
    kernel: str = ""  # a VM host's kernel SPEC; "" for a namespace host (this machine's kernel)

    @property
    def vm(self) -> bool:
        return bool(self.kernel)


def check_kernel_pairs(kernels: Mapping[str, str], pairs: int) -> dict[str, str]:
    """Pair letter (upper case) -> kernel SPEC, each letter one of the lab's pairs."""
    letters = [chr(ord("A") + p) for p in range(pairs)]
    out = {}
    for letter, spec in kernels.items():
        if letter.upper() not in letters:
            raise BadInput(f"--kernel {letter}={spec}: the lab has pairs {', '.join(letters)}")
        out[letter.upper()] = spec
    return dict(sorted(out.items()))


def _which(program: str) -> str | None:
    return shutil.which(program, path=os.environ.get("PATH", "") + ":/usr/sbin:/sbin")


def _run(args: list[str], check: bool = True, input_text: str | None = None) -> str:
    proc = subprocess.run(args, capture_output=True, text=True, input=input_text)
    if check and proc.returncode != 0:
        raise LabError(f"`{' '.join(args)}` failed: {proc.stderr.strip() or proc.stdout.strip()}")
    return proc.stdout


def default_state_root() -> Path:
    """Where labs keep their keys and configs (`ABTUI_LAB_DIR` overrides)."""
    env = os.environ.get("ABTUI_LAB_DIR")
    if env:
        return Path(env)
    from platformdirs import user_state_dir

    return Path(user_state_dir("abtui")) / "labs"


class Lab:
    """A lab with a name (alias prefix), a 198.<octet>.0.0/16 block and an interface prefix."""

    def __init__(self, name: str = "lab", octet: int = 18, ifprefix: str = "abl",
                 state_dir: Path | None = None, mgmt: int = 255) -> None:
        if octet not in (18, 19):
            raise ValueError("the lab uses 198.18.0.0/15 only: octet must be 18 or 19")
        if not name.isalnum() or not ifprefix.isalnum() or len(ifprefix) > 6:
            raise ValueError("lab name and interface prefix must be short and alphanumeric")
        self.name = name
        self.octet = octet
        if not 200 <= mgmt <= 255:
            raise ValueError("the management subnet's third octet must be 200 to 255")
        self.ifprefix = ifprefix
        self.mgmt = mgmt
        self.state_dir = state_dir or (default_state_root() / name)

    @classmethod
    def default(cls) -> Lab:
        """The user's lab; ABTUI_LAB="name,ifprefix,mgmt" picks other names (tests do)."""
        raw = os.environ.get("ABTUI_LAB")
        if not raw:
            return cls()
        try:
            name, ifprefix, mgmt = raw.split(",")
            return cls(name=name, octet=19, ifprefix=ifprefix, mgmt=int(mgmt))
        except ValueError as exc:
            raise AbtuiError(f"ABTUI_LAB={raw!r}: expected name,ifprefix,mgmt ({exc})") from exc

    # ---- naming -------------------------------------------------------------------------
    @property
    def netns_prefix(self) -> str:
        return f"abtui-{self.name}-"

    @property
    def bridge(self) -> str:
        return f"{self.ifprefix}-mgmt"

    @property
    def bridge_address(self) -> str:
        return f"198.{self.octet}.{self.mgmt}.1"

    @property
    def ssh_config(self) -> Path:
        return self.state_dir / "ssh_config"

    @property
    def known_hosts(self) -> Path:
        return self.state_dir / "known_hosts"

    @property
    def client_key(self) -> Path:
        return self.state_dir / "id_ed25519"

    @property
    def profile_path(self) -> Path:
        return self.state_dir / "lab.toml"

    @property
    def meta_path(self) -> Path:
        return self.state_dir / "lab.json"

    def hosts(self, pairs: int, kernels: Mapping[str, str] | None = None) -> list[LabHost]:
        """The hosts of a lab with `pairs` pairs; `kernels` (pair letter -> SPEC) marks VM
        pairs, by default those of the lab that is up."""
        if not 1 <= pairs <= MAX_PAIRS:
            raise ValueError(f"a lab has 1 to {MAX_PAIRS} pairs")
        if kernels is None:
            kernels = self.kernel_specs()
        out = []
        for p in range(1, pairs + 1):
            letter = chr(ord("a") + p - 1)
            for idx, (role, short) in enumerate((("sender", "snd"), ("receiver", "rcv")), 1):
                alias = f"{self.name}-{letter}-{short}"
                out.append(LabHost(
                    alias=alias,
                    netns=f"abtui-{alias}",
                    pair=letter.upper(),
                    role=role,
                    mgmt_address=f"198.{self.octet}.{self.mgmt}.{10 * p + idx}",
                    data_address=f"198.{self.octet}.{p}.{idx}",
                    root_link=f"{self.ifprefix}-{letter}{short[0]}",
                    kernel=kernels.get(letter.upper(), ""),
                ))
        return out

    def _meta(self) -> dict[str, Any]:
        try:
            meta = json.loads(self.meta_path.read_text())
        except (OSError, ValueError):
            return {}
        return meta if isinstance(meta, dict) else {}

    def pair_count(self) -> int:
        """Pairs of the lab that is up (from its record), 0 when none is recorded."""
        try:
            return int(self._meta()["pairs"])
        except (KeyError, TypeError, ValueError):
            return 0

    def kernel_specs(self) -> dict[str, str]:
        """Pair letter -> kernel SPEC of the lab's VM pairs (from its record)."""
        kernels = self._meta().get("kernels", {})
        return {k: str(v["spec"]) for k, v in kernels.items()} if isinstance(kernels, dict) \
            else {}

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
    def up(self, pairs: int = 2, kernels: Mapping[str, str] | None = None) -> list[LabHost]:
        """Bring the lab up; idempotent: what exists and works is kept. `kernels` maps a pair
        letter to the kernel SPEC (abtui.lab.kernels) its two VM hosts boot."""
        self.check_prerequisites()
        wanted = check_kernel_pairs(kernels or {}, pairs)
        resolved: dict[str, Kernel] = {}
        if wanted:
            from abtui.lab import kernels as kernel_specs
            from abtui.lab import vm as lab_vm

            lab_vm.check_prerequisites()
            resolved = {letter: kernel_specs.resolve(spec) for letter, spec in wanted.items()}
        existing = self.pair_count()
        if existing and (existing != pairs or self.kernel_specs() != wanted):
            self.down()
        hosts = self.hosts(pairs, wanted)
        self.state_dir.mkdir(parents=True, exist_ok=True)
        os.chmod(self.state_dir, 0o700)
        Path("/run/sshd").mkdir(parents=True, exist_ok=True)
        try:
            self._make_keys(hosts)
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
                    self._start_sshd(h)
            self._write_client_files(hosts)
            kept = self._meta().get("boot_s", {})  # of guests that run and are kept
            meta: dict[str, Any] = {"pairs": pairs, "name": self.name, "octet": self.octet,
                                    "kernels": {k: v.to_json() for k, v in resolved.items()},
                                    "boot_s": kept if isinstance(kept, dict) else {}}
            self.meta_path.write_text(json.dumps(meta))
            self._write_profile(hosts, pairs)
            started = self._start_vms(hosts, resolved, meta) if resolved else {}
            for h in hosts:
                if not h.vm:
                    self._wait_ssh(h)
            if started:
                meta["boot_s"].update(self._wait_vms(hosts, started))
                self.meta_path.write_text(json.dumps(meta))
        except BaseException:
            self.down()
            raise
        return hosts

    def _make_keys(self, hosts: list[LabHost]) -> None:
        if not self.client_key.exists():
            _run(["ssh-keygen", "-q", "-t", "ed25519", "-N", "", "-C", f"abtui-{self.name}",
                  "-f", str(self.client_key)])
        for h in hosts:
            key = self.state_dir / f"host_{h.alias}"
            if not key.exists():
                _run(["ssh-keygen", "-q", "-t", "ed25519", "-N", "", "-C", h.alias,
                      "-f", str(key)])
        (self.state_dir / "authorized_keys").write_text(
            Path(f"{self.client_key}.pub").read_text())

    def _make_bridge(self) -> None:
        if not Path(f"/sys/class/net/{self.bridge}").exists():
            _run(["ip", "link", "add", "name", self.bridge, "type", "bridge"])
        _run(["ip", "addr", "replace", f"{self.bridge_address}/24", "dev", self.bridge])
        _run(["ip", "link", "set", self.bridge, "up"])

    def _netns_list(self) -> list[str]:
        out = _run(["ip", "netns", "list"], check=False)
        return [line.split()[0] for line in out.splitlines() if line.strip()]

    def _make_host(self, h: LabHost) -> None:
        _run(["ip", "netns", "add", h.netns])
        ns = ["ip", "-n", h.netns]
        _run([*ns, "link", "set", "lo", "up"])
        _run(["ip", "link", "del", h.root_link], check=False)
        _run(["ip", "link", "add", "name", h.root_link, "type", "veth",
              "peer", "name", "mgmt0", "netns", h.netns])
        _run(["ip", "link", "set", h.root_link, "master", self.bridge, "up"])
        _run([*ns, "addr", "add", f"{h.mgmt_address}/24", "dev", "mgmt0"])
        _run([*ns, "link", "set", "mgmt0", "up"])

    def _make_data_link(self, snd: LabHost, rcv: LabHost) -> None:
        if _run(["ip", "-n", snd.netns, "-o", "link", "show", "data0"], check=False).strip():
            return
        _run(["ip", "link", "add", "name", "data0", "netns", snd.netns, "type", "veth",
              "peer", "name", "data0", "netns", rcv.netns])
        for h in (snd, rcv):
            _run(["ip", "-n", h.netns, "addr", "add", f"{h.data_address}/24", "dev", "data0"])
            _run(["ip", "-n", h.netns, "link", "set", "data0", "up"])

    def start_sshd(self, alias: str) -> None:
        """Start a host's sshd again if it is not running (after a crash, or a fault test
        that killed it) and wait until it answers."""
        h = self._host(alias)
        if h is None:
            raise LabError(f"{alias}: no such host in lab {self.name}")
        if h.vm:
            raise LabError(f"{alias} is a VM host: its sshd runs in the guest (`abtui lab up` "
                           "again boots a guest that stopped)")
        running = self._sshd_pid(h)
        if running is not None and not ssh_banner(h.mgmt_address)[0]:
            # just killed and not yet reaped by the kernel: wait for it to go, or the
            # "already running" check below would skip the start
            deadline = time.monotonic() + 5.0
            while pid_alive(running) and time.monotonic() < deadline:
                time.sleep(0.02)
            if pid_alive(running):
                raise LabError(f"sshd on {alias} (PID {running}) runs but does not answer "
                               f"on {h.mgmt_address}:22")
        self._start_sshd(h)
        self._wait_ssh(h)

    def sshd_pid(self, alias: str) -> int | None:
        """The PID of a host's sshd daemon (from its pidfile), None when it is not running."""
        h = self._host(alias)
        return None if h is None else self._sshd_pid(h)

    def _host(self, alias: str) -> LabHost | None:
        return next((x for x in self.hosts(self.pair_count() or MAX_PAIRS) if x.alias == alias),
                    None)

    def _sshd_pidfile(self, h: LabHost) -> Path:
        return self.state_dir / f"sshd-{h.alias}.pid"

    def _sshd_pid(self, h: LabHost) -> int | None:
        pid = _pidfile_pid(self._sshd_pidfile(h))
        # a killed sshd may linger as a zombie
        return pid if pid is not None and pid_alive(pid) else None

    def _start_sshd(self, h: LabHost) -> None:
        if self._sshd_pid(h) is not None:
            return
        cfg = self._write_sshd_config(h, self._sshd_pidfile(h))
        # The sshd daemon keeps the UTS namespace alive: every SSH session sees `hostname`.
        _run(["ip", "netns", "exec", h.netns, "unshare", "--uts", "sh", "-c",
              'hostname "$0" && exec "$1" -f "$2"', h.alias, SSHD, str(cfg)])

    def _write_sshd_config(self, h: LabHost, pidfile: Path | str,
                           extra: tuple[str, ...] = ()) -> Path:
        """A host's sshd_config: its address, its host key, the lab's client key only."""
        cfg = self.state_dir / f"sshd_config-{h.alias}"
        cfg.write_text("\n".join([
            *extra,
            f"ListenAddress {h.mgmt_address}",
            "Port 22",
            f"HostKey {self.state_dir / ('host_' + h.alias)}",
            f"PidFile {pidfile}",
            f"AuthorizedKeysFile {self.state_dir / 'authorized_keys'}",
            "PermitRootLogin prohibit-password",
            "PasswordAuthentication no",
            "KbdInteractiveAuthentication no",
            "UsePAM no",
            "StrictModes no",
            "UseDNS no",
            "PrintMotd no",
            "MaxSessions 64",
            "MaxStartups 64:30:128",
            "ClientAliveInterval 5",
            "AcceptEnv LANG LC_*",
            # bash sources ~/.bashrc for sshd sessions only at shell level 1: keep the build
            # machine's root dotfiles (pyenv init and its rehash lock) out of lab sessions
            "SetEnv SHLVL=1",
            "LogLevel ERROR",
            "",
        ]))
        return cfg

    # ---- VM hosts -----------------------------------------------------------------------
    def _guest(self, h: LabHost, kernel: Kernel) -> Guest:
        from abtui.lab.vm import Guest, mac

        p = ord(h.pair.lower()) - ord("a") + 1
        role = 1 if h.role == "sender" else 2
        return Guest(alias=h.alias, kernel=kernel, mgmt_tap=h.root_link,
                     data_tap=f"{h.root_link}d", mgmt_mac=mac(self.mgmt, p, role, 0),
                     data_mac=mac(self.mgmt, p, role, 1), mgmt_address=h.mgmt_address,
                     data_address=h.data_address,
                     sshd_config=self.state_dir / f"sshd_config-{h.alias}",
                     state_dir=self.state_dir)

    def _start_vms(self, hosts: list[LabHost], kernels: Mapping[str, Kernel],
                   meta: dict[str, Any]) -> dict[str, tuple[Guest, float]]:
        """Taps, data bridges and guests of the VM pairs (a guest that runs is kept); the
        guests started, with their start times."""
        from abtui.lab import vm as lab_vm

        accel, why = lab_vm.accelerator(next(iter(kernels.values())))
        meta.update({"accel": accel, "accel_why": why})
        self.meta_path.write_text(json.dumps(meta))
        started: dict[str, tuple[Guest, float]] = {}
        for h in hosts:
            if not h.vm:
                continue
            g = self._guest(h, kernels[h.pair])
            bridge = self.data_bridge(h.pair)
            if not Path(f"/sys/class/net/{bridge}").exists():
                _run(["ip", "link", "add", "name", bridge, "type", "bridge"])
                _run(["ip", "link", "set", bridge, "up"])
            alive = lab_vm.qemu_pid(g)
            if alive is not None and pid_alive(alive):
                continue
            for tap, master in ((g.mgmt_tap, self.bridge), (g.data_tap, bridge)):
                _run(["ip", "link", "del", tap], check=False)
                _run(["ip", "tuntap", "add", "dev", tap, "mode", "tap"])
                _run(["ip", "link", "set", tap, "master", master, "up"])
            # the guest's own /run; a key exchange without the post-quantum part, which costs
            # seconds of emulated CPU per connection under TCG
            self._write_sshd_config(h, "/run/sshd.pid", VM_SSHD_OPTIONS)
            g.pidfile.unlink(missing_ok=True)
            vng = lab_vm.launch(g, accel)
            (self.state_dir / f"vng-{h.alias}.pid").write_text(f"{vng}\n")
            started[h.alias] = (g, time.monotonic())
        return started

    def _wait_vms(self, hosts: list[LabHost], started: Mapping[str, tuple[Guest, float]],
                  timeout: float = VM_BOOT_TIMEOUT) -> dict[str, float]:
        """Wait for every started guest's sshd; seconds from start to SSH, per host."""
        from abtui.lab import vm as lab_vm

        boot: dict[str, float] = {}
        deadline = time.monotonic() + timeout
        waiting = {h.alias: h for h in hosts if h.alias in started}
        while waiting:
            for alias, h in list(waiting.items()):
                g, t0 = started[alias]
                if ssh_banner(h.mgmt_address, timeout=VM_BANNER_TIMEOUT)[0]:
                    boot[alias] = round(time.monotonic() - t0, 1)
                    del waiting[alias]
                    continue
                vng = _pidfile_pid(self.state_dir / f"vng-{alias}.pid")
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

    def data_bridge(self, pair: str) -> str:
        """The bridge a VM pair's data link runs on."""
        return f"{self.ifprefix}-{pair.lower()}d"

    def _wait_ssh(self, h: LabHost, timeout: float = 10.0) -> None:
        deadline = time.monotonic() + timeout
        last = ""
        while time.monotonic() < deadline:
            ok, last = ssh_banner(h.mgmt_address)
            if ok:
                return
            time.sleep(0.05)
        raise LabError(f"sshd on {h.alias} ({h.mgmt_address}) did not answer: {last}")

    def _write_client_files(self, hosts: list[LabHost]) -> None:
        lines = []
        for h in hosts:
            pub = Path(self.state_dir / f"host_{h.alias}.pub").read_text().split()
            lines.append(f"{h.alias},{h.mgmt_address} {pub[0]} {pub[1]}")
        self.known_hosts.write_text("\n".join(lines) + "\n")
        blocks = [f"# abtui lab '{self.name}': generated by `abtui lab up`; use with ssh -F\n"]
        for h in hosts:
            blocks.append("\n".join([
                f"Host {h.alias}",
                f"    HostName {h.mgmt_address}",
                "    User root",
                "    Port 22",
                f"    IdentityFile {self.client_key}",
                "    IdentitiesOnly yes",
                f"    UserKnownHostsFile {self.known_hosts}",
                "    GlobalKnownHostsFile /dev/null",
                f"    HostKeyAlias {h.alias}",
                "    StrictHostKeyChecking yes",
                "    ServerAliveInterval 5",
                "    ServerAliveCountMax 3",
                # an emulated guest under load takes seconds per login (abtui's links read it)
                *([f"    ConnectTimeout {VM_CONNECT_TIMEOUT}"] if h.vm else []),
                "",
            ]))
        self.ssh_config.write_text("\n".join(blocks))

    def _allowed_congestion(self, h: LabHost) -> list[str]:
        out = _run(["ip", "netns", "exec", h.netns, "sysctl", "-n",
                    "net.ipv4.tcp_allowed_congestion_control"], check=False)
        return out.split()

    def _write_profile(self, hosts: list[LabHost], pairs: int) -> None:
        from abtui.lab.profile import render_lab_profile

        namespaces = [h for h in hosts if not h.vm]
        # a VM guest's own (root) namespace loads any algorithm its kernel has on first use
        allowed = self._allowed_congestion(namespaces[0]) if namespaces else list(VM_CONGESTION)
        self.profile_path.write_text(render_lab_profile(
            lab_name=self.name, ssh_config=str(self.ssh_config),
            known_hosts=str(self.known_hosts), hosts=hosts, pairs=pairs,
            congestion=allowed or ["reno"], all_vm=not namespaces))

    # ---- down ---------------------------------------------------------------------------
    def down(self) -> None:
        """Remove every namespace, link, process and file of this lab, and nothing else."""
        namespaces = [n for n in self._netns_list() if n.startswith(self.netns_prefix)]
        pids: set[int] = set()
        for ns in namespaces:
            pids.update(int(p) for p in _run(["ip", "netns", "pids", ns], check=False).split())
        for h in self.hosts(MAX_PAIRS):
            pid = self._sshd_pid(h)
            if pid is not None:
                pids.add(pid)
        pids.update(self._vm_pids())
        _terminate(pids)
        for ns in namespaces:
            _run(["ip", "netns", "del", ns], check=False)
        for link in self._root_links():
            _run(["ip", "link", "del", link], check=False)
        if self.state_dir.exists():
            shutil.rmtree(self.state_dir, ignore_errors=True)

    def _vm_pids(self) -> set[int]:
        """The lab's guests (qemu) and their virtme-ng processes: from their pidfiles, and any
        qemu whose command line names a pidfile in this lab's folder (its file lost)."""
        pids = set()
        for path in [*self.state_dir.glob("vm-*.pid"), *self.state_dir.glob("vng-*.pid")]:
            pid = _pidfile_pid(path)
            if pid is not None and pid_alive(pid):
                pids.add(pid)
        ours = f"{self.state_dir}/vm-"
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

    def _root_links(self) -> list[str]:
        out = _run(["ip", "-o", "link", "show"], check=False)
        names = []
        for line in out.splitlines():
            parts = line.split(":", 2)
            if len(parts) < 2:
                continue
            name = parts[1].strip().split("@")[0]
            if name.startswith(f"{self.ifprefix}-"):
                names.append(name)
        # the bridge last: its ports first
        return sorted(names, key=lambda n: n == self.bridge)

    # ---- status -------------------------------------------------------------------------
    def status(self) -> dict[str, object]:
        pairs = self.pair_count()
        meta = self._meta()
        kernels = meta.get("kernels", {})
        boot = meta.get("boot_s", {})
        present = set(self._netns_list())
        hosts = []
        for h in self.hosts(pairs) if pairs else []:
            entry = asdict(h)
            if h.vm:
                qemu = _pidfile_pid(self.state_dir / f"vm-{h.alias}.pid")
                ok = qemu is not None and pid_alive(qemu) and \
                    ssh_banner(h.mgmt_address, timeout=VM_BANNER_TIMEOUT)[0]
                entry.update({"release": kernels.get(h.pair, {}).get("release", ""),
                              "accel": meta.get("accel", ""), "boot_s": boot.get(h.alias),
                              "cpu": "own"})
            else:
                ok = h.netns in present and self._sshd_pid(h) is not None and \
                    ssh_banner(h.mgmt_address)[0]
                # a namespace's /proc/stat is this machine's: its CPU is every host's
                entry.update({"release": os.uname().release, "accel": "", "boot_s": None,
                              "cpu": "shared"})
            entry.update({"address": h.mgmt_address, "ok": bool(ok)})
            hosts.append(entry)
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
            "hosts": hosts,
        }


def ssh_banner(address: str, port: int = 22, timeout: float = 1.0) -> tuple[bool, str]:
    """True when an SSH server answers with its banner at address:port."""
    try:
        with socket.create_connection((address, port), timeout=timeout) as s:
            s.settimeout(timeout)
            banner = s.recv(64).decode("ascii", "replace")
    except OSError as exc:
        return False, str(exc)
    return banner.startswith("SSH-"), banner.strip()


def _terminate(pids: Iterable[int], grace: float = 2.0) -> None:
    """SIGTERM the given PIDs (all of them started by the lab), SIGKILL what remains."""
    alive = set(pids)
    for pid in list(alive):
        try:
            os.kill(pid, signal.SIGTERM)
        except ProcessLookupError:
            alive.discard(pid)
    deadline = time.monotonic() + grace
    while alive and time.monotonic() < deadline:
        for pid in list(alive):
            if not pid_alive(pid):
                alive.discard(pid)
        time.sleep(0.02)
    for pid in alive:
        with contextlib.suppress(ProcessLookupError):
            os.kill(pid, signal.SIGKILL)


def _pidfile_pid(path: Path) -> int | None:
    try:
        return int(path.read_text().split()[0])
    except (OSError, ValueError, IndexError):
        return None
