"""The FreeBSD driver: settings (knobs) read and written through sysctl(8) and ifconfig(8)
capabilities, and the parsers of what sysctl, ifconfig and pciconf print; its build and tunnel
commands are its parts (abtui.remote.os.freebsd.builds, abtui.remote.os.freebsd.tunnels).
"""

from __future__ import annotations

import re
from shlex import quote
from typing import ClassVar

from abtui.core.errors import BadInput
from abtui.core.model import KnobKind
from abtui.remote import host_state, traffic
from abtui.remote.checks import on_off, unsigned, validate_device, validate_sysctl_key
from abtui.remote.os.dialect import Dialect, Setting, as_function
from abtui.remote.os.freebsd.builds import FreeBSDBuilds
from abtui.remote.os.freebsd.tunnels import FreeBSDTunnels


class FreeBSD(Dialect):
    """FreeBSD: sysctl(8) (`k=v` answers `k: old -> new`), ifconfig(8) capabilities."""

    name = "freebsd"
    builds = FreeBSDBuilds()
    tunnels = FreeBSDTunnels()
    cpu_times_command = "sysctl -n kern.cp_times"
    # the TCP host cache (ssthresh, RTT per destination), purged at once (FreeBSD 11 and later)
    carryover_command = as_function("sysctl net.inet.tcp.hostcache.purgenow=1 2>&1")
    carryover_what = "the TCP host cache (sysctl net.inet.tcp.hostcache.purgenow=1)"

    # ifconfig's argument -> the flag `options=` shows when it is on
    CAPABILITIES: ClassVar[dict[str, str]] = {
        "tso": "TSO4", "tso4": "TSO4", "tso6": "TSO6", "lro": "LRO",
        "rxcsum": "RXCSUM", "txcsum": "TXCSUM", "rxcsum6": "RXCSUM_IPV6",
        "txcsum6": "TXCSUM_IPV6", "vlanhwtag": "VLAN_HWTAGGING", "vlanhwtso": "VLAN_HWTSO",
        "vlanhwcsum": "VLAN_HWCSUM", "vlanmtu": "VLAN_MTU", "wol": "WOL_MAGIC",
        "rxtls": "RXTLS4", "txtls": "TXTLS4",
    }
    # Linux ethtool names of the same features
    FROM_LINUX: ClassVar[dict[str, str]] = {"rx": "rxcsum", "tx": "txcsum", "rxvlan": "vlanhwtag"}

    def host_state_command(self, device: str | None, target: str | None) -> str:
        return host_state.freebsd_command(device, target)

    def link_counters_command(self, device: str | None, target: str | None) -> str:
        return traffic.freebsd_counters_command(device, target)

    def capability(self, key: str) -> str:
        cap = self.FROM_LINUX.get(key, key)
        if cap not in self.CAPABILITIES:
            raise BadInput(f"{key!r} is not a FreeBSD interface capability abtui knows "
                           f"({', '.join(sorted(self.CAPABILITIES))})")
        return cap

    @staticmethod
    def _coalesce_is_sysctl(s: Setting) -> bool:
        return "." in s.key

    def check_setting(self, s: Setting) -> Setting:
        if s.kind is KnobKind.NETEM:
            raise BadInput("FreeBSD has no netem (tc qdisc): abtui sets netem on Linux hosts "
                           "only")
        if s.kind is KnobKind.ETHTOOL_COALESCE:
            if not self._coalesce_is_sysctl(s):
                raise BadInput(f"FreeBSD has no ethtool coalescing ({s.key}): give the knob "
                               "os_keys.freebsd = \"dev.<driver>.<unit>.enable_aim\" (a sysctl)")
            validate_sysctl_key(s.key)
            return s
        if s.kind is KnobKind.ETHTOOL_FEATURE:
            validate_device(s.device)
            self.capability(s.key)
            return s
        return super().check_setting(s)

    def normalize(self, s: Setting, value: str) -> str:
        if s.kind is KnobKind.ETHTOOL_COALESCE:  # enable_aim and friends: integers
            v = str(value).strip().lower()
            if v in ("on", "off", "true", "false", "yes", "no"):
                return "1" if on_off(v) == "on" else "0"
            return unsigned(value, s.key)
        return super().normalize(s, value)

    def read_body(self, s: Setting) -> str:
        if s.kind is KnobKind.SYSCTL or s.kind is KnobKind.ETHTOOL_COALESCE:
            return f"sysctl -n {quote(s.key)}"
        if s.kind in (KnobKind.ETHTOOL_FEATURE, KnobKind.MTU):
            return f"ifconfig {quote(s.device or '')}"
        raise BadInput(f"{s.kind} is not a host setting")

    def write_body(self, s: Setting, value: str) -> str:
        v = self.normalize(s, value)
        dev = quote(s.device or "")
        if s.kind is KnobKind.SYSCTL or s.kind is KnobKind.ETHTOOL_COALESCE:
            return f"sysctl {quote(s.key + '=' + v)}"
        if s.kind is KnobKind.ETHTOOL_FEATURE:
            cap = self.capability(s.key)
            return f"ifconfig {dev} {quote(cap if v == 'on' else '-' + cap)} && ifconfig {dev}"
        if s.kind is KnobKind.MTU:
            return f"ifconfig {dev} mtu {quote(v)} && ifconfig {dev}"
        raise BadInput(f"{s.kind} is not a host setting")

    def parse_value(self, s: Setting, out: str) -> str | None:
        if s.kind is KnobKind.SYSCTL or s.kind is KnobKind.ETHTOOL_COALESCE:
            change = parse_sysctl_change(out)
            if change is not None:
                return change[2]
            lines = out.splitlines()
            return lines[-1].strip() if lines else None
        if s.kind is KnobKind.ETHTOOL_FEATURE:
            options = parse_ifconfig_options(out)
            if options is None:
                return None
            return "on" if self.CAPABILITIES[self.FROM_LINUX.get(s.key, s.key)] in options \
                else "off"
        if s.kind is KnobKind.MTU:
            m = re.search(r"\bmtu (\d+)", out)
            return m.group(1) if m else None
        return None


def parse_sysctl_change(out: str) -> tuple[str, str, str] | None:
    """FreeBSD `sysctl k=v`: `k: old -> new` -> (k, old, new); None when absent."""
    for line in reversed(out.splitlines()):
        m = re.match(r"^\s*([^:\s]+):\s?(.*?)\s+->\s+(.*?)\s*$", line)
        if m:
            return m.group(1), m.group(2), m.group(3)
    return None


def parse_ifconfig_options(out: str) -> set[str] | None:
    """FreeBSD ifconfig `options=8051b<RXCSUM,TXCSUM,TSO4,LRO>` -> its flags."""
    m = re.search(r"^\s*options=[0-9a-fA-F]*<([^>]*)>", out, re.MULTILINE)
    if m is None:
        return set() if re.search(r"^\s*options=", out, re.MULTILINE) else None
    return {f.strip() for f in m.group(1).split(",") if f.strip()}


def parse_freebsd_pciconf(out: str, device: str) -> dict[str, str]:
    """`pciconf -lv`: the block of `device@pci...` -> {"vendor", "device", "class"}."""
    info: dict[str, str] = {}
    lines = out.splitlines()
    for i, line in enumerate(lines):
        if not line.startswith(f"{device}@"):
            continue
        for sub in lines[i + 1:]:
            if not sub.startswith((" ", "\t")):
                break
            name, sep, rest = sub.strip().partition("=")
            if sep:
                info[name.strip()] = rest.strip().strip("'")
        break
    return info
