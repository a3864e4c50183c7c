"""The main screen's widgets, and how they fit any terminal: panes PANE_WIDTH columns each;
when the screen is too short for them and the phase table, panes drop their sparklines (their
kernel line stays) and, narrow, the log collapses to its latest line under the table, so every
pane, knob and table row stays in reach."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from textual.app import App, ComposeResult
from textual.containers import Grid, Horizontal
from textual.widget import Widget
from textual.widgets import Header

from abtui.ui.model.state import ConsoleState
from abtui.ui.render.eventlog import LogView
from abtui.ui.render.keys_footer import KeysFooter
from abtui.ui.render.knobbar import KnobBar, PlanProgress
from abtui.ui.render.tables import PhaseTable
from abtui.ui.render.verdict_panel import VerdictPanel
from abtui.ui.render.widgets import PairPane

PANE_WIDTH = 40  # columns a pane wants: two fit in 80
BOTTOM_ROWS = 8  # rows kept for the phase table (and log) below the panes
SHORT_ROWS = 30  # a screen this short and narrow gives the phase table most of the bottom
NARROW_COLUMNS = 100  # a screen this narrow has the log under the phase table, not beside it
TABLE_MIN = 4  # rows the phase table keeps on a short screen (its header, three rows)
TABLE_ROWS = 4  # its rows a short screen keeps in sight when it can (the panes scroll)
PANES_MIN = 6  # rows the panes keep beside an alternation's verdicts: border, kernel, knobs


class MainWidgets:
    """The main screen's widgets, built and kept by the render wing that owns them: a pane
    per pair in a grid, the knob bar, the plan's progress, the alternation's or bisection's
    verdicts, the phase table and the event log, Textual's header and the keys footer. The
    console reaches them here (never by a query); what the flow helpers want shown comes
    as messages the app hands on (abtui.ui.flow.messages)."""

    def __init__(self, state: ConsoleState) -> None:
        self.panes = [PairPane(ps) for ps in state.pairs.values()]
        self.grid = Grid(id="panes")
        self.knobbar = KnobBar(id="knobbar")
        self.progress = PlanProgress(total=1, id="plan-progress", show_eta=False)  # no idle
        self.verdicts = VerdictPanel(id="verdicts")  # animation (the progress bar)
        self.bottom = Horizontal(id="bottom")
        self.table = PhaseTable(id="phases", cursor_type="row", zebra_stripes=True)
        self.log = LogView(id="log")

    def compose(self) -> ComposeResult:
        """The widgets in their places (the app's compose yields from it)."""
        yield Header(show_clock=False, icon="⇄")
        with self.grid:
            yield from self.panes
        yield self.knobbar
        yield self.progress
        yield self.verdicts
        with self.bottom:
            yield self.table
            yield self.log
        yield KeysFooter()


def keys_panel(screen: Widget) -> Widget | None:
    """Textual's keys panel (`?`) when it is open on `screen`. Textual mounts it as a child
    of the screen: its children are looked at, not the whole DOM (a query cost 0.25 ms, on
    every flush that repainted the phase table; importing the panel's class would load a
    markdown parser)."""
    return next((w for w in screen.children if type(w).__name__ == "HelpPanel"), None)


class MainLayout:
    """The main screen's grid and bottom, found once it is mounted, laid out again on any
    change of size (or of what the panes, the knob bar and the verdict panel hold).

    On a short narrow screen (80×24) the event log collapses to its latest line (a long one
    whole), so the phase table keeps the bottom's rows; `ctrl+l` shows the log whole there,
    and hides it elsewhere. While the alternation's verdicts show there, the log makes way for
    them and the table keeps TABLE_MIN rows."""

    def __init__(self, app: App[Any], state: ConsoleState, widgets: MainWidgets,
                 knobbar: Callable[[int], int],
                 main_width: Callable[[], int] | None = None) -> None:
        self.app = app  # its size
        # the columns the main screen's widgets have (the keys panel may take some)
        self.main_width = main_width or (lambda: app.size.width)
        self.state = state
        self.panes = widgets.panes
        self.table = widgets.table
        self.knobbar = knobbar  # lays the knob bar out for a width: the lines it took
        self.grid = widgets.grid
        self.bottom = widgets.bottom
        self.log = widgets.log
        self.verdicts = widgets.verdicts
        self.progress = widgets.progress
        self.log_toggled = False  # ctrl+l: the log whole (short screens) or hidden (others)

    def toggle_log(self) -> None:
        """ctrl+l: on a short narrow screen the log whole or collapsed, else shown or hidden."""
        self.log_toggled = not self.log_toggled
        self.fit()

    def fit(self, width: int | None = None, height: int | None = None) -> None:
        """Lay the screen out for `width` × `height` (the app's size by default)."""
        size = self.app.size
        width, height = width or self.main_width(), height or size.height
        grid_rows, bar_lines = lay_out(self.state, self.grid, self.panes, self.table,
                                       self.bottom, self.knobbar, width, height)
        small = width < NARROW_COLUMNS and height < SHORT_ROWS
        collapsed = small and not self.log_toggled
        verdicts = bool(self.verdicts.display)
        self.log.display = not (self.log_toggled and not small) and not (
            collapsed and verdicts)
        self.log.collapse(collapsed)
        self.bottom.set_class(collapsed, "-collapsed")
        self.bottom.set_class(not self.log.display, "-nolog")
        if small:
            # the verdicts whole (the panes keep PANES_MIN rows: their hosts and kernel) and
            # the table TABLE_MIN rows, else the table TABLE_ROWS and the log's latest line;
            # the panes the rest, their head lines first (the grid scrolls, tab brings a pane
            # into view)
            room = height - 2 - bar_lines - (1 if self.progress.display else 0)
            shown = min(self.verdicts.rows_for(width - 2),
                        max(3, room - TABLE_MIN - PANES_MIN)) if verdicts else 0
            below = TABLE_MIN if verdicts else 1 + min(len(self.state.phases), TABLE_ROWS) + 2
            _max_height(self.verdicts, shown or None)
            _max_height(self.grid, max(PANES_MIN, min(grid_rows, room - shown - below)))
        else:
            _max_height(self.verdicts, None)
            _max_height(self.grid, None)  # the stylesheet's


def _rows_even(panes: list[PairPane], cols: int, width: int, compact: bool) -> None:
    """The panes of a grid row as tall as its tallest, so they end on the same row (one
    pane's hosts or numbers wrapping onto another line left its neighbour a row short)."""
    for first in range(0, len(panes), cols):
        row = panes[first:first + cols]
        tallest = max(p.height_for(width, compact) for p in row)
        for pane in row:  # (a height of its own: its growing lays the screen out once)
            if pane.styles.height is None or pane.styles.height.value != tallest or \
                    not pane.styles.inline.has_rule("height"):
                pane.styles.height = tallest


def _max_height(widget: Widget, rows: int | None) -> None:
    """The widget's own max-height (None: the stylesheet's), set only when it changes:
    Textual lays the screen out again whenever it is set to None (a pane that grew cost two
    layouts of 15 ms, its own and this fit's)."""
    if rows is not None or widget.styles.inline.has_rule("max_height"):
        widget.styles.max_height = rows


def lay_out(state: ConsoleState, grid: Grid, panes: list[PairPane], table: PhaseTable,
            bottom: Widget, knobbar: Callable[[int], int], width: int,
            height: int) -> tuple[int, int]:
    """Lay the screen out for `width` × `height`; `knobbar(width)` lays the knob bar out and
    says how many lines it took. Returns the rows the panes want, and the knob bar's."""
    n = max(len(state.pairs), 1)
    cols = max(1, min(n, width // PANE_WIDTH))
    grid.styles.grid_size_columns = cols
    bar_lines = knobbar(width)
    rows = -(-n // cols)
    pane_w = (width - (cols - 1)) // cols
    room = height - 2 - bar_lines - BOTTOM_ROWS  # header, footer
    full = max((p.height_for(pane_w, False) for p in panes), default=0)
    compact = rows * full > room
    for pane in panes:
        if pane.has_class("-compact") != compact:
            pane.set_compact(compact)  # (every line packed again)
        else:
            pane.unpad()  # its height is its texts' now (height_for), without padding rows
    _rows_even(panes, cols, pane_w, compact)
    if not table.fits(state, width):
        table.rebuild(state, width)
    # narrow: the log goes under the table instead of beside it
    narrow, short = width < NARROW_COLUMNS, height < SHORT_ROWS
    bottom.set_class(narrow, "-narrow").set_class(narrow and short, "-short")
    return rows * max((p.height_for(pane_w, compact) for p in panes), default=0), bar_lines
