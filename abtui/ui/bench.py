"""What the console's benches measure (tests/bench/bench_ui.py, bench_demo.py), kept out of the
app: when the first frame was shown, when the first interval was (the first live number), and
each interval's time from its line's arrival to the refresh that showed it; written as JSON
lines to $ABTUI_BENCH_FILE (nothing is kept without one)."""

from __future__ import annotations

import json
import os
import time


class BenchProbe:
    """Timings for benches; every method is a no-op without a bench file."""

    def __init__(self, path: str | None = None) -> None:
        self.path = path or os.environ.get("ABTUI_BENCH_FILE")
        self.latencies: list[tuple[float, float]] = []  # (shown at, seconds since arrival)
        self.shown_intervals = 0
        self.first_interval_at: float | None = None

    def first_frame(self) -> None:
        # the process's CPU time too: a figure the machine's load does not stretch
        self._write({"first_frame": time.time(), "cpu_s": time.process_time()})

    def shown(self, stamps: list[float]) -> None:
        """Intervals that arrived at `stamps` (perf_counter) are on screen now."""
        now = time.perf_counter()
        self.shown_intervals += len(stamps)
        if self.path:
            wall = time.time()  # when shown, for benches that skip a warm-up
            self.latencies.extend((wall, now - s) for s in stamps)
            if self.first_interval_at is None:
                self.first_interval_at = wall
                self._write({"first_interval": wall,  # the first live number on screen
                             "cpu_s": time.process_time()})

    def leaving(self, received: int) -> None:
        self._write({"received": received, "shown": self.shown_intervals,
                     "first_interval_at": self.first_interval_at, "exit_at": time.time(),
                     "latencies": self.latencies})

    def _write(self, record: dict[str, object]) -> None:
        if self.path:
            with open(self.path, "a") as f:
                f.write(json.dumps(record) + "\n")
