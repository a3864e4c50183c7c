"""A build a host can run: a kernel (reached by a boot) or a module (reached by a reload), how
a host reaches it and what the host reports once it runs it.

A `kernel` or `module` knob's values name builds; each has a `Build` (profile: `[knobs.build]`
shared by every value, `[knobs.builds.VALUE]` one value's own). What can be derived from a name
is: a value spelled as a Debian kernel package (`linux-image-6.1.0-57-amd64`) or an image
`/boot/vmlinuz-6.1.0-57-amd64` runs release `6.1.0-57-amd64`, whose kexec image and initrd are
`/boot/vmlinuz-R` and `/boot/initrd.img-R`. No imports from the rest of abtui.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from enum import StrEnum


class Method(StrEnum):
    """How a host reaches a build."""

    KEXEC = "kexec"  # Linux: kexec -l IMAGE, then systemctl kexec / kexec -e
    GRUB_REBOOT = "grub-reboot"  # Linux: grub-reboot ENTRY, then a reboot
    NEXTBOOT = "nextboot"  # FreeBSD: nextboot -k KERNEL, then a reboot
    COMMAND = "command"  # the user's command on the controller (power control, PXE)
    REBOOT = "reboot"  # a plain reboot: back to the default boot (restore only)
    MODPROBE = "modprobe"  # Linux: modprobe -r NAME; modprobe NAME PARAM=...
    INSMOD = "insmod"  # Linux: modprobe -r NAME; insmod FILE PARAM=...
    KLD = "kld"  # FreeBSD: kldunload NAME; kldload FILE


KERNEL_METHODS = (Method.KEXEC, Method.GRUB_REBOOT, Method.NEXTBOOT, Method.COMMAND)
# what boots a host: a kernel build's methods, and the plain reboot a restore may use
BOOT_METHODS = frozenset({*KERNEL_METHODS, Method.REBOOT})
MODULE_METHODS = (Method.MODPROBE, Method.INSMOD, Method.KLD)
# the placeholders a `command` build's argv may hold, each replaced by plain text
PLACEHOLDERS = ("host", "value", "release", "knob", "pair")
# how long a host has to come back on the new build, and a command to run (seconds)
KERNEL_TIMEOUT_S = 300.0
MODULE_TIMEOUT_S = 60.0
COMMAND_TIMEOUT_S = 120.0

_PACKAGE = re.compile(r"linux-image-(?P<release>[0-9][A-Za-z0-9._+~-]*)")
_IMAGE = re.compile(r"(?:.*/)?vmlinuz-(?P<release>[0-9][A-Za-z0-9._+~-]*)")
_PLACEHOLDER = re.compile(r"\{\{|\}\}|\{([^{}]*)\}")


@dataclass(frozen=True, slots=True)
class Reports:
    """A host setting (a host knob kind and key) that reads `value` on the build: proof of a
    module parameter /sys/module does not show (e1000e's InterruptThrottleRate: rx-usecs)."""

    kind: str
    key: str
    value: str


@dataclass(frozen=True, slots=True)
class Build:
    """One build value of a kernel or module knob: how to reach it, what proves it runs."""

    method: Method
    image: str = ""  # kexec
    initrd: str | None = None  # kexec: None derived, "" none
    append: str = ""  # kexec: words added to the running command line
    entry: str = ""  # grub-reboot
    kernel: str = ""  # nextboot: the kernel's folder under /boot
    command: tuple[str, ...] = ()  # command: argv with {placeholders}
    file: str = ""  # insmod, kld: the module file on the host
    params: tuple[tuple[str, str], ...] = ()  # modprobe, insmod: NAME=value in order
    release: str = ""  # the `uname -r` expected after the switch ("" not checked)
    version: str = ""  # text `uname -v` contains (kernel), /sys/module/KEY/version (module)
    srcversion: str = ""  # module: /sys/module/KEY/srcversion
    reports: Reports | None = None
    timeout: float = KERNEL_TIMEOUT_S
    command_timeout: float = COMMAND_TIMEOUT_S

    @property
    def is_kernel(self) -> bool:
        return self.method not in MODULE_METHODS

    def bootfile(self) -> str:
        """FreeBSD's `kern.bootfile` on a nextboot build: /boot/KERNEL/kernel."""
        return f"/boot/{self.kernel}/kernel" if self.kernel else ""

    def kexec_image(self) -> tuple[str, str]:
        """(image, initrd) for kexec: as given, else /boot/vmlinuz-R and /boot/initrd.img-R."""
        image = self.image or (f"/boot/vmlinuz-{self.release}" if self.release else "")
        if self.initrd is not None:
            return image, self.initrd
        derived = derived_release(image)
        return image, f"/boot/initrd.img-{derived}" if derived else ""

    def to_record(self) -> dict[str, object]:
        """The build as the undo journal keeps it (what `abtui recover` boots back into)."""
        out: dict[str, object] = {"method": str(self.method)}
        for name in ("image", "append", "entry", "kernel", "file", "release", "version",
                     "srcversion"):
            if getattr(self, name):
                out[name] = getattr(self, name)
        if self.initrd is not None:
            out["initrd"] = self.initrd
        if self.command:
            out["command"] = list(self.command)
        if self.params:
            out["params"] = [list(p) for p in self.params]
        if self.reports is not None:
            out["reports"] = [self.reports.kind, self.reports.key, self.reports.value]
        out["timeout"] = self.timeout
        out["command_timeout"] = self.command_timeout
        return out

    @classmethod
    def from_record(cls, rec: dict[str, object]) -> Build:
        """A journal's build back (KeyError, TypeError or ValueError when it is damaged)."""
        reports = rec.get("reports")
        params = rec.get("params") or []
        command = rec.get("command") or []
        initrd = rec.get("initrd")
        if not isinstance(params, list) or not isinstance(command, list):
            raise TypeError("params and command are lists")
        return cls(
            method=Method(str(rec["method"])),
            **{k: str(rec[k]) for k in ("image", "append", "entry", "kernel", "file", "release",
                                        "version", "srcversion") if k in rec},
            initrd=None if initrd is None else str(initrd),
            command=tuple(str(x) for x in command),
            params=tuple((str(p[0]), str(p[1])) for p in params),
            reports=Reports(*(str(x) for x in reports)) if isinstance(reports, list) else None,
            timeout=float(str(rec.get("timeout", KERNEL_TIMEOUT_S))),
            command_timeout=float(str(rec.get("command_timeout", COMMAND_TIMEOUT_S))))


def derived_release(name: str) -> str:
    """The `uname -r` a Debian package name or a /boot/vmlinuz-R image runs ("" none)."""
    for pattern in (_PACKAGE, _IMAGE):
        m = pattern.fullmatch(name)
        if m:
            return m.group("release")
    return ""


def placeholders(word: str) -> list[str]:
    """The `{name}`s in one argv word (`{{` and `}}` are literal braces)."""
    return [m.group(1) for m in _PLACEHOLDER.finditer(word) if m.group(1) is not None]


def fill(word: str, values: dict[str, str]) -> str:
    """One argv word with its placeholders replaced (plain text: never a shell)."""
    def one(m: re.Match[str]) -> str:
        if m.group(0) in ("{{", "}}"):
            return m.group(0)[0]
        return values.get(m.group(1), m.group(0))
    return _PLACEHOLDER.sub(one, word)
