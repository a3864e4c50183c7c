"""What every OS's driver (its dialect) shares: a host setting and the Dialect base class whose
commands are shell functions, each key and value checked first (abtui.remote.checks); a
dialect carries its OS's build and tunnel commands as its parts.

Every command is built by a dialect (abtui.remote.os.linux, abtui.remote.os.freebsd), from
validated keys and values, each quoted with shlex.quote, so untrusted text (a profile, a knob
value) never reaches a shell as code. A write command also reads the setting back, so one round
trip both changes and verifies it. Parsers never raise: they return None when a reply is not
what they expect. abtui.remote.os.pick picks a host's dialect, once; abtui.remote.refusals says
why a host refused a write.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import ClassVar

from abtui.core import netem
from abtui.core.errors import BadInput
from abtui.core.model import KnobKind
from abtui.remote.checks import (
    on_off,
    unsigned,
    validate_device,
    validate_name,
    validate_sysctl_key,
    validate_text,
)
from abtui.remote.os.builds import BuildCommands
from abtui.remote.os.tunnels import TunnelCommands


@dataclass(frozen=True, slots=True)
class Setting:
    """One thing on a host that has a value: a sysctl, a NIC feature or parameter, an MTU."""

    kind: KnobKind
    key: str
    device: str | None = None

    def label(self) -> str:
        name = self.key or str(self.kind)  # a keyless kind (mtu, netem) by its kind
        return f"{name} on {self.device}" if self.device else name


def same_value(a: str | None, b: str | None) -> bool:
    """Values compare equal when their whitespace-separated words do (tcp_wmem uses tabs)."""
    return a is not None and b is not None and a.split() == b.split()


SWAP_MARK = "__ABTUI_SWAP__"


FUNCTION = "abtui_do"
MAX_KEPT = 256  # swap commands a dialect keeps built


def as_function(body: str) -> str:
    """A command as a shell function defined and called at once (see Dialect.read_command;
    a control shell may keep it defined, abtui.remote.control_shell.ControlShell)."""
    return f"{FUNCTION}() {{\n{body}\n}}; {FUNCTION}"


class Dialect:
    """How one OS reads and writes settings. Subclasses fill in the per-kind commands."""

    name = "posix"
    # the OS's build and tunnel commands (None: abtui switches no builds, makes no tunnels here)
    builds: ClassVar[BuildCommands | None] = None
    tunnels: ClassVar[TunnelCommands | None] = None
    # prints the host's CPU time counters (abtui.parse.cputimes reads them): one round trip
    # per sample of a run's host CPU series
    cpu_times_command = ""
    # forgets what one TCP connection leaves to the next to the same host (the metrics or
    # host cache: ssthresh, RTT), between an alternation's stretches; "" when abtui knows no
    # way on this OS. `carryover_what` names it in what abtui says
    carryover_command = ""
    carryover_what = "the TCP metrics cache"

    def host_state_command(self, device: str | None, target: str | None) -> str:
        """Prints what shapes the host's numbers besides the knobs (abtui.remote.host_state);
        "" where this OS has no reading."""
        return ""

    def counters_loop_command(self) -> str | None:
        """The counters loop a profiled run keeps beside its profile (abtui.remote.counters);
        None where this OS has none."""
        return None

    def link_counters_command(self, device: str | None, target: str | None) -> str:
        """Prints the data device's byte and packet counters with the host's clock
        (abtui.remote.traffic); "" where this OS has no reading."""
        return ""

    def __init__(self) -> None:
        self._swaps: dict[tuple[Setting, str], str] = {}  # swap_command's, built once each
        self._checked: set[Setting] = set()  # settings check_setting passed (a flip's path)

    def check_setting(self, s: Setting) -> Setting:
        """Validate a setting's key (and device) for this OS; raise BadInput otherwise."""
        if s in self._checked:
            return s
        if s.kind is KnobKind.SYSCTL:
            validate_sysctl_key(s.key)
        else:
            validate_device(s.device)
            if s.kind not in (KnobKind.MTU, KnobKind.NETEM):
                validate_name("key", s.key)
        if len(self._checked) >= MAX_KEPT:
            self._checked.clear()
        self._checked.add(s)
        return s

    def normalize(self, s: Setting, value: str) -> str:
        """The value as this OS writes it; raise BadInput when it is not valid for the kind."""
        if s.kind is KnobKind.SYSCTL:
            return validate_text(s.key, value)
        if s.kind is KnobKind.ETHTOOL_FEATURE:
            return on_off(value)
        if s.kind is KnobKind.MTU:
            return unsigned(value, "MTU", 68, 65535)
        if s.kind is KnobKind.NETEM:
            return netem.canonical(value)
        raise BadInput(f"{s.kind} settings are not host settings")

    # Commands are shell functions (defined and called in one go): `return` ends them without
    # ending the control shell, so links can run them without a subshell (no fork).
    def read_command(self, s: Setting) -> str:
        """Prints the setting's current value (in the OS's own format)."""
        return as_function(self.read_body(self.check_setting(s)))

    def write_command(self, s: Setting, value: str) -> str:
        """Writes `value`, then prints the value read back."""
        return as_function(self.write_body(self.check_setting(s), value))

    def swap_command(self, s: Setting, value: str) -> str:
        """Prints the current value, SWAP_MARK, then writes and prints the value read back:
        one round trip gives both what to set back and the verification. Kept per setting
        and value (a flip between two values builds it twice, not on every flip: 8 us a host
        of the client's CPU on a knob flip's path)."""
        kept = self._swaps
        command = kept.get((s, value))
        if command is None:
            command = as_function(self.swap_body(self.check_setting(s), value))
            if len(kept) >= MAX_KEPT:
                kept.clear()
            kept[(s, value)] = command
        return command

    def swap_body(self, s: Setting, value: str) -> str:
        """swap_command's body: the read, SWAP_MARK, the write (a dialect may do it in fewer
        steps of the host's shell)."""
        return f"{{ {self.read_body(s)}\n}} || return $?; echo {SWAP_MARK}; " + \
            self.write_body(s, value)

    def parse_swap(self, s: Setting, out: str) -> tuple[str | None, str | None]:
        """(value before, value read back) from a swap's output; None where absent."""
        before, sep, after = out.partition(f"{SWAP_MARK}\n")
        if not sep:
            before, sep, after = out.partition(SWAP_MARK)
        return (self.parse_value(s, before) if before else None,
                self.parse_value(s, after) if sep and after else None)

    def read_body(self, s: Setting) -> str:
        raise NotImplementedError

    def write_body(self, s: Setting, value: str) -> str:
        raise NotImplementedError

    def parse_value(self, s: Setting, out: str) -> str | None:
        raise NotImplementedError
