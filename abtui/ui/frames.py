"""When the main screen draws a pane's repaint: at once, on the screen's next idle, rather
than on its update timer's next tick.

Textual draws a screen's changes from a timer that ticks on a fixed grid (TEXTUAL_FPS), paused
between frames; resumed, it waits for its next grid point, and after a frame longer than its
period it skips to a point one to two periods after the frame's end. On a machine whose cores
the lab's iperf3 processes keep busy a frame takes 10-20 ms of wall time, so the second pair's
interval, folded in while the first pair's frame was drawn, waited 8-17 ms more for that tick
with nothing to do (measured: docs/performance.md, "The stamp taken by the frame"). A pane is
repainted only by a flush or the numbers' throttle (FLUSH_HZ and TEXT_HZ a second at most), so
drawing it at once adds no frames a rate limit was keeping out."""

from __future__ import annotations

from typing import Any

from textual._styles_cache import StylesCache
from textual.screen import Screen
from textual.widget import Widget

from abtui.ui.drawing import KeptLines
from abtui.ui.widgets import PairPane


def draw_panes_now(screen: Screen[Any]) -> None:
    """Draw the screen's pending changes now if a pane is among them (what the update timer's
    tick does: Screen._on_timer_update); otherwise leave them to the timer."""
    if screen.app._batch_count or not screen.is_current:
        return
    if any(isinstance(widget, PairPane) for widget in screen._dirty_widgets):
        screen._on_timer_update()


def keep_unchanged_lines(screen: Screen[Any]) -> None:
    """The screen and the widgets placed directly on it render their last lines again, as
    they are, while unchanged (abtui.ui.drawing.KeptLines): every frame renders them. Only
    those drawn Textual's general way (its own StylesCache and render_lines)."""
    for widget in (screen, *screen.children):
        if type(widget._styles_cache) is StylesCache \
                and type(widget).render_lines is Widget.render_lines:
            widget._styles_cache = KeptLines()
