"""The profiling loop a run keeps on a host: `perf record` of every CPU with call graphs at a
low rate into a file on the host while the run's traffic flows, then, once the run is over (the
controller closes the loop's stdin), `perf script` of that file folded on the host into stacks,
one window a second, so the controller receives a few kilobytes a second of traffic instead of
every sample.

Nothing but perf record runs beside the traffic: reading and folding the samples while they
came (`perf record | perf script | awk`, as the loop did at first) cost a profiled 2-CPU host
about 1.5 % of its CPU, and a one-CPU guest under emulation two thirds of its samples
(docs/performance-runs.md, 2026-12-07). perf record starts with its events disabled and is
enabled through its control fifo: its acknowledgement (`@R`) says its start-up (reading every
running process and the kernel's symbols) is over, and a run releases its traffic after it.
The recording lives in `$TMPDIR` (else /tmp) and stops at MAX_RECORD (a long run on a host
with many CPUs loses its last windows rather than fill the disk); it is removed in any case.

After `@R` the loop waits for the end of its stdin, stops perf record (`stop` on the fifo),
then prints `@F T` (the first sample's time: the controller dates the windows by it and the
arrival of `@R`), then each window as `@W START END SAMPLES`, `COUNT STACK` lines (a stack is
the thread's name then the frames from the root to the leaf, joined by `;`, as FlameGraph's
folded format), `@E`; START and END are the host's wall clock (perf's samples are stamped with
CLOCK_REALTIME). The first line says the sampling event (`cycles` where the host has a hardware
PMU, `cpu-clock` where it has none: VM guests under emulation) or why there is no profile
(`perf` missing, not permitted, no fifo). Thread names have their digits folded (`kworker/N:N`)
so that one worker pool is one name whatever the worker.
"""

from __future__ import annotations

import shlex
from dataclasses import dataclass, field

PROFILE_MARK = "@ABTUI-PROFILE"
WINDOW_MARK = "@W"
READY_MARK = "@R"  # perf record acknowledged its enabling: its start-up (its reading of the
# running processes and of the kernel's symbols) is over
FIRST_MARK = "@F"  # the first sample's time on the host's clock, before the windows
END_MARK = "@E"
DEFAULT_HZ = 99  # rustc-perf's rate: low enough to cost ≤ 2 % of throughput
MAX_HZ = 999
MAX_DEPTH = 64  # leaf-most frames kept per stack
# The recording's size on the host at most (perf record stops there; later windows are not
# given): 99 Hz with call graphs writes about 30 KB a second per CPU, so 256 MB holds an hour
# and more of a 2-CPU host, minutes of a 64-CPU one, and never fills its /tmp
MAX_RECORD = "256M"

# Folds perf script's `-F time,comm,ip,sym` output (a header line `COMM TIME:`, the frames
# indented leaf first, a blank line) into one window of stack counts per W seconds.
_FOLD = r"""
function flush() {
  if (n > 0) {
    printf "@W %.6f %.6f %d\n", ws, ws + W, n
    for (k in c) printf "%d %s\n", c[k], k
    print "@E"
    fflush()
  }
  split("", c); n = 0
}
function done_sample(  w) {
  if (!ins) return
  ins = 0
  w = int(t / W) * W
  if (n > 0 && w != ws) flush()
  if (n == 0) ws = w
  c[comm (st == "" ? "" : ";" st)]++
  n++
}
/^[^ \t]/ {
  done_sample()
  t = $NF; sub(/:$/, "", t); t += 0
  if (!first) { printf "@F %.6f\n", t; first = 1 }
  comm = $0; sub(/[ \t]+[0-9.]+:[ \t]*$/, "", comm)
  gsub(/[0-9]+/, "N", comm); gsub(/[; \t]/, "_", comm)
  st = ""; depth = 0; ins = 1; next
}
/^[ \t]+[0-9a-fA-F]+[ \t]/ {
  if (!ins || depth >= D) next
  f = $0; sub(/^[ \t]*[0-9a-fA-F]+[ \t]+/, "", f); sub(/\+0x[0-9a-fA-F]+$/, "", f)
  if (f == "[unknown]" || f == "") next
  gsub(/;/, ":", f); gsub(/[ \t]/, "_", f)
  st = (st == "" ? f : f ";" st); depth++
  next
}
/^[ \t]*$/ { done_sample() }
END { done_sample(); flush() }
"""


def profile_loop_command(hz: int = DEFAULT_HZ, window: float = 1.0) -> str:
    """The host's profiling loop (Linux `perf`, see the module docstring): it records until
    its stdin ends, then folds; ending its process group at any time ends it, its file gone."""
    if not 1 <= hz <= MAX_HZ:
        raise ValueError(f"profile rate {hz} Hz: expected 1..{MAX_HZ}")
    fold = shlex.quote(_FOLD)
    none = f"echo '{PROFILE_MARK} none"
    return (
        "command -v perf >/dev/null 2>&1 || "
        f"{{ {none} perf is not installed (Debian: linux-perf)'; exit 0; }}; "
        "ev=cpu-clock; "
        "LC_ALL=C perf stat -e cycles -a -x, -- true 2>&1 | grep -q '^[0-9]' && ev=cycles; "
        f"echo \"{PROFILE_MARK} event $ev\"; "
        "d=$(mktemp -d \"${TMPDIR:-/tmp}/abtui-profile.XXXXXX\") && mkfifo \"$d/c\" \"$d/a\" || "
        f"{{ {none} no fifo in /tmp'; exit 0; }}; "
        "trap 'rm -rf \"$d\"; exit 0' INT TERM HUP; "
        # both fifos held open both ways: no open blocks, whoever is late
        "exec 3<>\"$d/c\" 4<>\"$d/a\"; "
        f"{{ LC_ALL=C perf record -a -g -F {int(hz)} -e \"$ev\" -k CLOCK_REALTIME -q -D -1 "
        f"--max-size={MAX_RECORD} --control \"fifo:$d/c,$d/a\" -o \"$d/p\" "
        "</dev/null >/dev/null 2>&1; "
        "echo ended >&4; } & "
        "echo enable >&3; read -r ok <&4; "
        "if [ \"$ok\" != ack ]; then rm -rf \"$d\"; "
        f"{none} perf record ended (not permitted here?)'; exit 0; fi; "
        f"echo {READY_MARK}; "
        "cat >/dev/null; "  # the run is over when the controller closes stdin
        "echo stop >&3; while read -r ok <&4 && [ \"$ok\" != ended ]; do :; done; "
        "LC_ALL=C perf script -i \"$d/p\" -F time,comm,ip,sym 2>/dev/null | "
        f"awk -v W={window:g} -v D={MAX_DEPTH} {fold}; "
        "rm -rf \"$d\""
    )


@dataclass(slots=True)
class FoldedWindow:
    """One window the host folded: its span on the host's clock and its stacks' counts."""

    start: float
    end: float
    samples: int
    stacks: dict[str, int] = field(default_factory=dict)


@dataclass(slots=True)
class ProfileStream:
    """The loop's output, line by line: windows once whole, the event it samples, or why it
    gives none. Never raises on garbage: a line it cannot read is skipped."""

    event: str | None = None
    refused: str | None = None
    ready: bool = False  # perf record is enabled: through its start-up
    first: float | None = None  # the first sample's time (host clock)
    _open: FoldedWindow | None = None

    def feed(self, line: str) -> FoldedWindow | None:
        if line.startswith(PROFILE_MARK):
            _, _, rest = line.partition(" ")
            word, _, why = rest.partition(" ")
            if word == "event" and why.strip():
                self.event = why.strip()
            elif word == "none":
                self.refused = why.strip() or "no profile"
            return None
        if line == READY_MARK:
            self.ready = True
            return None
        if line.startswith(FIRST_MARK + " "):
            try:
                self.first = float(line.split()[1])
            except (IndexError, ValueError):
                self.first = None
            return None
        if line.startswith(WINDOW_MARK + " "):
            parts = line.split()
            try:
                self._open = FoldedWindow(float(parts[1]), float(parts[2]), int(parts[3]))
            except (IndexError, ValueError):
                self._open = None
            return None
        if line == END_MARK:
            done, self._open = self._open, None
            return done
        if self._open is not None:
            count, _, stack = line.partition(" ")
            if count.isdigit() and stack:
                self._open.stacks[stack] = self._open.stacks.get(stack, 0) + int(count)
        return None
