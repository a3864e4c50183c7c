"""The Linux driver: settings (knobs) read and written through /proc/sys with shell builtins,
ethtool, iproute2 and tc (netem), and the parsers of what ethtool prints; its build and tunnel
commands are its parts (abtui.remote.os.linux.builds, abtui.remote.os.linux.tunnels).
"""

from __future__ import annotations

import re
from shlex import quote
from typing import ClassVar

from abtui.core import netem
from abtui.core.errors import BadInput
from abtui.core.model import KnobKind
from abtui.remote import counters, host_state, traffic
from abtui.remote.checks import on_off, unsigned
from abtui.remote.os.dialect import SWAP_MARK, Dialect, Setting, as_function
from abtui.remote.os.linux.builds import LinuxBuilds
from abtui.remote.os.linux.tunnels import LinuxTunnels
from abtui.remote.refusals import EXIT_READ_ONLY, EXIT_UNKNOWN, EXIT_WRITE

# Is netem there (loaded, loadable, or built in), asked without loading anything? Only when the
# device's root qdisc is not netem already.
NETEM_PRESENT = (
    "{ [ -d /sys/module/sch_netem ] || modprobe -n -q sch_netem 2>/dev/null || "
    "grep -qs /sch_netem.ko \"/lib/modules/$(uname -r)/modules.builtin\" || "
    "{ [ -r /proc/config.gz ] && zcat /proc/config.gz | grep -q '^CONFIG_NET_SCH_NETEM=[ym]'; }; }")
NETEM_MISSING = ("this kernel has no netem (sch_netem is not loaded, not loadable and not "
                 "built in)")


class Linux(Dialect):
    """Linux: /proc/sys with shell builtins (no fork under bash), ethtool, iproute2."""

    name = "linux"
    builds = LinuxBuilds()
    tunnels = LinuxTunnels()
    # /proc/stat's cpu lines (they come first) with shell builtins only: no fork, and the
    # long intr/softirq lines after them are never read
    cpu_times_command = ('while read -r l; do case $l in cpu*) echo "$l";; *) break;; esac; '
                         'done < /proc/stat')
    # the kernel's TCP metrics cache (ssthresh, RTT, cwnd per destination: `ip tcp_metrics
    # show`), which hands a closed connection's figures to the next one to the same host
    carryover_command = as_function("ip tcp_metrics flush all 2>&1")
    carryover_what = "the TCP metrics cache (ip tcp_metrics flush)"

    # ethtool -K takes these short names; ethtool -k prints the long ones
    FEATURES: ClassVar[dict[str, str]] = {
        "tso": "tcp-segmentation-offload", "gso": "generic-segmentation-offload",
        "gro": "generic-receive-offload", "lro": "large-receive-offload",
        "rx": "rx-checksumming", "tx": "tx-checksumming", "sg": "scatter-gather",
        "rxvlan": "rx-vlan-offload", "txvlan": "tx-vlan-offload",
        "ntuple": "ntuple-filters", "rxhash": "receive-hashing",
        "rx-gro-hw": "rx-gro-hw", "rx-gro-list": "rx-gro-list",
    }

    # sysctls that take one of a list the kernel keeps in another: a refusal says the list
    CHOICES: ClassVar[dict[str, str]] = {
        "net.ipv4.tcp_congestion_control": "net.ipv4.tcp_allowed_congestion_control"}

    def host_state_command(self, device: str | None, target: str | None) -> str:
        return host_state.linux_command(device, target)

    def counters_loop_command(self) -> str | None:
        return counters.counters_loop_command()

    def link_counters_command(self, device: str | None, target: str | None) -> str:
        return traffic.linux_counters_command(device, target)

    def __init__(self, fast_sysctl: bool = True) -> None:
        super().__init__()
        self.fast_sysctl = fast_sysctl

    def _refused(self, key: str) -> str:
        """After a refused write: the allowed values on stderr (for a CHOICES key), and the
        exit status that says the kernel refused the value."""
        choices = self.CHOICES.get(key)
        if choices is None:
            return f"return {EXIT_WRITE}"
        return (f"{{ {{ printf %s {quote(choices + ': ')}; f={quote(self.proc_path(choices))}; "
                f"{self._read_file()}; }} >&2; return {EXIT_WRITE}; }}")

    @staticmethod
    def proc_path(key: str) -> str:
        """net.ipv4.conf.eth0/1.rp_filter -> /proc/sys/net/ipv4/conf/eth0.1/rp_filter"""
        return "/proc/sys/" + key.translate(str.maketrans("./", "/."))

    @staticmethod
    def _read_file(path_var: str = '"$f"', fmt: str = "%s\\n") -> str:
        # bash's read builtin reads procfs whole (seekable file); dash reads a byte at a time,
        # which integer sysctls answer with EOF after one byte: dash falls back to cat.
        return (f'if [ -n "${{BASH_VERSION:-}}" ]; then IFS= read -r v < {path_var} || '
                f'[ -n "$v" ]; else v=$(cat {path_var}); fi && printf \'{fmt}\' "$v"')

    def _sysctl_file(self, key: str) -> str:
        """$f set to the sysctl's file under /proc/sys; its absence said (EXIT_UNKNOWN)."""
        return (f"f={quote(self.proc_path(key))}; [ -e \"$f\" ] || "
                f"{{ echo {quote('unknown key ' + key)} >&2; return {EXIT_UNKNOWN}; }}; ")

    def _sysctl_write(self, key: str, v: str) -> str:
        """`v` (quoted) written to $f, then read back; a read-only file or a refusal said."""
        return (f"[ -w \"$f\" ] || {{ echo {quote(key + ' is read only')} >&2; "
                f"return {EXIT_READ_ONLY}; }}; printf '%s\\n' {v} > \"$f\" || "
                f"{self._refused(key)}; " + self._read_file())

    def swap_body(self, s: Setting, value: str) -> str:
        """A sysctl through /proc/sys: one existence test for the read and the write, and
        the value before printed with SWAP_MARK in one write (the hosts' bash did about a
        sixth less a 4-host flip than with the read's and the write's own steps)."""
        if s.kind is not KnobKind.SYSCTL or not self.fast_sysctl:
            return super().swap_body(s, value)
        return (self._sysctl_file(s.key) + self._read_file(fmt=f"%s\\n{SWAP_MARK}\\n")
                + " || return $?; " + self._sysctl_write(s.key, quote(self.normalize(s, value))))

    def normalize(self, s: Setting, value: str) -> str:
        if s.kind is KnobKind.ETHTOOL_COALESCE:
            if s.key.startswith("adaptive-"):
                v = str(value).strip()
                return "on" if v.isdigit() and int(v) > 0 else on_off(value)
            return unsigned(value, s.key)
        return super().normalize(s, value)

    def read_body(self, s: Setting) -> str:
        if s.kind is KnobKind.SYSCTL:
            if not self.fast_sysctl:
                return f"sysctl -n {quote(s.key)}"
            return self._sysctl_file(s.key) + self._read_file()
        dev = quote(s.device or "")
        if s.kind is KnobKind.ETHTOOL_FEATURE:
            return f"ethtool -k {dev}"
        if s.kind is KnobKind.ETHTOOL_COALESCE:
            return f"ethtool -c {dev}"
        if s.kind is KnobKind.MTU:
            return f"f={quote('/sys/class/net/' + (s.device or '') + '/mtu')}; " \
                + self._read_file()
        if s.kind is KnobKind.NETEM:
            return (f"q=$(tc qdisc show dev {dev} root) || return $?; case \"$q\" in "
                    f"*'qdisc netem '*) ;; *) {NETEM_PRESENT} || {{ echo "
                    f"{quote(NETEM_MISSING)} >&2; return {EXIT_UNKNOWN}; }} ;; esac; "
                    "printf '%s\\n' \"$q\"")
        raise BadInput(f"{s.kind} is not a host setting")

    def write_body(self, s: Setting, value: str) -> str:
        v = quote(self.normalize(s, value))
        dev = quote(s.device or "")
        if s.kind is KnobKind.SYSCTL:
            if not self.fast_sysctl:
                write = f"sysctl -w {quote(s.key + '=' + self.normalize(s, value))} >/dev/null"
                if s.key not in self.CHOICES:
                    return f"{write} && sysctl -n {quote(s.key)}"
                return f"{write} || {self._refused(s.key)}; sysctl -n {quote(s.key)}"
            return self._sysctl_file(s.key) + self._sysctl_write(s.key, v)
        if s.kind is KnobKind.ETHTOOL_FEATURE:
            return f"ethtool -K {dev} {quote(s.key)} {v} && ethtool -k {dev}"
        if s.kind is KnobKind.ETHTOOL_COALESCE:
            # ethtool -C exits 80 when nothing changed (the value was already set)
            return (f"ethtool -C {dev} {quote(s.key)} {v}; rc=$?; "
                    f"[ $rc -eq 0 ] || [ $rc -eq 80 ] || return $rc; ethtool -c {dev}")
        if s.kind is KnobKind.MTU:
            return f"ip link set dev {dev} mtu {v} || return $?; " + self.read_body(s)
        if s.kind is KnobKind.NETEM:
            args = netem.tc_args(value)
            if not args:  # none: remove a netem root qdisc (the device's default comes back)
                return (f"case \"$(tc qdisc show dev {dev} root)\" in *'qdisc netem '*) "
                        f"tc qdisc del dev {dev} root || return $? ;; esac; "
                        f"tc qdisc show dev {dev} root")
            return (f"tc qdisc replace dev {dev} root netem "
                    f"{' '.join(quote(a) for a in args)} || return $?; "
                    f"tc qdisc show dev {dev} root")
        raise BadInput(f"{s.kind} is not a host setting")

    def parse_value(self, s: Setting, out: str) -> str | None:
        if s.kind in (KnobKind.SYSCTL, KnobKind.MTU):
            lines = out.splitlines()
            return lines[-1].strip() if lines else None
        if s.kind is KnobKind.ETHTOOL_FEATURE:
            return parse_ethtool_feature(out, self.FEATURES.get(s.key, s.key))
        if s.kind is KnobKind.ETHTOOL_COALESCE:
            return parse_ethtool_coalesce(out, s.key)
        if s.kind is KnobKind.NETEM:
            return netem.from_tc(out)
        return None


def parse_ethtool_feature(out: str, long_name: str) -> str | None:
    """`ethtool -k`: the last `<name>: on|off [fixed]` line for the feature."""
    value = None
    for line in out.splitlines():
        name, sep, rest = line.strip().partition(":")
        if sep and name == long_name and rest.split():
            word = rest.split()[0]
            if word in ("on", "off"):
                value = word
    return value


def parse_ethtool_coalesce(out: str, key: str) -> str | None:
    """`ethtool -c`: `Adaptive RX: on  TX: off` for adaptive-rx/-tx, `rx-usecs: 3` otherwise."""
    if key in ("adaptive-rx", "adaptive-tx"):
        m = re.search(r"Adaptive RX:\s*(\S+)\s+TX:\s*(\S+)", out)
        if m is None:
            return None
        return m.group(1) if key == "adaptive-rx" else m.group(2)
    for line in out.splitlines():
        name, sep, rest = line.partition(":")
        if sep and name.strip() == key and rest.strip():
            return rest.strip()
    return None
