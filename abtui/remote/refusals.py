"""Why a host refused a write: told from the exit status the dialects' scripts use, or from
what the tool (printf into /proc/sys, sysctl, ethtool, ifconfig) said, as one short line
(`<why>: <detail>`) the knob manager reports. Apart from the dialects, which only build the
commands, because the reasons are the same whichever OS refused.
"""

from __future__ import annotations

import re

# Exit statuses our own scripts use to say why a write was refused.
EXIT_UNKNOWN, EXIT_READ_ONLY, EXIT_WRITE = 3, 4, 5

UNKNOWN_KEY = "unknown key"
READ_ONLY = "read-only"
PERMISSION = "permission denied"
INVALID_VALUE = "invalid value"
UNSUPPORTED = "not supported by the device"
NO_DEVICE = "no such device"


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
    """`<why>: <the tool's last line>`, one line (the line alone when it already starts with
    `<why>`: `unknown key net.ipv4.x`, never `unknown key: unknown key net.ipv4.x`); for a
    value the kernel refused, `<why>: the kernel refused it (<its reason>)` and what the host
    allows, where it says."""
    why = classify_error(stderr, status)
    refused = write_refusal(stderr)
    if refused is not None:
        errno, hint = refused
        return f"{why}: the kernel refused it ({errno}){'; ' + hint if hint else ''}"
    last = next((ln.strip() for ln in reversed(stderr.splitlines()) if ln.strip()), "")
    if last.lower().startswith(why):  # our script's own words (`unknown key net.ipv4.x`)
        return last
    return f"{why}: {last}" if last else f"{why} (exit {status})"
