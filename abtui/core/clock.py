"""Whose clock a host's figures are on: its own (wall-clock time, the default) or a guest's
instruction-counted time (QEMU's `-icount shift=N`: the guest's clock advances 2^N ns per
executed instruction, whatever the machine's load).

A throughput figure on an instruction-counted clock is bytes per guest instruction, scaled:
steady where wall-clock figures of an emulated guest swing with the host's load (measured on
the lab's 32-bit ARM guest: CV 3.2 % TX and 0.6 % RX at shift 6 against 17-32 % on the host's
clock), and comparable only with figures at the same shift. Sessions carry the clock as a host
fact (`clock`: "" or "icount:N"); reports name it, and figures on different clocks are never
compared."""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping
from typing import Any

from abtui.core.errors import BadInput

HOST = ""  # the host's own clock: wall-clock time
DEFAULT_SHIFT = 6  # two TCG guests talk steadily at 6; at 3 iperf3's control socket timed out
MAX_SHIFT = 10  # qemu's own bound
_ICOUNT_RE = re.compile(r"icount(?:[=:](\d+))?")
# the guest's kernel command line word the lab sets, and the facts script reads back
CMDLINE_WORD = "abtui.clock"


def parse_clock(text: str, where: str = "--clock") -> str:
    """`host` -> "" ; `icount` -> "icount:6" ; `icount=N` (0..10) -> "icount:N"; else one
    line naming `where`."""
    value = text.strip().lower()
    if value in ("", "host", "wall"):
        return HOST
    m = _ICOUNT_RE.fullmatch(value)
    if m is None:
        raise BadInput(f"{where} {text}: give `host` or `icount[=SHIFT]` (SHIFT 0 to "
                       f"{MAX_SHIFT}, default {DEFAULT_SHIFT})")
    shift = int(m.group(1)) if m.group(1) is not None else DEFAULT_SHIFT
    if not 0 <= shift <= MAX_SHIFT:
        raise BadInput(f"{where} {text}: the shift must be 0 to {MAX_SHIFT} (a guest "
                       f"instruction counts 2^SHIFT ns; {DEFAULT_SHIFT} is steady here)")
    return f"icount:{shift}"


def shift_of(clock: str) -> int | None:
    """The icount shift of a clock, None for the host's."""
    m = _ICOUNT_RE.fullmatch(clock)
    return int(m.group(1)) if m and m.group(1) is not None else None


def clock_label(clock: str) -> str:
    """What a report calls the clock: "guest instructions, shift 6" or "wall clock"."""
    shift = shift_of(clock)
    return "wall clock" if shift is None else f"guest instructions, shift {shift}"


def session_clocks(facts: Mapping[str, Mapping[str, Any]],
                   hosts: Iterable[str] | None = None) -> list[str]:
    """The clocks a session's hosts (all, or `hosts`) were on, each once, the host's first."""
    names = list(hosts) if hosts is not None else list(facts)
    clocks = {str((facts.get(h) or {}).get("clock") or HOST) for h in names}
    return sorted(clocks, key=lambda c: (c != HOST, c))


def check_comparable(left: list[str], right: list[str], names: tuple[str, str]) -> None:
    """BadInput when two sessions' figures are on different clocks (an instruction-counted
    figure is not a wall-clock one, nor one at another shift)."""
    if set(left) != set(right):
        raise BadInput(f"{names[0]} is on {_labels(left)}, {names[1]} on {_labels(right)}: "
                       "figures on different clocks do not compare (run both on the same "
                       "clock)")


def _labels(clocks: list[str]) -> str:
    return " and ".join(clock_label(c) for c in clocks)
