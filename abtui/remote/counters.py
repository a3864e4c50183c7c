"""The counters loop a profiled run keeps on a Linux host beside its profile: once a second,
the host's clock (its wall clock to the nanosecond or, where `date` has no `%N` as busybox's,
the seconds since boot from /proc/uptime), then what explains a profile's change as rates:
each CPU's packets processed, dropped and squeezed (`/proc/net/softnet_stat`), NET_RX and
NET_TX softirqs per CPU (`/proc/softirqs`), the nonzero IP, TCP and UDP counters (`nstat
-as`: absolute, the history left alone) and the CPU ticks of the kernel's worker threads by
pool (kworker, ksoftirqd, cryptd, napi: one each, whatever its workers are doing). The
controller turns two samples into rates (abtui.measure.why_book).

Each sample is `@C CLOCK`, its lines, then `@E`; a line it cannot read is skipped.
"""

from __future__ import annotations

from dataclasses import dataclass, field

SAMPLE_MARK = "@C"
END_MARK = "@E"

_KTHREADS = r"""/^[0-9]+ \((kworker|ksoftirqd|cryptd|napi)/ {
  n = $2; gsub(/[()]/, "", n); sub(/\/.*/, "", n); t[n] += $14 + $15 }
END { for (k in t) print "kthread", k, t[k] }"""


def counters_loop_command(period: float = 1.0) -> str:
    """The loop; it runs until its process group is ended."""
    import shlex

    return (
        "while :; do "
        # busybox's date has no %N (it prints it as is): then the seconds since boot, to the
        # hundredth (a clock of its own: the controller dates samples by their arrival)
        "t=$(date +%s.%N 2>/dev/null); "
        "case $t in *[!0-9.]*|'') read -r t _ </proc/uptime;; esac; "
        f"echo \"{SAMPLE_MARK} $t\"; "
        "awk '{print \"softnet\", NR-1, $1, $2, $3}' /proc/net/softnet_stat 2>/dev/null; "
        "grep -E '^ *NET_(RX|TX):' /proc/softirqs 2>/dev/null; "
        "LC_ALL=C nstat -as 2>/dev/null | "
        "awk '$1 ~ /^(Ip|Tcp|TcpExt|Udp)[A-Z]/ {print \"nstat\", $1, $2}'; "
        # cat, not awk's own file list: mawk stops at a process that ended since the glob
        f"cat /proc/[0-9]*/stat 2>/dev/null | awk {shlex.quote(_KTHREADS)}; "
        f"echo {END_MARK}; sleep {period:g} || break; done"
    )


@dataclass(slots=True)
class CounterStream:
    """The loop's output, line by line: (host clock, counter -> value) once a sample is
    whole. Counters: `softnet.processed` (and `.cpuN`), `softnet.dropped`,
    `softnet.time_squeeze`, `softirq.NET_RX` (and `.cpuN`), `softirq.NET_TX`,
    `nstat.NAME`, `kthread.NAME` (CPU ticks)."""

    _clock: float | None = None
    _values: dict[str, int] = field(default_factory=dict)

    def feed(self, line: str) -> tuple[float, dict[str, int]] | None:
        if line.startswith(SAMPLE_MARK + " "):
            try:
                self._clock = float(line.split()[1])
            except (IndexError, ValueError):
                self._clock = None
            self._values = {}
            return None
        if line == END_MARK:
            done = (self._clock, self._values) if self._clock is not None else None
            self._clock, self._values = None, {}
            return done
        if self._clock is not None:
            self._take(line.split())
        return None

    def _add(self, name: str, value: int) -> None:
        self._values[name] = self._values.get(name, 0) + value

    def _take(self, parts: list[str]) -> None:
        try:
            if parts[0] == "softnet" and len(parts) == 5:
                cpu = int(parts[1])
                for what, text in zip(("processed", "dropped", "time_squeeze"), parts[2:],
                                      strict=True):
                    value = int(text, 16)
                    self._add(f"softnet.{what}", value)
                    if what == "processed":
                        self._add(f"softnet.processed.cpu{cpu}", value)
            elif parts[0] in ("NET_RX:", "NET_TX:"):
                name = parts[0].rstrip(":")
                for cpu, text in enumerate(parts[1:]):
                    self._add(f"softirq.{name}", int(text))
                    self._add(f"softirq.{name}.cpu{cpu}", int(text))
            elif parts[0] == "nstat" and len(parts) == 3:
                self._add(f"nstat.{parts[1]}", int(parts[2]))
            elif parts[0] == "kthread" and len(parts) == 3:
                self._add(f"kthread.{parts[1]}", int(parts[2]))
        except (ValueError, IndexError):
            return
