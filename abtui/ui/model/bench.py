"""What the console's benches measure (tests/bench/bench_ui.py, bench_demo.py), kept out of the
app: when the first frame was shown, when the first interval was (the first live number), and
each interval's time from its line's arrival to the frame that drew it; written as JSON lines
to $ABTUI_BENCH_FILE (nothing is kept, and nothing done, without one).

An interval is "shown" by the frame that draws it, not by a refresh asked for at its flush
(Textual runs an after-refresh callback on an idle screen before a pane's own message pump has
asked for its repaint: such a stamp came before the frame, every time in a headless test). Each
interval folded in is numbered per pair (`arrived`); a pane notes the number its chart or its
numbers cover when it takes them from the state (`folded`), and when it draws those rows it
hands that number back (`drawn`); once the frame with those rows has been handed to the
terminal's writer (Textual's `App.post_display_hook`), the intervals it covered are stamped
(`frame_written`). An interval whose pane is not on screen (scrolled away, under another
screen) is never drawn: it is counted as shown but hidden, with no latency (`hidden`).

The collector's full passes are written too (when each began, how long it took): one such
pass, 38-44 ms of CPU over what the console built to go live, was the slow interval that set
`ui_latency_p99_ms` in some runs and not others (docs/performance-runs.md, "The slow interval")."""

from __future__ import annotations

import contextlib
import gc
import json
import os
import time
from collections.abc import Callable


class BenchProbe:
    """Timings for benches; every method is a no-op without a bench file."""

    def __init__(self, path: str | None = None) -> None:
        self.path = path or os.environ.get("ABTUI_BENCH_FILE")
        self.on = bool(self.path)  # what the console's hooks look at first
        self.latencies: list[tuple[float, float]] = []  # (shown at, seconds since arrival)
        self.shown_intervals = 0
        self.hidden = 0  # intervals of panes not on screen: counted shown, not timed
        self.first_interval_at: float | None = None
        self._seq: dict[str, int] = {}  # each pair's intervals folded in so far
        self._waiting: dict[str, list[tuple[int, float]]] = {}  # (number, arrival) not drawn
        self._drawn: list[float] = []  # arrivals of intervals drawn in the frame being made
        self.full_passes: list[tuple[float, float]] = []  # (began at, seconds) of each
        self._pass_began: tuple[float, float] | None = None  # (time(), perf_counter())
        if self.on:
            gc.callbacks.append(self._collector)

    def _collector(self, phase: str, info: dict[str, int]) -> None:
        """The garbage collector's callback: note each full (generation 2) pass."""
        if info["generation"] != 2:
            return
        if phase == "start":
            self._pass_began = (time.time(), time.perf_counter())
        elif self._pass_began is not None:
            at, began = self._pass_began
            self.full_passes.append((at, time.perf_counter() - began))
            self._pass_began = None

    def first_frame(self) -> None:
        # the process's CPU time too: a figure the machine's load does not stretch
        self._write({"first_frame": time.time(), "cpu_s": time.process_time()})

    # ---- an interval: folded in, taken by its pane, drawn, written ----------------------
    def arrived(self, stamps: list[tuple[str, float]]) -> None:
        """Intervals of these pairs, which arrived at these perf_counter times, are folded
        into the console's state."""
        if not self.on:
            return
        for pair, stamp in stamps:
            n = self._seq[pair] = self._seq.get(pair, 0) + 1
            self._waiting.setdefault(pair, []).append((n, stamp))

    def folded(self, pair: str) -> int:
        """How many of the pair's intervals the state holds now (what a pane taking its
        chart or numbers from the state covers)."""
        return self._seq.get(pair, 0)

    def drawn(self, pair: str, covers: int) -> None:
        """A pane drew rows that show its pair's intervals up to number `covers`."""
        waiting = self._waiting.get(pair)
        if waiting and waiting[0][0] <= covers:
            k = next((i for i, (n, _) in enumerate(waiting) if n > covers), len(waiting))
            self._drawn.extend(s for _, s in waiting[:k])
            del waiting[:k]

    @property
    def waiting(self) -> bool:
        """Intervals are folded in and not yet written to the terminal."""
        return bool(self._drawn) or any(self._waiting.values())

    def frame_written(self, unseen: Callable[[str], bool]) -> None:
        """A frame has been handed to the terminal: the intervals it drew are shown now;
        those of pairs whose pane is `unseen` (not on screen) never will be."""
        if self._drawn:
            drawn, self._drawn = self._drawn, []
            self.shown(drawn)
        for pair, waiting in self._waiting.items():
            if waiting and unseen(pair):
                self.hidden += len(waiting)
                self.shown_intervals += len(waiting)
                waiting.clear()

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
        with contextlib.suppress(ValueError):
            gc.callbacks.remove(self._collector)
        self._write({"received": received, "shown": self.shown_intervals,
                     "hidden": self.hidden, "first_interval_at": self.first_interval_at,
                     "exit_at": time.time(), "latencies": self.latencies,
                     "full_passes": self.full_passes})

    def _write(self, record: dict[str, object]) -> None:
        if self.path:
            with open(self.path, "a") as f:
                f.write(json.dumps(record) + "\n")
