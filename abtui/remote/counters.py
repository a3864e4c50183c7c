"""The counters loop a profiled run keeps on a Linux host beside its profile: once a second,
the host's clock (its wall clock to the nanosecond or, where `date` has no `%N` as busybox's,
the seconds since boot from /proc/uptime), then what explains a profile's change as rates:
each CPU's packets processed, dropped and squeezed (`/proc/net/softnet_stat`), NET_RX and
NET_TX softirqs per CPU (`/proc/softirqs`), the nonzero IP, TCP and UDP counters (as `nstat
-as` prints them: absolute, read from /proc/net/snmp and netstat) and the CPU ticks of the
kernel's worker threads by pool (kworker, ksoftirqd, cryptd, napi: one each, whatever its
workers are doing). The controller turns two samples into rates (abtui.measure.why_book).

Each sample is `@C CLOCK`, its lines, then `@E`; a line it cannot read is skipped.
"""

from __future__ import annotations

from dataclasses import dataclass, field

SAMPLE_MARK = "@C"
END_MARK = "@E"

# One awk a sample reads every file (the loop forked nine programs a sample, nstat among
# them: 0.02 CPU-s a second, a profiled 2-CPU host's 1 %; now 0.005, docs/performance-runs.md,
# 2026-12-07 18:10). The kernel's worker threads are read from kthreadd's children (pid 2) where
# the kernel lists them, else from every process's stat piped in by cat (mawk stops at a file of
# its own list that ended since the glob; a vanished file read by getline is only skipped).
# The IP, TCP and UDP counters are nstat's: /proc/net/snmp and netstat, name and value lines
# paired, nonzero, less the constants nstat leaves out.
_SAMPLE = r"""
function kt(s,   f, n) {
  if (s !~ /^[0-9]+ \((kworker|ksoftirqd|cryptd|napi)/) return
  split(s, f); n = f[2]; gsub(/[()]/, "", n); sub(/\/.*/, "", n); T[n] += f[14] + f[15]
}
function snmp(file,   l, v, h, c, i, p, nm) {
  while ((getline l < file) > 0) {
    c = split(l, v); p = v[1]
    if (!(p in H)) { H[p] = l; continue }
    split(H[p], h); delete H[p]; sub(/:$/, "", p)
    for (i = 2; i <= c; i++) {
      nm = p h[i]
      if (v[i] != "0" && nm ~ /^(Ip|Tcp|TcpExt|Udp)[A-Z]/ && !(nm in U)) print "nstat", nm, v[i]
    }
  }
  close(file)
}
BEGIN {
  print "@C", t
  f = "/proc/net/softnet_stat"
  while ((getline l < f) > 0) { split(l, v); print "softnet", n++, v[1], v[2], v[3] }
  close(f)
  f = "/proc/softirqs"
  while ((getline l < f) > 0) if (l ~ /^ *NET_(RX|TX):/) print l
  close(f)
  l = "IpForwarding IpDefaultTTL TcpRtoAlgorithm TcpRtoMin TcpRtoMax TcpMaxConn"
  c = split(l " TcpCurrEstab", u)
  for (i = 1; i <= c; i++) U[u[i]] = 1
  snmp("/proc/net/snmp"); snmp("/proc/net/netstat")
  if (k) {
    while ((getline l < "/proc/2/task/2/children") > 0) {
      c = split(l, p)
      for (i = 1; i <= c; i++) {
        f = "/proc/" p[i] "/stat"
        if ((getline s < f) > 0) kt(s)
        close(f)
      }
    }
  }
}
!k { kt($0) }
END { for (x in T) print "kthread", x, T[x]; print "@E" }
"""

KTHREADS = "/proc/2/task/2/children"  # kthreadd's children: every kernel thread


def counters_loop_command(period: float = 1.0) -> str:
    """The loop; it runs until its process group is ended."""
    import shlex

    sample = shlex.quote(_SAMPLE)
    return (
        "while :; do "
        # busybox's date has no %N (it prints it as is): then the seconds since boot, to the
        # hundredth (a clock of its own: the controller dates samples by their arrival)
        "t=$(date +%s.%N 2>/dev/null); "
        "case $t in *[!0-9.]*|'') read -r t _ </proc/uptime;; esac; "
        f"if [ -r {KTHREADS} ]; then awk -v t=\"$t\" -v k=1 {sample} </dev/null; "
        f"else cat /proc/[0-9]*/stat 2>/dev/null | awk -v t=\"$t\" -v k=0 {sample}; fi; "
        f"sleep {period:g} || break; done"
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
