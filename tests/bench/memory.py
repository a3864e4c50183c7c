"""A measuring child's own peak memory.

`getrusage(RUSAGE_SELF).ru_maxrss` is kept across fork and exec on Linux: a child started from
a bench process that had grown (the sequential simulations reach 1.1 GB) reported the
parent's peak as its own (session_24h_rss_mb read 1129.6 MB in a full run, 58 MB alone).
`VmHWM` belongs to the address space exec made, so it is the child's own."""

from __future__ import annotations


def peak_rss_kb() -> int:
    """This process's peak resident set since its exec, in KiB."""
    with open("/proc/self/status") as status:
        for line in status:
            if line.startswith("VmHWM:"):
                return int(line.split()[1])
    raise RuntimeError("/proc/self/status has no VmHWM line")
