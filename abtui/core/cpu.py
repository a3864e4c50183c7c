"""Host CPU time as abtui records it: ticks per state, per CPU and in total.

A CPU event (measure/run/sampling.py) carries the ticks each state gained since the host's previous
sample, in FIELDS order: Linux /proc/stat's user+nice, system, irq, softirq, idle+iowait,
steal; FreeBSD kern.cp_times's user+nice, sys, intr, 0, idle, 0. Shares are ratios of ticks, so
the tick rate (USER_HZ, stathz) never matters. Plain Python: the console, the session and the
reports all read samples through these few functions.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from abtui.core.events import Cpu

FIELDS = ("user", "system", "irq", "softirq", "idle", "steal")
BUSY = ("user", "system", "irq", "softirq")
_BUSY_IX = tuple(FIELDS.index(f) for f in BUSY)
SOFTIRQ = FIELDS.index("softirq")


def ticks(value: Any) -> list[float] | None:
    """One FIELDS row as recorded, or None when it is not one (a foreign record)."""
    if not isinstance(value, list | tuple) or len(value) != len(FIELDS):
        return None
    if not all(isinstance(x, int | float) and not isinstance(x, bool) and x >= 0
               for x in value):
        return None
    return [float(x) for x in value]


def busy_share(row: Sequence[float]) -> float | None:
    """The busy part (user, system, irq, softirq) of a row's ticks; None when it has none."""
    total = sum(row)
    return sum(row[i] for i in _BUSY_IX) / total if total > 0 else None


def softirq_share(row: Sequence[float]) -> float | None:
    total = sum(row)
    return row[SOFTIRQ] / total if total > 0 else None


def busy_cores(total: Sequence[float], cpus: int) -> float | None:
    """How many CPUs' worth of time was busy: the busy share of all ticks × the CPU count."""
    share = busy_share(total)
    return None if share is None or cpus < 1 else share * cpus


def sample_figures(sample: Cpu) -> tuple[float, float] | None:
    """A CPU event's (busy % of one core, softirq % of all CPU time): 100 = one core busy, as
    top and iperf3 count; None for a record that has no ticks."""
    total = ticks(sample.total)
    cpus: object = sample.cpus
    n = len(cpus) if isinstance(cpus, list) and cpus else 1
    if total is None:
        return None
    cores, soft = busy_cores(total, n), softirq_share(total)
    return None if cores is None or soft is None else (cores * 100, soft * 100)


# What a host's CPU figures are, from its facts' `cpu_scope` (remote/facts.py): "shared" when
# the host is a network namespace of a machine whose other processes it shares the kernel with
# (the lab's namespace hosts): its /proc/stat is the whole machine's.
SHARED = "shared"
SHARED_NOTE = ("the whole machine's CPU (a network-namespace host shares this kernel and its "
               "CPUs with the machine's other hosts)")


def shared(facts: dict[str, Any] | None) -> bool:
    return bool(facts) and (facts or {}).get("cpu_scope") == SHARED
