"""The lab's 32-bit ARM host: pair A's sender as a `qemu-system-arm` guest (abtui.lab.vm.armguest)
beside an x86 VM receiver, reached over SSH like every lab host, switched between named kernel
builds by power-cycle.

`abtui lab up --kernel A=X86-SPEC --arm-build NAME=BUILD --arm-build NAME=BUILD ...` makes pair
A's sender this guest: the same alias, management and data addresses, taps and host key as an
x86 sender would have (the lab's OpenSSH host key, converted for the guest's dropbear: the
lab's known_hosts trusts it as it trusts the others), booting the first build named. A BUILD
is a built ARM tree's output folder (abtui.lab.kbuild's `builds/KEY/out`, or `builds/KEY`):
its `arch/arm/boot/zImage`, its release (`include/config/kernel.release`) and its version
(`include/generated/utsversion.h`, what `uname -v` prints: two builds of one source share a
release, and the version tells them apart). The lab's record keeps the builds by name
(`arm`), and which one the guest runs (`booted`).

`abtui lab boot ALIAS NAME` stops the guest's qemu and starts it again on build NAME, as a
lab's power control would; the switch is done when the guest's console says it runs that
build's release and version and its SSH server answers. The lab's profile offers the builds
as a `kernel` knob reached by that command.
"""

from __future__ import annotations

import json
import time
from collections.abc import Mapping, Sequence
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

from abtui.core.errors import BadInput, LabError, MissingPrerequisite
from abtui.core.pids import pid_alive
from abtui.lab.layout import LabHost, LabLayout
from abtui.lab.system import pidfile_pid, run, ssh_banner, terminate

ARM_PAIR = "A"  # the pair whose sender is the ARM guest
# a boot of the small config's kernel takes ~4 s alone; its crypto self-tests and dropbear's
# first key exchange under TCG at load 10-20 take minutes (measured up to 3)
ARM_BOOT_TIMEOUT = 900.0
ARM_BANNER_TIMEOUT = 8.0


@dataclass(frozen=True, slots=True)
class ArmBuild:
    """One ARM kernel build the guest can boot: its name (the knob's value), image, release
    and version (`uname -v`)."""

    name: str
    image: str
    release: str
    version: str

    def to_json(self) -> dict[str, str]:
        return asdict(self)


def arm_build(name: str, spec: str) -> ArmBuild:
    """The build a `--arm-build NAME=FOLDER` names; BadInput with one line otherwise."""
    if not name.replace("-", "").replace("_", "").isalnum():
        raise BadInput(f"--arm-build {name}={spec}: name a build with letters, digits, - and _")
    folder = Path(spec).expanduser()
    if (folder / "out").is_dir():
        folder = folder / "out"
    image = folder / "arch" / "arm" / "boot" / "zImage"
    release = folder / "include" / "config" / "kernel.release"
    uts = folder / "include" / "generated" / "utsversion.h"
    if not image.is_file() or not release.is_file() or not uts.is_file():
        raise BadInput(f"--arm-build {name}={spec}: not a built ARM kernel tree (expected "
                       f"{image}, {release.name} and {uts.name} in it: an abtui.lab.kbuild "
                       "build's out folder)")
    version = ""
    for line in uts.read_text(errors="replace").splitlines():
        if line.startswith("#define UTS_VERSION "):
            version = line.split(" ", 2)[2].strip().strip('"')
    if not version:
        raise BadInput(f"--arm-build {name}={spec}: {uts} names no UTS_VERSION")
    return ArmBuild(name, str(image.resolve()), release.read_text().strip(), version)


def parse_arm_builds(texts: Sequence[str]) -> dict[str, ArmBuild]:
    """`NAME=FOLDER` items -> builds in order (the first is booted by `lab up`)."""
    out: dict[str, ArmBuild] = {}
    for text in texts:
        name, sep, spec = text.partition("=")
        if not sep or not name or not spec:
            raise BadInput(f"--arm-build {text}: write NAME=FOLDER (a built ARM kernel tree)")
        if name in out:
            raise BadInput(f"--arm-build {text}: build {name!r} is named twice")
        out[name] = arm_build(name, spec)
    if len({b.version for b in out.values()}) < len(out):
        raise BadInput("--arm-build: two builds have the same version (uname -v): the lab "
                       "could not tell which one runs")
    return out


def recorded_builds(layout: LabLayout) -> dict[str, ArmBuild]:
    """The ARM builds of the lab that is up, by name (from its record), in order."""
    raw = layout.record().get("arm", {})
    builds = raw.get("builds", {}) if isinstance(raw, dict) else {}
    if not isinstance(builds, dict):
        return {}
    return {str(n): ArmBuild(**{k: str(b[k]) for k in ("name", "image", "release", "version")})
            for n, b in builds.items() if isinstance(b, dict)}


def recorded_priorities(layout: LabLayout) -> tuple[tuple[str, int], ...]:
    """The crypto ranking the lab's ARM guest applies at each boot (from its record)."""
    raw = layout.record().get("arm", {})
    pairs = raw.get("crypto_priority", []) if isinstance(raw, dict) else []
    return tuple((str(d), int(p)) for d, p in pairs) if isinstance(pairs, list) else ()


def check_prerequisites() -> None:
    from shutil import which

    from abtui.lab.vm.armguest import QEMU_ARM
    from abtui.lab.vm.armroot import cached

    if which(QEMU_ARM) is None:
        raise MissingPrerequisite(f"`{QEMU_ARM}` is missing (Debian: qemu-system-arm; "
                                  "`make arm`)")
    if cached() is None:
        raise MissingPrerequisite("the armhf userspace is not assembled (`make arm`, or "
                                  "`python -m abtui.lab.vm.armroot`)")


class LabArmHost:
    """The lab's ARM guest: started on a build, waited for, switched, stopped; named by the
    lab's layout (its taps, MACs, addresses and keys are the sender's of pair A)."""

    def __init__(self, layout: LabLayout) -> None:
        self.layout = layout

    def guest(self, h: LabHost, build: ArmBuild) -> Any:
        """The ArmGuest `h` runs as, booting `build`."""
        from abtui.lab.vm.armguest import ArmGuest
        from abtui.lab.vm.guest import mac

        p = ord(h.pair.lower()) - ord("a") + 1
        state = self.layout.state_dir
        return ArmGuest(alias=h.alias, image=Path(build.image), mgmt_tap=h.root_link,
                        mgmt_mac=mac(self.layout.mgmt, p, 1, 0),
                        mgmt_address=f"{h.mgmt_address}/24", data_tap=f"{h.root_link}d",
                        data_mac=mac(self.layout.mgmt, p, 1, 1),
                        data_address=f"{h.data_address}/24",
                        host_key=state / f"host_{h.alias}",
                        authorized_keys=(state / "authorized_keys").read_text(),
                        state_dir=state, clock=self.layout.clock(),
                        crypto_priority=recorded_priorities(self.layout))

    def pidfile(self, alias: str) -> Path:
        return self.layout.state_dir / f"arm-{alias}.pid"

    def pid(self, alias: str) -> int | None:
        pid = pidfile_pid(self.pidfile(alias))
        return pid if pid is not None and pid_alive(pid) else None

    def running(self, alias: str) -> ArmBuild | None:
        """The build the guest runs now: the one its console named (release and version)."""
        from abtui.lab.vm.armguest import ready_version

        said = ready_version(self.layout.state_dir, alias)
        if said is None:
            return None
        return next((b for b in recorded_builds(self.layout).values()
                     if (b.release, b.version) == said), None)

    def start(self, h: LabHost, build: ArmBuild, bridge: str) -> float:
        """Taps made (management on the lab's bridge, data on the pair's), the guest's qemu
        started on `build`; the monotonic start time."""
        from abtui.lab.vm import armguest, armroot

        base = armroot.cached()
        if base is None:
            raise MissingPrerequisite("the armhf userspace is not assembled (`make arm`)")
        g = self.guest(h, build)
        self.stop(h.alias)
        for tap, master in ((g.mgmt_tap, self.layout.bridge), (g.data_tap, bridge)):
            run(["ip", "link", "del", tap], check=False)
            run(["ip", "tuntap", "add", "dev", tap, "mode", "tap"])
            run(["ip", "link", "set", tap, "master", master, "up"])
        t0 = time.monotonic()
        armguest.launch(g, base)
        return t0

    def wait(self, h: LabHost, build: ArmBuild, t0: float,
             timeout: float = ARM_BOOT_TIMEOUT) -> float:
        """Seconds from `t0` until the guest said it runs `build` and its SSH server answers;
        LabError (its console's last lines) when it stopped, came up on another build, or
        took longer than `timeout`."""
        from abtui.lab.vm.armguest import ready_version

        deadline = t0 + timeout
        while time.monotonic() < deadline:
            said = ready_version(self.layout.state_dir, h.alias)
            if said is not None and said != (build.release, build.version):
                raise LabError(f"ARM host {h.alias} came up on {said[0]} {said[1]!r}, not "
                               f"build {build.name} ({build.version})")
            if said is not None and ssh_banner(h.mgmt_address, timeout=ARM_BANNER_TIMEOUT)[0]:
                return round(time.monotonic() - t0, 1)
            if said is None and self.pid(h.alias) is None and time.monotonic() - t0 > 5:
                raise LabError(f"ARM host {h.alias} ({build.name}) stopped while booting: "
                               f"{self.log_tail(h.alias)}")
            time.sleep(0.25)
        raise LabError(f"ARM host {h.alias} ({build.name}): no SSH within {timeout:g} s "
                       f"({self.log_tail(h.alias)})")

    def stop(self, alias: str) -> None:
        """Power off: the guest's qemu ended, and waited for (its taps are free again)."""
        pid = self.pid(alias)
        if pid is None:
            return
        terminate([pid])
        deadline = time.monotonic() + 10.0
        while pid_alive(pid) and time.monotonic() < deadline:
            time.sleep(0.05)

    def log_tail(self, alias: str, lines: int = 4) -> str:
        log = self.layout.state_dir / f"arm-{alias}.log"
        try:
            text = log.read_text(errors="replace")
        except OSError:
            return "no console log"
        return " | ".join(x.strip() for x in text.splitlines()[-lines:] if x.strip())

    def pids(self) -> set[int]:
        """The lab's ARM guests' qemu processes (from their pidfiles)."""
        out = set()
        for path in self.layout.state_dir.glob("arm-*.pid"):
            pid = pidfile_pid(path)
            if pid is not None and pid_alive(pid):
                out.add(pid)
        return out

    def record(self, builds: Mapping[str, ArmBuild], meta: dict[str, Any],
               crypto_priority: Sequence[tuple[str, int]] = ()) -> None:
        """The builds, by name, and the crypto ranking every boot applies
        (abtui.lab.vm.cryptorank) into the lab's record (`meta`, written by the caller)."""
        meta["arm"] = {"pair": ARM_PAIR, "builds": {n: b.to_json() for n, b in builds.items()},
                       "crypto_priority": [[d, p] for d, p in crypto_priority]}

    def switch(self, h: LabHost, name: str) -> tuple[ArmBuild, float]:
        """Power-cycle the ARM host onto build `name`; (the build, seconds from the switch's
        start to SSH on it). A boot that fails is followed by a power-cycle back onto the
        build it ran, then LabError."""
        builds = recorded_builds(self.layout)
        if name not in builds:
            raise BadInput(f"lab boot {h.alias} {name}: the ARM host's builds are "
                           f"{', '.join(builds) or 'none'} (lab up --arm-build NAME=FOLDER)")
        before = self.running(h.alias) or next(iter(builds.values()))
        bridge = self.layout.data_bridge(h.pair)
        try:
            seconds = self.wait(h, builds[name], self.start(h, builds[name], bridge))
        except LabError as exc:
            with_back = ""
            try:
                self.wait(h, before, self.start(h, before, bridge))
                with_back = f"; power-cycled back onto {before.name}"
            except LabError as again:
                with_back = f"; and back onto {before.name} failed too: {again}"
            raise LabError(f"{exc}{with_back}") from None
        with self.layout.record_lock():
            meta = self.layout.record()
            meta.setdefault("booted", {})[h.alias] = {"arm": name}
            meta.setdefault("boot_s", {})[h.alias] = seconds
            self.layout.meta_path.write_text(json.dumps(meta))
        return builds[name], seconds


def kernel_knob(builds: Sequence[ArmBuild], power: Sequence[str], timeout: int) -> str:
    """The lab profile's `kernel` knob on the ARM host: its builds by name, each reached by
    the lab's power-cycle (`power`: argv with `{host}` and `{value}`), proved by the release
    and version the host reports after the boot."""
    def q(text: str) -> str:
        return json.dumps(text)

    lines = [
        "# The ARM host's kernel build: each reached by `abtui lab boot {host} {value}` (the",
        "# lab power-cycles the guest onto it), proved by its release and `uname -v`.",
        "[[knobs]]",
        'name = "kernel"',
        'kind = "kernel"',
        f"values = [{', '.join(q(b.name) for b in builds)}]",
        f'pairs = ["{ARM_PAIR}"]',
        'scope = "sender"',
        "[knobs.build]",
        'method = "command"',
        f"command = [{', '.join(q(a) for a in power)}]",
        f"command_timeout = {timeout}",
        f"timeout = {timeout}",
    ]
    for b in builds:
        lines += [f"[knobs.builds.{q(b.name)}]", f"release = {q(b.release)}",
                  f"version = {q(b.version)}"]
    return "\n".join(lines) + "\n"


def rank_comment(crypto_priority: Sequence[tuple[str, int]]) -> list[str]:
    """The profile's record of the crypto ranking every boot of the guest applies (a copy of
    the profile goes into each session)."""
    if not crypto_priority:
        return ["# The guest's crypto drivers keep their own priorities (no ranking at boot)."]
    ranked = ", ".join(f"{d} = {p}" for d, p in crypto_priority)
    return [f"# Each boot of the guest sets these crypto priorities before any SA: {ranked}",
            "# (`lab up --arm-crypto-priority`; its console says what each was)."]


def lab_profile(*, lab_name: str, ssh_config: str, known_hosts: str, sender: LabHost,
                receiver: LabHost, builds: Sequence[ArmBuild], power: Sequence[str],
                timeout: int, crypto_priority: Sequence[tuple[str, int]] = ()) -> str:
    """The lab's profile when pair A's sender is the ARM guest: the softirq-crypto seed's
    procedure on it (profiles/softirq-crypto-arm.toml with this lab's hosts and builds):
    the kernel knob over the ARM builds, IPsec rfc4106(gcm(aes)) to the x86 receiver, TX
    and RX, iperf3's default options. Only knobs the ARM guest's busybox userspace can set
    (no ethtool there)."""
    def q(text: str) -> str:
        return json.dumps(text)

    return "\n".join([
        "# abtui profile for the local lab, written by `abtui lab up`: pair A's sender is the",
        "# 32-bit ARM guest, its receiver an x86 VM guest. The softirq-crypto seed's procedure:",
        "#   abtui run THIS --headless --alternate kernel=BUILD1,BUILD2 --set reverse=off "
        "--until-verdict",
        "# (reverse=on for RX).",
        *rank_comment(crypto_priority),
        "",
        "[profile]",
        f"name = {q(lab_name)}",
        "description = \"the lab's ARM guest: IPsec TX/RX per kernel build\"",
        f"ssh_config = {q(ssh_config)}",
        f"known_hosts = {q(known_hosts)}",
        "",
        "[test]",
        "duration = 10        # iperf3's default options: 10 s, TCP, one stream",
        "interval = 1.0",
        "# nothing else on the guests' one emulated CPU during a run: no ping beside iperf3, no",
        "# CPU reads over SSH (dropbear's crypto under TCG costs the sender what it measures)",
        "ping = false",
        "host_cpu = false",
        "",
        "[[pairs]]",
        f"label = {q(sender.pair)}",
        f"sender = {q(sender.alias)}",
        f"receiver = {q(receiver.alias)}",
        f"target = {q(receiver.data_address)}",
        'sender_device = "data0"',
        'receiver_device = "data0"',
        "",
        kernel_knob(builds, power, timeout),
        "# ESP in transport mode, rfc4106(gcm(aes)) with a 256-bit key (or none).",
        "[[knobs]]",
        'name = "tunnel"',
        'kind = "tunnel"',
        'values = ["ipsec", "none"]',
        'binding = "u"',
        "",
        "# TX (the ARM guest sends) or RX (iperf3 -R: the x86 guest sends).",
        "[[knobs]]",
        'name = "reverse"',
        'kind = "iperf3"',
        'key = "reverse"',
        'values = ["off", "on"]',
        "",
        "[plan]",
        'matrix = ["reverse"]',
        "repetitions = 1",
        "shuffle = false",
        "pause = 2.0",
        "",
    ])
