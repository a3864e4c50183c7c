"""What every OS's build commands share: the states a host reports (its kernel, a module, the
data interface a reload gives back), whether they are a build, and the `BuildCommands` base each
OS's driver fills in (abtui.remote.os.linux.builds, abtui.remote.os.freebsd.builds).

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
# a reload's command reads the build's `reports` setting after this line, in this function
REPORTS_MARK, REPORTS_FUNCTION = "__ABTUI_REPORTS__", "abtui_reports"


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


def tagged(out: str) -> dict[str, str]:
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
    # prints `boot`, `release`, `version` (and FreeBSD's `bootfile`) lines: parse_kernel_state
    KERNEL_STATE = ""
    # runs `{inner}` (a quoted `sh -c` script) detached from the SSH session
    DETACHED = ""

    def kernel_state(self) -> str:
        return self.KERNEL_STATE

    def later(self, command: str) -> str:
        """`command` run detached a second from now: the reply comes back before the host
        goes down, and the SSH session's end does not take it along."""
        return self.DETACHED.format(inner=quote(f"sleep 1; {command}"))

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

    def reload_and_read(self, module: str, build: Build, iface: Interface | None,
                        read_reports: str | None) -> str:
        """The reload, the interface given back, the module and (`read_reports`: the
        dialect's read of the build's `reports` setting) that setting read again: one round
        trip; `split_reload` parts its reply."""
        command = f"{self.reload(module, build, iface)}; {self.module_state(module, build)}"
        if read_reports is not None:
            command += (f"\n{REPORTS_FUNCTION}() {{\n{read_reports}"
                        f"\n}}; echo {REPORTS_MARK}; {REPORTS_FUNCTION}")
        return command

    @staticmethod
    def split_reload(out: str) -> tuple[str, str]:
        """A `reload_and_read` reply: (the module's state, the `reports` setting's read)."""
        state, _, reported = out.partition(f"{REPORTS_MARK}\n")
        return state, reported

    def parse_module_state(self, out: str) -> ModuleState:
        tags = tagged(out)
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
        tags = tagged(out)
        return KernelState(boot_id=tags.get("boot") or None, release=tags.get("release") or None,
                           version=tags.get("version") or None,
                           bootfile=tags.get("bootfile") or None)


def module_name(module: str) -> str:
    if not re.fullmatch(r"[A-Za-z0-9_-]{1,64}", module):
        raise BadInput(f"module {module!r} is not a module name")
    return module


def param_words(build: Build) -> str:
    return "".join(f" {quote(f'{k}={v}')}" for k, v in build.params)

