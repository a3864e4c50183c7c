"""The event log's text: each line stamped with the seconds since the session's first event,
kept whole (`lines`, what tests and the lab walk read) and written to the log widget once the
screen has one. The console's own lines (a save, an export, a failure) are stamped with the
time now: the last event's time plus what has passed since it was shown, so a save long after
measuring stopped says when it happened (the events' clock may be a replay's, not the wall's).
Lines wrap at the log's width (`LogView`), wrapped again when that width changes: nothing is cut
off, however narrow the log."""

from __future__ import annotations

import re
import sys
import time
from collections import deque
from collections.abc import Callable, Iterable
from typing import TYPE_CHECKING

from textual.content import Content
from textual.events import Resize

from abtui.core.text import visible


def _rich_log_class() -> type[RichLog]:
    """Textual's RichLog, imported without attrs: its module imports rich.pretty, which
    imports attrs (when installed: textual-serve brings it) to pretty-print attrs instances,
    10 ms of CPU before the console's first frame (docs/performance.md: `first_frame_s`) for
    nothing the log shows (it is given text only). attrs stays importable afterwards."""
    hidden = "attr" not in sys.modules
    if hidden:
        sys.modules["attr"] = None  # type: ignore[assignment]  # `import attr` fails
    try:
        from textual.widgets import RichLog
    finally:
        if hidden and sys.modules.get("attr", 0) is None:
            del sys.modules["attr"]
    return RichLog


if TYPE_CHECKING:
    from textual.widgets import RichLog
else:
    RichLog = _rich_log_class()

LOG_LINES = 2000  # lines the log keeps
COLLAPSED_ROWS = 6  # rows a collapsed log gives its latest line at most
STAMP = re.compile(r"^ *[+-]\d+\.\ds  ")  # a line's time stamp, as EventLog writes it


class LogView(RichLog):
    """The event log's widget: each line wrapped at its width (a long error reads in full),
    the lines kept (`texts`, the EventLog's) wrapped again when the width changes (a resize,
    the log moving under the phase table). The vertical scrollbar's room is kept, so lines
    wrapped before it appears are not cut by it."""

    DEFAULT_CSS = "LogView { scrollbar-gutter: stable; overflow-x: hidden; }"

    def __init__(self, **kwargs: object) -> None:
        super().__init__(max_lines=LOG_LINES, wrap=True, min_width=1, markup=False,
                         **kwargs)  # type: ignore[arg-type]
        self.texts: Iterable[str] = ()  # every line written, to wrap again
        self._wrapped_at = 0  # the width the lines were wrapped at (0: not known yet)
        self.collapsed = False  # only the latest line in sight (a short narrow screen)
        self._last_rows = 1  # the rows the latest line took, wrapped
        self._height: int | None = None  # the height set while collapsed

    def collapse(self, collapsed: bool) -> None:
        """Show only the latest line (whole, up to COLLAPSED_ROWS rows), or every line."""
        self.collapsed = collapsed
        self._fit_height()

    def _fit_height(self) -> None:
        height = 1 + min(self._last_rows, COLLAPSED_ROWS) if self.collapsed else None
        if height != self._height:  # None: the stylesheet's again
            self._height = height
            self.styles.height = height

    def on_resize(self, event: Resize) -> None:
        width = self.scrollable_content_region.width
        if not width or width == self._wrapped_at:
            return
        first, self._wrapped_at = not self._wrapped_at, width
        if first:  # RichLog writes the lines it deferred at this width itself
            return
        self.clear()
        for text in self.texts:
            self.add(text, scroll_end=False)
        self.scroll_end(animate=False, x_axis=False)

    def add(self, text: str, scroll_end: bool | None = None) -> None:
        """A line of the log, wrapped at the log's width with its continuation lines indented
        past its time stamp, so the stamps stay a column of their own."""
        width = self._wrapped_at
        stamp = STAMP.match(text)
        indent = len(stamp.group(0)) if stamp else 0
        before = len(self.lines)
        if width and len(text) > width and 0 < indent < width // 2:
            head, rest = text[:indent], Content(text[indent:]).wrap(width - indent)
            text = "\n".join(head + line.plain if i == 0 else " " * indent + line.plain
                             for i, line in enumerate(rest))
        # at the width it was wrapped for, even while hidden (no width of its own then)
        self.write(text, width=width or None, scroll_end=scroll_end)
        self._last_rows = max(1, len(self.lines) - before)
        if self.collapsed:
            self._fit_height()


class EventLog:
    """What the console says in its log, the events' lines and its own."""

    def __init__(self, clock: Callable[[], float] = time.monotonic) -> None:
        self.clock = clock  # the console's (a test's, to move time on)
        self.lines: deque[str] = deque(maxlen=LOG_LINES)
        self.widget: LogView | None = None  # set on mount (attach)
        self.t0: float | None = None  # the session's first event's time
        self.last_t: float | None = None  # the last event's time
        self.last_shown = 0.0  # when it was folded in (self.clock)

    def attach(self, widget: LogView) -> None:
        """The screen's log widget: what it wraps again on a resize is these lines."""
        self.widget = widget
        widget.texts = self.lines

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
        self.widget.add(text)
