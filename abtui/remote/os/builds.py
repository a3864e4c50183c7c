"""The commands that switch a host's build, read which build it runs, and keep its data
interface through a module reload, per OS; and the parsers of what they print.

Every word from a profile is quoted here (shlex.quote); parsers never raise. A command that
reboots the host starts the reboot detached, a second later, so its reply (the kexec image
loaded, the GRUB entry set) comes back before the link drops. `kernel_mismatch` and
`module_mismatch` say why a host's state is not a build (None: it is).
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from shlex import quote

from abtui.core.builds import Build, Method
from abtui.core.errors import BadInput

# exit status of a reload whose interface did not come back
EXIT_NO_INTERFACE = 75
IFACE_WAIT_STEPS = 100  # 0.1 s each: how long a reload waits for its interface to appear
CARRIER_WAIT_STEPS = 100  # 0.1 s each: and for its link to come up (then it goes on anyway)


@dataclass(frozen=True, slots=True)
class KernelState:
    """Which boot and kernel a host runs."""

    boot_id: str | None = None
    release: str | None = None
    version: str | None = None
    bootfile: str | None = None  # FreeBSD kern.bootfile

    def label(self) -> str:
        return self.release or self.bootfile or "an unknown kernel"


@dataclass(frozen=True, slots=True)
class ModuleState:
    """A module as the host reports it: loaded or not, its versions, its readable parameters."""

    loaded: bool = False
    srcversion: str | None = None
    version: str | None = None
    file: str | None = None  # FreeBSD: the file kldstat names
    params: dict[str, str] = field(default_factory=dict)


@dataclass(frozen=True, slots=True)
class Interface:
    """The data interface as it was before a reload: what to give back after it."""

    name: str
    mac: str
    mtu: str
    up: bool
    addresses: tuple[str, ...]  # CIDR, e.g. "198.18.1.2/24" (IPv6: global scope only)


def kernel_mismatch(build: Build, state: KernelState) -> str | None:
    """Why `state` is not `build` (None: it is, as far as the build says what to check)."""
    if build.release and state.release != build.release:
        return f"came back on {state.release or 'an unknown release'}, expected {build.release}"
    if not build.release and build.bootfile() and state.bootfile != build.bootfile():
        return f"booted {state.bootfile or 'an unknown kernel'}, expected {build.bootfile()}"
    if build.version and build.version not in (state.version or ""):
        return f"uname -v {state.version!r} does not contain {build.version!r}"
    return None


def module_mismatch(build: Build, state: ModuleState) -> str | None:
    """Why the module's state is not `build` (parameters the host does not show are not
    checked here: `Build.reports` checks those)."""
    if not state.loaded:
        return "the module is not loaded"
    for name, value in build.params:
        got = state.params.get(name)
        if got is not None and got != value:
            return f"parameter {name} reads {got}, expected {value}"
    if build.srcversion and state.srcversion != build.srcversion:
        return f"srcversion {state.srcversion}, expected {build.srcversion}"
    if build.version and state.version != build.version:
        return f"version {state.version}, expected {build.version}"
    if build.method is Method.KLD and build.file and state.file is not None \
            and not _same_file(state.file, build.file):
        return f"kldstat names {state.file}, expected {build.file}"
    return None


def _same_file(shown: str, wanted: str) -> bool:
    """kldstat names the file (and, with -v, its path): a bare name matches either."""
    if "/" in wanted:
        return shown == wanted or shown == wanted.rsplit("/", 1)[-1]
    return shown.rsplit("/", 1)[-1] in (wanted, f"{wanted}.ko")


def _tagged(out: str) -> dict[str, str]:
    """`tag rest` lines (the state commands print them) as {tag: rest}, the last one winning."""
    found = {}
    for line in out.splitlines():
        tag, _, rest = line.partition(" ")
        if tag:
            found[tag] = rest.strip()
    return found


class BuildCommands:
    """What every OS's build commands share; `LinuxBuilds` and `FreeBSDBuilds` fill them in."""

    name = "posix"

    def kernel_state(self) -> str:
        raise NotImplementedError

    def boot(self, build: Build) -> str:
        raise NotImplementedError

    def module_state(self, module: str, build: Build) -> str:
        raise NotImplementedError

    def interface(self, device: str) -> str:
        raise NotImplementedError

    def reload(self, module: str, build: Build, iface: Interface | None) -> str:
        raise NotImplementedError

    def parse_interface(self, out: str, device: str) -> Interface | None:
        raise NotImplementedError

    def parse_module_state(self, out: str) -> ModuleState:
        tags = _tagged(out)
        params = {}
        for line in out.splitlines():
            if line.startswith("param "):
                _tag, name, value = [*line.split(" ", 2), ""][:3]
                params[name] = value.strip()
        return ModuleState(loaded="loaded" in tags, srcversion=tags.get("srcversion") or None,
                           version=tags.get("version") or None, file=tags.get("file") or None,
                           params=params)

    @staticmethod
    def parse_kernel_state(out: str) -> KernelState:
        tags = _tagged(out)
        return KernelState(boot_id=tags.get("boot") or None, release=tags.get("release") or None,
                           version=tags.get("version") or None,
                           bootfile=tags.get("bootfile") or None)


def _module(module: str) -> str:
    if not re.fullmatch(r"[A-Za-z0-9_-]{1,64}", module):
        raise BadInput(f"module {module!r} is not a module name")
    return module


def _params(build: Build) -> str:
    return "".join(f" {quote(f'{k}={v}')}" for k, v in build.params)


class LinuxBuilds(BuildCommands):
    """Linux: kexec, grub-reboot, a reboot; modprobe and insmod; iproute2 for the interface."""

    name = "linux"

    def kernel_state(self) -> str:
        return ('echo "boot $(cat /proc/sys/kernel/random/boot_id)"; '
                'echo "release $(uname -r)"; echo "version $(uname -v)"')

    @staticmethod
    def later(command: str) -> str:
        """`command` run detached a second from now: the reply comes back before the host
        goes down, and the SSH session's end does not take it along."""
        inner = quote(f"sleep 1; {command}")
        return (f"if command -v setsid >/dev/null 2>&1; then setsid -f sh -c {inner}; "
                f"else nohup sh -c {inner} & fi >/dev/null 2>&1 </dev/null")

    REBOOT = "systemctl reboot || reboot"

    def boot(self, build: Build) -> str:
        if build.method is Method.KEXEC:
            image, initrd = build.kexec_image()
            load = f"kexec -l {quote(image)}"
            if initrd:
                load += f" --initrd={quote(initrd)}"
            load += " --reuse-cmdline"
            if build.append:
                load += f" --append={quote(build.append)}"
            go = "if [ -d /run/systemd/system ]; then systemctl kexec; else kexec -e; fi"
            return f"{load} || return $?; {self.later(go)}"
        if build.method is Method.GRUB_REBOOT:
            return f"grub-reboot {quote(build.entry)} || return $?; {self.later(self.REBOOT)}"
        if build.method is Method.REBOOT:
            return self.later(self.REBOOT)
        raise BadInput(f"a Linux host does not boot a build by {build.method}")

    # A guest under emulation spends most of a command starting programs (from a 9p root):
    # files are read with the shell's `read`, and the interface set up by one `ip -batch`.
    @staticmethod
    def _show(tag: str, path: str) -> str:
        """`tag CONTENT` for a readable one-line file, with shell builtins only."""
        return f"[ -r {path} ] && read -r v < {path} && echo \"{tag} $v\""

    def module_state(self, module: str, build: Build) -> str:
        d = f"/sys/module/{_module(module)}"
        out = (f"[ -d {d} ] && echo loaded; {self._show('srcversion', f'{d}/srcversion')}; "
               f"{self._show('version', f'{d}/version')}; ")
        for name, _ in build.params:
            out += self._show(f"param {name}", quote(f"{d}/parameters/{name}")) + "; "
        return out + "true"

    def interface(self, device: str) -> str:
        d = quote(f"/sys/class/net/{device}")
        return (f"{self._show('mac', f'{d}/address')} && {self._show('mtu', f'{d}/mtu')} && "
                f"{self._show('flags', f'{d}/flags')} && ip -o addr show dev {quote(device)}")

    def parse_interface(self, out: str, device: str) -> Interface | None:
        tags = _tagged(out)
        if not tags.get("mac") or not tags.get("mtu"):
            return None
        try:
            up = bool(int(tags.get("flags", "0"), 16) & 1)  # IFF_UP
        except ValueError:
            up = False
        addresses = []
        for line in out.splitlines():
            words = line.split()
            for i, w in enumerate(words[:-1]):
                if w == "inet" or (w == "inet6" and "global" in words):
                    addresses.append(words[i + 1])
        return Interface(device, tags["mac"], tags["mtu"], up, tuple(addresses))

    def reload(self, module: str, build: Build, iface: Interface | None) -> str:
        m = quote(_module(module))
        out = (f"if [ -d /sys/module/{m} ]; then modprobe -r {m} || rmmod {m} || return $?; fi; ")
        if build.method is Method.MODPROBE:
            out += f"modprobe {m}{_params(build)} || return $?; "
        elif build.method is Method.INSMOD:
            # insmod resolves nothing: the modules the file depends on (`modprobe -r` took
            # them along with the old build) are loaded first, from the running kernel's own
            f = quote(build.file)
            out += (f"d=$(modinfo -F depends {f} 2>/dev/null | tr , ' '); "
                    f"[ -z \"$d\" ] || modprobe -a $d || return $?; "
                    f"insmod {f}{_params(build)} || return $?; ")
        else:
            raise BadInput(f"a Linux host does not load a module by {build.method}")
        return out + (self._give_back(iface) if iface is not None else "true")

    @staticmethod
    def _give_back(iface: Interface) -> str:
        """The interface found again by its MAC (a reload may name it anew), renamed, its MTU,
        state and addresses as before, its link up again."""
        dev, mac = quote(iface.name), quote(iface.mac)
        find = ("n=; for f in /sys/class/net/*/address; do read -r a < \"$f\"; "
                f"[ \"$a\" = {mac} ] && {{ n=${{f%/address}}; n=${{n##*/}}; break; }}; done")
        gone = quote(f"no interface with MAC {iface.mac} after the reload")
        lines = [f"link set dev {iface.name} mtu {iface.mtu}" + (" up" if iface.up else "")]
        lines += [f"addr replace {a} dev {iface.name}" for a in iface.addresses]
        out = (f"i=0; while :; do {find}; [ -n \"$n\" ] && break; i=$((i+1)); "
               f"[ $i -ge {IFACE_WAIT_STEPS} ] && {{ echo {gone} >&2; "
               f"return {EXIT_NO_INTERFACE}; }}; sleep 0.1; done; "
               f"{{ [ \"$n\" = {dev} ] || printf '%s\\n' \"link set dev $n down\" "
               f"\"link set dev $n name \"{dev}; "
               f"printf '%s\\n' {' '.join(quote(x) for x in lines)}; }} | ip -batch - "
               "|| return $?; ")
        if iface.up:  # its link negotiated again before anything is sent through it
            out += (f"i=0; until read -r c < /sys/class/net/{dev}/carrier 2>/dev/null && "
                    f"[ \"$c\" = 1 ]; do i=$((i+1)); [ $i -ge {CARRIER_WAIT_STEPS} ] && break; "
                    "sleep 0.1; done; ")
        return out + "true"


class FreeBSDBuilds(BuildCommands):
    """FreeBSD: nextboot and a reboot; kldunload/kldload; ifconfig for the interface."""

    name = "freebsd"

    def kernel_state(self) -> str:
        return ('echo "boot $(sysctl -n kern.boottime)"; echo "release $(uname -r)"; '
                'echo "version $(uname -v)"; echo "bootfile $(sysctl -n kern.bootfile)"')

    @staticmethod
    def later(command: str) -> str:
        return f"daemon -f sh -c {quote(f'sleep 1; {command}')} >/dev/null 2>&1 </dev/null"

    def boot(self, build: Build) -> str:
        reboot = self.later("shutdown -r now")
        if build.method is Method.NEXTBOOT:
            return f"nextboot -k {quote(build.kernel)} || return $?; {reboot}"
        if build.method is Method.REBOOT:
            return reboot
        raise BadInput(f"a FreeBSD host does not boot a build by {build.method}")

    def module_state(self, module: str, build: Build) -> str:
        m = quote(_module(module))
        return (f"if kldstat -q -n {m}; then echo loaded; kldstat -v -n {m} | "
                "awk 'NR == 2 { f = $5; if ($6 ~ /^\\(/) f = substr($6, 2, length($6) - 2); "
                "print \"file \" f }'; fi; true")

    def interface(self, device: str) -> str:
        return f"ifconfig {quote(device)}"

    def parse_interface(self, out: str, device: str) -> Interface | None:
        mac = mtu = ""
        up, addresses = False, []
        for line in out.splitlines():
            words = line.split()
            if line.startswith(f"{device}:"):
                up = "<UP" in line or ",UP," in line or ",UP>" in line
                if "mtu" in words:
                    mtu = words[words.index("mtu") + 1]
            elif words[:1] == ["ether"] and len(words) > 1:
                mac = words[1]
            elif words[:1] == ["inet"] and "netmask" in words:
                mask = words[words.index("netmask") + 1]
                bits = bin(int(mask, 16)).count("1") if mask.startswith("0x") else 32
                addresses.append(f"{words[1]}/{bits}")
            elif words[:1] == ["inet6"] and "prefixlen" in words and "%" not in words[1]:
                addresses.append(f"{words[1]}/{words[words.index('prefixlen') + 1]}")
        if not mac or not mtu:
            return None
        return Interface(device, mac, mtu, up, tuple(addresses))

    def reload(self, module: str, build: Build, iface: Interface | None) -> str:
        if build.method is not Method.KLD:
            raise BadInput(f"a FreeBSD host does not load a module by {build.method}")
        m = quote(_module(module))
        out = (f"if kldstat -q -n {m}; then kldunload -n {m} || return $?; fi; "
               f"kldload {quote(build.file or module)} || return $?; ")
        if iface is None:
            return out + "true"
        dev, gone = quote(iface.name), quote(f"no {iface.name} after the reload")
        out += (f"i=0; until ifconfig {dev} >/dev/null 2>&1; do i=$((i+1)); "
                f"[ $i -ge {IFACE_WAIT_STEPS} ] && {{ echo {gone} >&2; "
                f"return {EXIT_NO_INTERFACE}; }}; sleep 0.1; done; "
                f"ifconfig {dev} mtu {quote(iface.mtu)} || return $?; ")
        if iface.up:
            out += f"ifconfig {dev} up || return $?; "
        for a in iface.addresses:
            family = "inet6" if ":" in a else "inet"
            out += f"ifconfig {dev} {family} {quote(a)} alias || return $?; "
        return out + "true"


def build_commands(os_name: str) -> BuildCommands:
    """The build commands of a host running `os_name` (a dialect's name)."""
    if os_name == "freebsd":
        return FreeBSDBuilds()
    return LinuxBuilds()
