"""The checks every key and value passes before it reaches a command (a driver's, abtui.remote.os,
or a reading's: abtui.remote.facts, host_state, traffic): one clear BadInput naming what is not
valid, never a shell word left unchecked."""

from __future__ import annotations

import re

from abtui.core.errors import BadInput

SYSCTL_KEY = re.compile(r"[A-Za-z0-9_.%/-]+")
DEVICE = re.compile(r"[A-Za-z0-9_][A-Za-z0-9_.:@-]{0,14}")
NAME = re.compile(r"[A-Za-z0-9_][A-Za-z0-9_-]*")
MAX_VALUE = 1024


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
