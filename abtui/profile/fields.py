"""Checks for single profile values: each returns the model's value or raises Invalid.

Profiles are untrusted text that ends up in commands on other people's hosts (always quoted,
but still): every value is checked against what it may be, not against what it must not be.
"""

from __future__ import annotations

import ipaddress
import json
import math
import re
import unicodedata
from collections.abc import Callable
from pathlib import Path
from typing import Any

from abtui.core.destination import parse_destination
from abtui.core.errors import Invalid
from abtui.core.model import TunnelType

Conv = Callable[[Any], Any]

SYSCTL_RE = re.compile(r"[A-Za-z0-9_.%/-]+")
SYSCTL_GLOB_RE = re.compile(r"[A-Za-z0-9_.%/*-]+")
NAME_RE = re.compile(r"[A-Za-z][A-Za-z0-9_.-]{0,39}")
LABEL_RE = re.compile(r"[A-Za-z0-9][A-Za-z0-9_.+-]{0,31}")
DEVICE_RE = re.compile(r"[A-Za-z0-9_][A-Za-z0-9_.:-]{0,14}")
ETHTOOL_KEY_RE = re.compile(r"[A-Za-z0-9][A-Za-z0-9_-]{0,63}")
HOSTNAME_RE = re.compile(r"[A-Za-z0-9_]([A-Za-z0-9_-]{0,62})(\.[A-Za-z0-9_-]{1,63})*\.?")
BITRATE_RE = re.compile(r"[0-9]+(\.[0-9]+)?[KMGTkmgt]?(/[0-9]+)?")
CONGESTION_RE = re.compile(r"[A-Za-z0-9_-]{1,16}")
PROGRAM_RE = re.compile(r"/?[A-Za-z0-9_.+-]+(/[A-Za-z0-9_.+-]+)*")
# a build's values (abtui.profile.builds): a module, a file or folder on the host, a kernel's
# name under /boot, a `uname -r`, a module parameter and its value
MODULE_RE = re.compile(r"[A-Za-z0-9_-]{1,64}")
HOST_PATH_RE = re.compile(r"/[A-Za-z0-9_.+,:@~/-]{1,250}")
KLD_FILE_RE = re.compile(r"/[A-Za-z0-9_.+,:@~/-]{1,250}|[A-Za-z0-9_.-]{1,64}")
BOOT_NAME_RE = re.compile(r"[A-Za-z0-9_.+-]{1,64}")
RELEASE_RE = re.compile(r"[A-Za-z0-9._+~-]{1,64}")
PARAM_RE = re.compile(r"[A-Za-z0-9_]{1,64}")
PARAM_VALUE_RE = re.compile(r"[A-Za-z0-9_.,:/+-]{1,200}")


def show(value: Any, limit: int = 40) -> str:
    """A value as it may appear in a one-line message: JSON-quoted, ASCII, shortened."""
    text = json.dumps(value, ensure_ascii=True, default=str)
    return text if len(text) <= limit else text[: limit - 3] + "..."


_TYPE_NAMES = ((bool, "a boolean"), (int, "an integer"), (float, "a float"),
               (str, "a string"), (list, "an array"), (dict, "a table"))


def type_name(value: Any) -> str:
    """What a TOML value is, in words (bool first: it is an int in Python)."""
    for kind, name in _TYPE_NAMES:
        if isinstance(value, kind):
            return name
    return f"a {type(value).__name__}"


def _wrong(value: Any, expected: str) -> Invalid:
    return Invalid(f"got {type_name(value)} {show(value)}; expected {expected}")


def has_control(text: str) -> bool:
    """Control, format (bidi overrides) or line/paragraph separator characters."""
    return any(unicodedata.category(c) in ("Cc", "Cf", "Zl", "Zp") for c in text)


def text(value: Any, max_len: int = 200) -> str:
    """A one-line string with no control characters."""
    if not isinstance(value, str):
        raise _wrong(value, "a string")
    if has_control(value):
        raise Invalid(f"{show(value)} holds a control character; expected one line of text")
    if len(value) > max_len:
        raise Invalid(f"{len(value)} characters; expected at most {max_len}")
    return value


def matching(regex: re.Pattern[str], expected: str, max_len: int = 200) -> Conv:
    def conv(value: Any) -> str:
        value = text(value, max_len)
        if not regex.fullmatch(value):
            raise Invalid(f"{show(value)} is not allowed; expected {expected}")
        return value
    return conv


def not_option(conv: Conv) -> Conv:
    """`conv`, refusing a value that begins with `-`: it becomes a command's own argument
    (`grub-reboot ENTRY`, `insmod FILE`, `sysctl -n KEY`), where it would be read as an
    option."""
    def checked(value: Any) -> Any:
        out = conv(value)
        if isinstance(out, str) and out.startswith("-"):
            raise Invalid(option_problem(out))
        return out
    return checked


def option_problem(value: str) -> str:
    """The one line a value that would be read as an option is refused with."""
    return (f"{show(value)} begins with '-': the host's command would read it as an option; "
            "expected a name or a path")


def one_of(choices: tuple[str, ...]) -> Conv:
    def conv(value: Any) -> str:
        value = text(value)
        if value not in choices:
            raise Invalid(f"{show(value)} is not allowed; expected one of {', '.join(choices)}")
        return value
    return conv


def lab_clock(value: Any) -> str:
    """[lab] clock: `host` or `icount[=SHIFT]` (abtui.core.clock), kept as written."""
    from abtui.core.clock import parse_clock
    from abtui.core.errors import BadInput

    value = text(value)
    try:
        parse_clock(value)
    except BadInput as exc:
        raise Invalid(str(exc).removeprefix("--clock ")) from None
    return value


def boolean(value: Any) -> bool:
    if not isinstance(value, bool):
        raise _wrong(value, "true or false")
    return value


def integer(lo: int, hi: int) -> Conv:
    def conv(value: Any) -> int:
        if isinstance(value, bool) or not isinstance(value, int):
            raise _wrong(value, f"an integer from {lo} to {hi}")
        if not lo <= value <= hi:
            raise Invalid(f"{value} is out of range; expected an integer from {lo} to {hi}")
        return value
    return conv


def number(lo: float, hi: float) -> Conv:
    def conv(value: Any) -> float:
        if isinstance(value, bool) or not isinstance(value, int | float):
            raise _wrong(value, f"a number from {lo:g} to {hi:g}")
        if not (math.isfinite(value) and lo <= value <= hi):
            raise Invalid(f"{value} is out of range; expected a number from {lo:g} to {hi:g}")
        return float(value)
    return conv


PERCENT_RE = re.compile(r"\s*([0-9]+(?:\.[0-9]+)?)\s*%\s*")


def percent(lo: float, hi: float, *, lo_ok: bool = False) -> Conv:
    """A percentage, written `"1%"` or as a plain number of percent (`1`, `0.5`), above `lo`
    (from `lo` with `lo_ok`) up to `hi`."""
    expected = f"a percentage {'from' if lo_ok else 'above'} {lo:g}% up to {hi:g}%, " \
               'e.g. "1%"'

    def conv(value: Any) -> float:
        if isinstance(value, str):
            m = PERCENT_RE.fullmatch(value)
            if m is None:
                raise Invalid(f"{show(value)} is not a percentage; expected {expected}")
            value = float(m.group(1))
        if isinstance(value, bool) or not isinstance(value, int | float):
            raise _wrong(value, expected)
        above = lo <= value if lo_ok else lo < value
        if not (math.isfinite(value) and above and value <= hi):
            raise Invalid(f"{value:g}% is out of range; expected {expected}")
        return float(value)
    return conv


def str_list(item: Conv, *, unique: bool = True, non_empty: bool = False) -> Conv:
    def conv(value: Any) -> tuple[Any, ...]:
        if not isinstance(value, list):
            raise _wrong(value, "an array")
        if non_empty and not value:
            raise Invalid("an empty array; expected at least one entry")
        out = []
        for i, v in enumerate(value):
            try:
                out.append(item(v))
            except Invalid as exc:
                raise Invalid(f"entry {i}: {exc}") from None
        if unique and len(set(out)) != len(out):
            dup = next(v for v in out if out.count(v) > 1)
            raise Invalid(f"{show(dup)} is listed twice; expected each entry once")
        return tuple(out)
    return conv


def knob_value(value: Any) -> str:
    """A knob value: a string or a number, kept as the string written to the host."""
    if isinstance(value, bool) or not isinstance(value, str | int | float):
        raise _wrong(value, "a string or a number")
    if isinstance(value, float) and not math.isfinite(value):
        raise Invalid(f"{value} is not a finite number; expected a string or a number")
    out = value if isinstance(value, str) else str(value)
    if not out.strip():
        raise Invalid("an empty value; expected a string or a number")
    return text(out, 1024)


def host(value: Any) -> str:
    """An SSH destination: an ssh_config alias or user@host[:port]; never an ssh option. The
    links take it apart by the same rule (abtui.core.destination)."""
    value = text(value, 255)
    try:
        parse_destination(value)
    except ValueError as exc:
        raise Invalid(str(exc)) from None
    return value


def address(value: Any) -> str:
    """An IP address or a DNS name."""
    value = text(value, 255)
    try:
        return str(ipaddress.ip_address(value))
    except ValueError:
        pass
    if not HOSTNAME_RE.fullmatch(value):
        raise Invalid(f"{show(value)} is not allowed; expected an IP address or a host name")
    return value


def ip(value: Any) -> str:
    value = text(value, 64)
    try:
        return str(ipaddress.ip_address(value))
    except ValueError:
        raise Invalid(f"{show(value)} is not an IP address; expected one") from None


def tunnel_type(value: Any) -> str:
    return one_of(tuple(t.value for t in TunnelType))(value)


def path_in(base: Path | None) -> Conv:
    """A file path; `~` expanded, relative paths taken from the profile's own folder."""
    def conv(value: Any) -> str:
        value = text(value, 4096)
        if not value:
            raise Invalid("an empty path; expected a file path")
        try:
            p = Path(value).expanduser()
        except RuntimeError:  # `~name` of a user this machine does not have
            raise Invalid(f"{show(value)} names an unknown user's home; expected a file "
                          "path") from None
        if not p.is_absolute() and base is not None:
            p = base / p
        return str(p)
    return conv


# iperf3 options abtui itself sets or that would change what a run is; not for extra_args.
_OWN_OPTIONS = ("-c", "--client", "-s", "--server", "-J", "--json", "--json-stream",
                "--logfile", "-D", "--daemon", "-1", "--one-off", "-I", "--pidfile",
                "-F", "--file", "--forceflush", "-p", "--port", "--timestamps")


def extra_arg(value: Any) -> str:
    value = text(value, 200)
    if not value:
        raise Invalid("an empty argument; expected an iperf3 option such as \"-w\"")
    if value.split("=", 1)[0] in _OWN_OPTIONS:
        raise Invalid(f"{show(value)} is set by abtui; expected another iperf3 option")
    return value
