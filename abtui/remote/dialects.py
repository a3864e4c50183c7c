"""OS dialects: how Linux and FreeBSD spell reading and writing a setting, and their replies.

Every command is built here, from validated keys and values, each quoted with shlex.quote, so
untrusted text (a profile, a knob value) never reaches a shell as code. A write command also
reads the setting back, so one round trip both changes and verifies it. Parsers never raise:
they return None when a reply is not what they expect.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from shlex import quote
from typing import ClassVar

from abtui.core import netem
from abtui.core.errors import BadInput
from abtui.core.model import KnobKind

SYSCTL_KEY = re.compile(r"[A-Za-z0-9_.%/-]+")
DEVICE = re.compile(r"[A-Za-z0-9_][A-Za-z0-9_.:@-]{0,14}")
NAME = re.compile(r"[A-Za-z0-9_][A-Za-z0-9_-]*")
MAX_VALUE = 1024

# Exit statuses our own scripts use to say why a write was refused.
EXIT_UNKNOWN, EXIT_READ_ONLY, EXIT_WRITE = 3, 4, 5
SWAP_MARK = "__ABTUI_SWAP__"

UNKNOWN_KEY = "unknown key"
READ_ONLY = "read-only"
PERMISSION = "permission denied"
INVALID_VALUE = "invalid value"
UNSUPPORTED = "not supported by the device"
NO_DEVICE = "no such device"


@dataclass(frozen=True, slots=True)
class Setting:
    """One thing on a host that has a value: a sysctl, a NIC feature or parameter, an MTU."""

    kind: KnobKind
    key: str
    device: str | None = None

    def label(self) -> str:
        name = self.key or str(self.kind)  # a keyless kind (mtu, netem) by its kind
        return f"{name} on {self.device}" if self.device else name


# ---- validation -------------------------------------------------------------------------
def validate_sysctl_key(key: str) -> str:
    """A sysctl name: [A-Za-z0-9_.%/-]+, no option-like start, no empty or dot-only parts."""
    if not isinstance(key, str) or not SYSCTL_KEY.fullmatch(key) or key[0] in "-./" \
            or any(part in ("", ".", "..") for part in key.replace("/", ".").split(".")) \
            or any(part in ("", ".", "..") for part in key.split(".")):
        raise BadInput(f"sysctl key {key!r} is not valid: expected names like "
                       "net.ipv4.tcp_wmem ([A-Za-z0-9_.%/-], not starting with - . or /)")
    return key


def validate_device(device: str | None) -> str:
    if not device or not DEVICE.fullmatch(device):
        raise BadInput(f"device {device!r} is not a valid interface name")
    return device


def validate_name(what: str, name: str) -> str:
    if not isinstance(name, str) or not NAME.fullmatch(name) or len(name) > 64:
        raise BadInput(f"{what} {name!r} is not valid (letters, digits, _ and -)")
    return name


def validate_text(what: str, value: str) -> str:
    """A free-form value (a sysctl's): printable, one line, at most MAX_VALUE characters."""
    if not isinstance(value, str) or len(value) > MAX_VALUE or \
            any(not ch.isprintable() and ch != "\t" for ch in value):
        raise BadInput(f"{what}: value {value!r} is not valid (one printable line, "
                       f"at most {MAX_VALUE} characters)")
    return value


def on_off(value: str) -> str:
    """on/off (also 1/0, true/false, yes/no) spelled on/off."""
    v = str(value).strip().lower()
    if v in ("on", "1", "true", "yes"):
        return "on"
    if v in ("off", "0", "false", "no"):
        return "off"
    raise BadInput(f"value {value!r} is not valid: expected on or off")


def unsigned(value: str, what: str = "value", low: int = 0, high: int = 2**32 - 1) -> str:
    v = str(value).strip()
    if not v.isdigit() or not low <= int(v) <= high:
        raise BadInput(f"{what} {value!r} is not valid: expected an integer {low}..{high}")
    return str(int(v))


def same_value(a: str | None, b: str | None) -> bool:
    """Values compare equal when their whitespace-separated words do (tcp_wmem uses tabs)."""
    return a is not None and b is not None and a.split() == b.split()


# A write the kernel refused, as the tools say it: printf into /proc/sys (bash says the errno,
# dash only "I/O error"), procps' `sysctl -w`, FreeBSD's `sysctl k=v` (an unknown key is said
# otherwise: "unknown oid", "cannot stat").
WRITE_REFUSED = re.compile(r'(?:printf: (?:write error|printf)|sysctl: setting key "[^"]*"|'
                           r'^sysctl: [^\s:]+): (?P<errno>[^:]+)$')
ERRNO_WHY = {"no such file or directory": INVALID_VALUE, "invalid argument": INVALID_VALUE,
             "numerical result out of range": INVALID_VALUE, "result too large": INVALID_VALUE,
             "operation not permitted": PERMISSION, "permission denied": PERMISSION,
             "read-only file system": READ_ONLY, "device or resource busy": "busy",
             "operation not supported": UNSUPPORTED}


def write_refusal(stderr: str) -> tuple[str, str] | None:
    """(the kernel's reason, the lines after it) when `stderr` says a write was refused."""
    lines = [ln.strip() for ln in stderr.splitlines() if ln.strip()]
    for i, line in enumerate(lines):
        m = WRITE_REFUSED.search(line)
        if m:
            return m.group("errno").strip(), "; ".join(lines[i + 1:])
    return None


def classify_error(stderr: str, status: int) -> str:
    """Why a host refused a write, from our scripts' exit status or the tool's message."""
    refused = write_refusal(stderr)
    if refused is not None:  # the key exists: the kernel said no to the value
        return ERRNO_WHY.get(refused[0].lower(), "failed")
    text = stderr.lower()
    if status == EXIT_UNKNOWN or "unknown oid" in text or "no such file" in text or \
            "cannot stat" in text or "bit name not found" in text or \
            "nonexistent" in text or "invalid feature" in text:
        return UNKNOWN_KEY
    if status == EXIT_READ_ONLY or "read only" in text or "read-only" in text or \
            "could not change any device features" in text or "[requested" in text:
        return READ_ONLY
    if "operation not permitted" in text or "permission denied" in text:
        return PERMISSION
    if "not supported" in text:
        return UNSUPPORTED
    if "no such device" in text or "does not exist" in text or "cannot find device" in text:
        return NO_DEVICE
    if "invalid" in text or "out of range" in text or "numerical result" in text:
        return INVALID_VALUE
    return "failed"


def reason_line(stderr: str, status: int) -> str:
    """`<why>: <the tool's last line>`, one line; for a value the kernel refused, `<why>: the
    kernel refused it (<its reason>)` and what the host allows, where it says."""
    why = classify_error(stderr, status)
    refused = write_refusal(stderr)
    if refused is not None:
        errno, hint = refused
        return f"{why}: the kernel refused it ({errno}){'; ' + hint if hint else ''}"
    last = next((ln.strip() for ln in reversed(stderr.splitlines()) if ln.strip()), "")
    return f"{why}: {last}" if last else f"{why} (exit {status})"


def as_function(body: str) -> str:
    """A command as a shell function defined and called at once (see Dialect.read_command)."""
    return f"abtui_do() {{\n{body}\n}}; abtui_do"


# Is netem there (loaded, loadable, or built in), asked without loading anything? Only when the
# device's root qdisc is not netem already.
NETEM_PRESENT = (
    "{ [ -d /sys/module/sch_netem ] || modprobe -n -q sch_netem 2>/dev/null || "
    "grep -qs /sch_netem.ko \"/lib/modules/$(uname -r)/modules.builtin\" || "
    "{ [ -r /proc/config.gz ] && zcat /proc/config.gz | grep -q '^CONFIG_NET_SCH_NETEM=[ym]'; }; }")
NETEM_MISSING = ("this kernel has no netem (sch_netem is not loaded, not loadable and not "
                 "built in)")


# ---- the dialects -----------------------------------------------------------------------
class Dialect:
    """How one OS reads and writes settings. Subclasses fill in the per-kind commands."""

    name = "posix"
    # prints the host's CPU time counters (abtui.parse.cputimes reads them): one round trip
    # per sample of a run's host CPU series
    cpu_times_command = ""

    def check_setting(self, s: Setting) -> Setting:
        """Validate a setting's key (and device) for this OS; raise BadInput otherwise."""
        if s.kind is KnobKind.SYSCTL:
            validate_sysctl_key(s.key)
        else:
            validate_device(s.device)
            if s.kind not in (KnobKind.MTU, KnobKind.NETEM):
                validate_name("key", s.key)
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
        one round trip gives both what to set back and the verification."""
        self.check_setting(s)
        return as_function(f"{{ {self.read_body(s)}\n}} || return $?; echo {SWAP_MARK}; "
                           + self.write_body(s, value))

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


class Linux(Dialect):
    """Linux: /proc/sys with shell builtins (no fork under bash), ethtool, iproute2."""

    name = "linux"
    # /proc/stat's cpu lines (they come first) with shell builtins only: no fork, and the
    # long intr/softirq lines after them are never read
    cpu_times_command = ('while read -r l; do case $l in cpu*) echo "$l";; *) break;; esac; '
                         'done < /proc/stat')

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

    def __init__(self, fast_sysctl: bool = True) -> None:
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
    def _read_file(path_var: str = '"$f"') -> str:
        # bash's read builtin reads procfs whole (seekable file); dash reads a byte at a time,
        # which integer sysctls answer with EOF after one byte: dash falls back to cat.
        return (f'if [ -n "${{BASH_VERSION:-}}" ]; then IFS= read -r v < {path_var} || '
                f'[ -n "$v" ]; else v=$(cat {path_var}); fi && printf \'%s\\n\' "$v"')

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
            return (f"f={quote(self.proc_path(s.key))}; [ -e \"$f\" ] || "
                    f"{{ echo {quote('unknown key ' + s.key)} >&2; return {EXIT_UNKNOWN}; }}; "
                    + self._read_file())
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
            return (f"f={quote(self.proc_path(s.key))}; [ -e \"$f\" ] || "
                    f"{{ echo {quote('unknown key ' + s.key)} >&2; return {EXIT_UNKNOWN}; }}; "
                    f"[ -w \"$f\" ] || {{ echo {quote(s.key + ' is read only')} >&2; "
                    f"return {EXIT_READ_ONLY}; }}; printf '%s\\n' {v} > \"$f\" || "
                    f"{self._refused(s.key)}; " + self._read_file())
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


class FreeBSD(Dialect):
    """FreeBSD: sysctl(8) (`k=v` answers `k: old -> new`), ifconfig(8) capabilities."""

    name = "freebsd"
    cpu_times_command = "sysctl -n kern.cp_times"

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


# ---- parsers ----------------------------------------------------------------------------
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


DIALECTS: dict[str, type[Dialect]] = {"Linux": Linux, "FreeBSD": FreeBSD}


def dialect_for(uname_s: str) -> Dialect:
    """The dialect for `uname -s`; raises BadInput for an OS abtui does not speak."""
    cls = DIALECTS.get(uname_s.strip())
    if cls is None:
        raise BadInput(f"unsupported OS {uname_s.strip()!r}: abtui speaks Linux and FreeBSD")
    return cls()
