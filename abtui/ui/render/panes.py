"""The pair panes' repaints: sparklines at once when their pair changed (every pane when the
shared scale moves), numbers at most TEXT_HZ times a second, and the scope's outline."""

from __future__ import annotations

from textual.widget import Widget

from abtui.ui.model.pacing import Scheduler, Throttle
from abtui.ui.model.state import ConsoleState
from abtui.ui.render.widgets import PairPane

TEXT_HZ = 5  # panes' numbers repaints a second, at most


def pane_label(widget: Widget | None) -> str | None:
    """The pair whose pane holds `widget` (a click's), if any."""
    pane = next((w for w in widget.ancestors_with_self if isinstance(w, PairPane)),
                None) if widget is not None else None
    return pane.state.label if pane is not None else None


class PaneBoard:
    """The main screen's panes (set on mount) and what of them is due a repaint."""

    def __init__(self, scheduler: Scheduler, state: ConsoleState, slack: float = 0.0) -> None:
        self.state = state
        self.panes: list[PairPane] = []
        self._scale: tuple[float, float] = (0.0, 0.0)
        self._text_due: set[str] = set()
        # `slack`: the numbers ride on a flush's frame (abtui.ui.model.pacing.Throttle)
        self.text_throttle = Throttle(scheduler, TEXT_HZ, self._refresh_text, slack=slack)

    def changed(self, pairs: set[str], *, now: bool) -> None:
        """These pairs changed: their charts redraw (all when the scale moved), their numbers
        within the throttle (`now`: at once, as after a knob's change)."""
        scale = self.state.scale()
        for pane in self.panes:
            if scale != self._scale or pane.state.label in pairs:
                pane.refresh_charts(scale)
        self._scale = scale
        self._text_due.update(pairs)
        self.text_throttle(force=now)

    def _refresh_text(self) -> None:
        due, self._text_due = self._text_due, set()
        for pane in self.panes:
            if pane.state.label in due:
                pane.refresh_text()

    def outline(self, scoped: set[str]) -> None:
        """A single pair in scope: its pane outlined and scrolled into sight."""
        for pane in self.panes:
            single = pane.state.label in scoped and len(scoped) == 1
            pane.set_class(single, "-scoped")
            if single:
                pane.scroll_visible(animate=False)
