"""The CPU time processes used, to the nanosecond where the kernel keeps it.

/proc/PID/stat counts utime and stime in clock ticks (10 ms at 100 Hz): the hand panes' 0.3 %
of a core over a 20 s window is 6 ticks, so one tick moved their figure, and the console's
ratio to it, by 15 %. Each thread's /proc/PID/task/TID/schedstat counts its time on a CPU in
nanoseconds. It covers the threads alive when read; the ticks also keep those that ended, so
when the ticks say more (by over two) the ticks are taken.
"""

from __future__ import annotations

import os
from collections.abc import Iterable
from pathlib import Path
from typing import NamedTuple

TICK = os.sysconf("SC_CLK_TCK")


class CpuReading(NamedTuple):
    """The processes' CPU seconds, read both ways at one moment."""

    precise: float  # their live threads' schedstat (ns), or the ticks where it is missing
    ticks: float  # utime + stime of /proc/PID/stat, whole clock ticks


def _ticks(pid: int) -> int:
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return int(fields[11]) + int(fields[12])  # utime, stime


def _precise(pid: int, ticks: int) -> float:
    try:
        return sum(int((task / "schedstat").read_text().split()[0])
                   for task in Path(f"/proc/{pid}/task").iterdir()) / 1e9
    except (OSError, ValueError, IndexError):
        return ticks / TICK


def read_cpu(pids: Iterable[int]) -> CpuReading:
    """The CPU time of `pids` so far (a process gone counts 0)."""
    precise = ticks = 0.0
    for pid in pids:
        try:
            t = _ticks(pid)
            precise += _precise(pid, t)
        except (OSError, ValueError, IndexError):
            continue
        ticks += t / TICK
    return CpuReading(precise, ticks)


def cpu_used(before: CpuReading, after: CpuReading) -> float:
    """CPU seconds between two readings: the precise figure, unless the ticks say more by over
    two ticks (a thread that ended took its schedstat with it)."""
    precise, ticks = after.precise - before.precise, after.ticks - before.ticks
    return ticks if ticks - precise > 2 / TICK else precise
