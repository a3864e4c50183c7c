"""The profiling loop a run keeps on a host: `perf record` of every CPU with call graphs at a
low rate, streamed through `perf script` and folded on the host into stacks, one window a
second, so the controller receives a few kilobytes a second instead of every sample.

Each window is printed as `@W START END SAMPLES`, then `COUNT STACK` lines (a stack is the
thread's name then the frames from the root to the leaf, joined by `;`, as FlameGraph's folded
format), then `@E`; START and END are the host's wall clock (perf's samples are stamped with
CLOCK_REALTIME). `@R` comes once, with the first sample: perf's start-up is over (a run releases
its traffic after it, so that start-up is not paid out of what is measured). The first line says
the sampling event (`cycles` where the host has a hardware PMU, `cpu-clock` where it has none:
VM guests under emulation) or why there is no profile (`perf` missing). Thread names have their
digits folded (`kworker/N:N`) so that one worker pool is one name whatever the worker.
"""

from __future__ import annotations

import shlex
from dataclasses import dataclass, field

PROFILE_MARK = "@ABTUI-PROFILE"
WINDOW_MARK = "@W"
READY_MARK = "@R"  # the first sample came through: perf's start-up (its reading of the
# running processes and of the kernel's symbols) is over
END_MARK = "@E"
DEFAULT_HZ = 99  # rustc-perf's rate: low enough to cost ≤ 2 % of throughput
MAX_HZ = 999
MAX_DEPTH = 64  # leaf-most frames kept per stack

# Folds perf script's `-F time,comm,sym` output (a header line `COMM TIME:`, the frames
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
  if (!ready) { print "@R"; fflush(); ready = 1 }
  done_sample()
  t = $NF; sub(/:$/, "", t); t += 0
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
    """The host's profiling loop (Linux `perf`); it runs until its process group is ended."""
    if not 1 <= hz <= MAX_HZ:
        raise ValueError(f"profile rate {hz} Hz: expected 1..{MAX_HZ}")
    fold = shlex.quote(_FOLD)
    return (
        "command -v perf >/dev/null 2>&1 || "
        f"{{ echo '{PROFILE_MARK} none perf is not installed (Debian: linux-perf)'; exit 0; }}; "
        "ev=cpu-clock; "
        "LC_ALL=C perf stat -e cycles -a -x, -- true 2>&1 | grep -q '^[0-9]' && ev=cycles; "
        f"echo \"{PROFILE_MARK} event $ev\"; "
        f"LC_ALL=C perf record -a -g -F {int(hz)} -e \"$ev\" -k CLOCK_REALTIME --no-buffering "
        "-q -o - 2>/dev/null | LC_ALL=C perf script -i - -F time,comm,sym 2>/dev/null | "
        f"awk -v W={window:g} -v D={MAX_DEPTH} {fold}; "
        f"echo '{PROFILE_MARK} none perf record ended (not permitted here?)'"
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
    ready: bool = False  # the first sample came: perf is through its start-up
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
