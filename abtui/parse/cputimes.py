"""A host's CPU time counters: Linux /proc/stat's `cpu` lines, FreeBSD's kern.cp_times.

`parse_cpu_times` returns cumulative ticks per CPU in abtui.core.cpu.FIELDS order (and the
total over all CPUs); `since` turns two samples into what each state gained between them.
Never raises: output that is neither gives None.
"""

from __future__ import annotations

from dataclasses import dataclass

from abtui.core.cpu import FIELDS

_N = len(FIELDS)


@dataclass(frozen=True, slots=True)
class CpuTimes:
    """Cumulative ticks: `total` over all CPUs, `cpus` one row per CPU."""

    total: tuple[int, ...]
    cpus: tuple[tuple[int, ...], ...]


def _linux_row(values: list[int]) -> tuple[int, ...]:
    # user nice system idle iowait irq softirq steal [guest guest_nice: already in user]
    v = values + [0] * (8 - len(values))
    return (v[0] + v[1], v[2], v[5], v[6], v[3] + v[4], v[7])


def _freebsd_row(v: list[int]) -> tuple[int, ...]:
    # user nice sys intr idle
    return (v[0] + v[1], v[2], v[3], 0, v[4], 0)


def parse_cpu_times(text: str) -> CpuTimes | None:
    """/proc/stat's `cpu` and `cpuN` lines, or `sysctl -n kern.cp_times` (5 numbers per CPU)."""
    try:
        return _parse(text)
    except (ValueError, IndexError):
        return None


def _parse(text: str) -> CpuTimes | None:
    lines = [x.split() for x in text.splitlines() if x.strip()]
    if lines and lines[0][0].startswith("cpu"):
        total: tuple[int, ...] | None = None
        cpus = []
        for words in lines:
            if not words[0].startswith("cpu") or len(words) < 5:
                continue
            row = _linux_row([int(x) for x in words[1:]])
            if words[0] == "cpu":
                total = row
            else:
                cpus.append(row)
        if total is None:
            return None
        return CpuTimes(total, tuple(cpus))
    numbers = [int(x) for words in lines for x in words]
    if not numbers or len(numbers) % 5:
        return None
    cpus = [_freebsd_row(numbers[i:i + 5]) for i in range(0, len(numbers), 5)]
    return CpuTimes(tuple(sum(c[i] for c in cpus) for i in range(_N)), tuple(cpus))


def since(before: CpuTimes, after: CpuTimes) -> tuple[list[int], list[list[int]]] | None:
    """Ticks each state gained from `before` to `after` (total, per CPU); None when the two do
    not line up (CPUs came or went, counters went back: a reboot)."""
    if len(before.cpus) != len(after.cpus):
        return None
    total = [a - b for a, b in zip(after.total, before.total, strict=True)]
    cpus = [[a - b for a, b in zip(ca, cb, strict=True)]
            for ca, cb in zip(after.cpus, before.cpus, strict=True)]
    if min(total, default=0) < 0 or any(min(c) < 0 for c in cpus):
        return None
    return total, cpus
