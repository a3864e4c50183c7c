"""The event log's text: each line stamped with the seconds since the session's first event,
kept whole (`lines`, what tests and the lab walk read) and written to the log widget once the
screen has one. The console's own lines (a save, an export, a failure) are stamped with the
time now: the last event's time plus what has passed since it was shown, so a save long after
measuring stopped says when it happened (the events' clock may be a replay's, not the wall's)."""

from __future__ import annotations

import time
from collections import deque
from collections.abc import Callable

from textual.widgets import RichLog

from abtui.core.text import visible

LOG_LINES = 2000  # lines the log keeps


class EventLog:
    """What the console says in its log, the events' lines and its own."""

    def __init__(self, clock: Callable[[], float] = time.monotonic) -> None:
        self.clock = clock  # the console's (a test's, to move time on)
        self.lines: deque[str] = deque(maxlen=LOG_LINES)
        self.widget: RichLog | None = None  # set on mount
        self.t0: float | None = None  # the session's first event's time
        self.last_t: float | None = None  # the last event's time
        self.last_shown = 0.0  # when it was folded in (self.clock)

    def event_line(self, t: float, line: str | None) -> None:
        """An event at `t` was folded in; `line` (if any) is what the log says of it."""
        if self.t0 is None:
            self.t0 = t
        self.last_t = t
        self.last_shown = self.clock()
        if line is not None:
            self.write(f"{t - self.t0:+8.1f}s  {line}")

    def elapsed(self) -> float:
        """Seconds since the session's first event, now."""
        if self.t0 is None or self.last_t is None:
            return 0.0
        return self.last_t - self.t0 + (self.clock() - self.last_shown)

    def say(self, line: str) -> None:
        """A line of the console's own, stamped like the events'."""
        if self.widget is not None:
            self.write(f"{self.elapsed():+8.1f}s  {line}")

    def write(self, text: str) -> None:
        """One line of the log: what hosts said in it is shown as text, control characters
        spelled out (the log widget does not read markup)."""
        assert self.widget is not None
        text = visible(text)
        self.lines.append(text)
        self.widget.write(text)
