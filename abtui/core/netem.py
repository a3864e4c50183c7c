"""netem values: a WAN's delay, loss and rate on a Linux data device (`tc qdisc ... netem`).

A netem knob's value is `none` (the device's default qdisc: no netem) or netem's own words:
`delay TIME [JITTER]`, `loss PERCENT`, `rate RATE`, `limit PACKETS`, e.g. `delay 20ms loss 1%`.
Both what a profile says and what `tc qdisc show` prints are brought to one canonical spelling
(`canonical`, `from_tc`), so a value written is recognised when read back. No I/O here.
"""

from __future__ import annotations

import re

from abtui.core.errors import BadInput

NONE = "none"
DEFAULT_LIMIT = 1000  # netem's own default queue, in packets: not shown
_NUM = r"(\d+(?:\.\d+)?)"
_TIME = re.compile(_NUM + r"(us|usec|ms|msec|s|sec|secs)", re.IGNORECASE)
_RATE = re.compile(_NUM + r"(bit|kbit|mbit|gbit)", re.IGNORECASE)
_PCT = re.compile(_NUM + r"%?")
_TIME_US = {"us": 1, "usec": 1, "ms": 1000, "msec": 1000, "s": 1e6, "sec": 1e6, "secs": 1e6}
_RATE_BIT = {"bit": 1, "kbit": 1e3, "mbit": 1e6, "gbit": 1e9}
WORDS = ("delay", "loss", "rate", "limit")
EXPECTED = ('"none", or netem parameters such as "delay 20ms", "delay 20ms 5ms loss 1%", '
            '"rate 100mbit" (delay TIME [JITTER], loss PERCENT, rate RATE, limit PACKETS)')


def _time(token: str) -> float | None:
    m = _TIME.fullmatch(token)
    return float(m.group(1)) * _TIME_US[m.group(2).lower()] if m else None


def _fmt_time(us: float) -> str:
    return f"{us / 1000:g}ms"


def _fmt_rate(bits: float) -> str:
    for unit, scale in (("gbit", 1e9), ("mbit", 1e6), ("kbit", 1e3)):
        if bits >= scale and round(bits / scale, 6) == round(bits / scale):
            return f"{round(bits / scale)}{unit}"
    return f"{bits:g}bit"


def parse(text: str, *, lenient: bool = False) -> dict[str, float] | None:
    """netem's words -> {"delay", "jitter" (µs), "loss" (%), "rate" (bit/s), "limit"}; None for
    `none`. `lenient` (tc's output) skips words it does not know; a profile's may not."""
    words = text.split()
    if words == [NONE] or (lenient and not words):
        return None
    out: dict[str, float] = {}
    i = 0
    while i < len(words):
        word = words[i].lower()
        arg = words[i + 1] if i + 1 < len(words) else ""
        if word == "delay" and _time(arg) is not None:
            out["delay"] = _time(arg) or 0.0
            i += 2
            if i < len(words) and _time(words[i]) is not None:
                out["jitter"] = _time(words[i]) or 0.0
                i += 1
            continue
        if word == "loss" and _PCT.fullmatch(arg) and float(arg.rstrip("%")) <= 100:
            out["loss"] = float(arg.rstrip("%"))
        elif word == "rate" and _RATE.fullmatch(arg):
            m = _RATE.fullmatch(arg)
            assert m is not None
            out["rate"] = float(m.group(1)) * _RATE_BIT[m.group(2).lower()]
        elif word == "limit" and arg.isdigit() and int(arg) > 0:
            out["limit"] = float(arg)
        elif lenient:
            i += 1
            continue
        else:
            raise BadInput(f"netem value {text!r}: {words[i]!r} is not understood; expected "
                           + EXPECTED)
        i += 2
    if not lenient and not out:
        raise BadInput(f"netem value {text!r}: expected {EXPECTED}")
    return out


def render(params: dict[str, float] | None) -> str:
    """The canonical spelling of parsed parameters."""
    if not params:
        return NONE
    words: list[str] = []
    if "delay" in params:
        words += ["delay", _fmt_time(params["delay"])]
        if params.get("jitter"):
            words.append(_fmt_time(params["jitter"]))
    if params.get("loss"):
        words += ["loss", f"{params['loss']:g}%"]
    if "rate" in params:
        words += ["rate", _fmt_rate(params["rate"])]
    if params.get("limit", DEFAULT_LIMIT) != DEFAULT_LIMIT:
        words += ["limit", str(int(params["limit"]))]
    return " ".join(words) or NONE


def canonical(text: str) -> str:
    """A profile's netem value, checked, in the canonical spelling."""
    return render(parse(text))


def tc_args(text: str) -> list[str]:
    """The words after `tc qdisc replace dev DEV root netem` (empty for `none`)."""
    value = canonical(text)
    return [] if value == NONE else value.split()


def from_tc(out: str) -> str | None:
    """`tc qdisc show dev DEV root` -> the canonical value (`none` when the root qdisc is not
    netem); None when the output is not a qdisc line."""
    for line in out.splitlines():
        words = line.split()
        if len(words) >= 3 and words[0] == "qdisc":
            if words[1] != "netem":
                return NONE
            # "root refcnt 2 limit 1000 delay 20ms": words netem does not take are skipped
            return render(parse(" ".join(words[3:]), lenient=True))
    return None
