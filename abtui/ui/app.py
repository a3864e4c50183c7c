"""The abtui console: a pane per pair, the knob bar, the phase table and the event log.

Events from the controller are queued as they arrive and folded into the screen in flushes: an
interval at once while the refresh budget allows (FLUSH_HZ a second, bursts of FLUSH_BURST),
ping replies and watch samples with the next flush or within LAZY_S, so a fast stream costs a
bounded number of refreshes. Every controller call runs
in a worker; a failure is shown in its pane and the log, never as a traceback.
"""

from __future__ import annotations

import asyncio
import contextlib
import gc
import json
import math
import os
import re
import string
import time
from collections import deque
from pathlib import Path
from typing import TYPE_CHECKING, Any, ClassVar

from rich.text import Text
from textual import work
from textual.app import App, ComposeResult
from textual.binding import Binding, BindingType
from textual.containers import Grid, Horizontal
from textual.content import Content
from textual.widgets import DataTable, Footer, Header, ProgressBar, RichLog, Static

from abtui.core.configuration import cycle
from abtui.core.controller import Controller, Mode
from abtui.core.errors import AbtuiError, KnobRefused
from abtui.core.events import Event, EventKind
from abtui.core.labels import fit_labels
from abtui.core.model import KnobKind
from abtui.core.text import visible
from abtui.profile import RESERVED_KEYS
from abtui.reports.throughput import configuration_rate
from abtui.ui.alternation import VerdictPanel
from abtui.ui.commands import ConsoleCommands
from abtui.ui.pacing import STALE_S, Throttle
from abtui.ui.screens import (
    CompareScreen,
    Comparison,
    HelpScreen,
    PathPrompt,
    QuitScreen,
    SessionPicker,
    TextPrompt,
    TunnelSwitcher,
)
from abtui.ui.state import LOADED, ConsoleState, PhaseRow, config_key
from abtui.ui.widgets import PairPane, pack_chips

if TYPE_CHECKING:  # numpy and scipy behind it: loaded when an alternation starts
    from abtui.measure.alternate import LiveAlternation

FLUSH_HZ = 5  # flushes a second at most when events never pause (see _flush_wait)
FLUSH_BURST = 3  # flushes at once after a pause: a lone interval is shown at once
LAZY_S = 0.5  # ping replies and watch samples wait this long at most to be shown
LAZY_KINDS = frozenset({EventKind.PING, EventKind.WATCH, EventKind.CPU})
PANE_WIDTH = 40  # columns a pane wants: two fit in 80
BOTTOM_ROWS = 8  # rows kept for the phase table (and log) below the panes
SHORT_ROWS = 30  # a screen this short and narrow gives the phase table most of the bottom
TABLE_HZ = 2  # phase table repaints a second, at most
TEXT_HZ = 5  # panes' numbers repaints a second, at most
CELL_WIDTH = 19  # "12.34 n999 +10.5%**"
LABEL_MIN = 24  # the configuration column's least width, when labels are that long
EXPORT_FORMATS = ("md", "csv", "json")
AUTO_KEYS = "1234567890" + string.ascii_lowercase  # free ones, in this order
CONTROL_WAIT_S = 10.0  # leaving waits this long for a controller call under way
KNOB_NAME = re.compile(r"[A-Za-z][A-Za-z0-9_.-]*")  # safe inside a click action


class AbtuiApp(App[int]):
    """The console on any abtui.core.controller.Controller (the engine, or a replay)."""

    CSS_PATH = "abtui.tcss"
    TITLE = "abtui"
    COMMANDS = App.COMMANDS | {ConsoleCommands}
    BINDINGS: ClassVar[list[BindingType]] = [
        Binding("ctrl+q", "quit", "Quit", id="quit", priority=True),
        Binding("tab", "cycle_scope", "Scope", id="scope", priority=True),
        Binding("a", "set_scope('A')", "Scope A", id="scope_a", show=False),
        Binding("b", "set_scope('B')", "Scope B", id="scope_b", show=False),
        Binding("space", "start_stop", "Start/stop", id="start_stop"),
        Binding("ctrl+r", "restart", "Restart", id="restart"),
        Binding("p", "plan", "Plan", id="plan"),
        Binding("m", "mark", "Mark", id="mark"),
        Binding("s", "save", "Save", id="save"),
        Binding("e", "export", "Export", id="export"),
        Binding("ctrl+o", "compare", "Compare", id="compare"),
        Binding("ctrl+t", "tunnel", "Tunnel", id="tunnel"),
        Binding("ctrl+l", "toggle_log", "Log", id="log"),
        Binding("ctrl+a", "alternate", "Alternate", id="alternate", show=False),
        Binding("ctrl+e", "min_effect", "Min effect", id="min_effect", show=False),
        Binding("question_mark", "help", "Help", id="help", key_display="?"),
    ]
    # Plain keys the console keeps for itself (profiles may not bind these: abtui.profile);
    # every other action is on a ctrl key, so knobs may take any other letter.
    RESERVED: ClassVar[frozenset[str]] = frozenset(
        {"question_mark" if k == "?" else k for k in RESERVED_KEYS})
    # what acts on the main screen (its scope, knobs, runs): nothing behind another screen
    MAIN_ACTIONS: ClassVar[frozenset[str]] = frozenset(
        {"cycle_scope", "set_scope", "start_stop", "start", "stop", "restart", "plan", "mark",
         "save", "export", "compare", "compare_saved", "tunnel", "toggle_log", "knob",
         "help", "alternate", "min_effect"})

    def __init__(self, controller: Controller, *, title: str | None = None,
                 subtitle: str = "", autostart: bool = True, flush_hz: int = FLUSH_HZ,
                 history: int = 120, bench_file: str | None = None,
                 save_dir: str | Path | None = None,
                 sessions_dir: str | Path | None = None) -> None:
        super().__init__()
        self.controller = controller
        self.profile = controller.profile
        self.state = ConsoleState(self.profile, history=history)
        self.title = title or f"abtui — {self.profile.name}"
        self.sub_title = subtitle
        self.autostart = autostart
        self.flush_hz = flush_hz
        self.save_dir = save_dir  # where saves and exports are offered (None: the sessions')
        self.sessions_dir = sessions_dir  # where sessions are (None: abtui's folder)
        self.scopes = ["all", *self.state.pairs]
        self.scope_index = 0
        self.knob_keys = self._assign_keys()
        self._pending: list[tuple[Event, float]] = []
        self._grid: Grid | None = None  # the main screen's widgets, set on mount
        self._log_widget: RichLog | None = None
        self._panes: list[PairPane] = []
        self._scale: tuple[float, float] = (0.0, 0.0)
        self._flush_due: float | None = None  # when the next flush is scheduled, if one is
        self._flush_handle: asyncio.TimerHandle | None = None
        self._tokens, self._filled = float(FLUSH_BURST), 0.0  # see _flush_wait
        # the phase table's means and the panes' numbers move slowly: repaint them at most
        # TABLE_HZ / TEXT_HZ times a second (sparklines show every interval at once)
        self.table_throttle = Throttle(self, TABLE_HZ, self._update_phase_table)
        self.text_throttle = Throttle(self, TEXT_HZ, self._refresh_text)
        self._text_due: set[str] = set()
        self._scipy_asked = False
        self.events: list[Event] = []  # everything received (what save writes)
        self.log_lines: deque[str] = deque(maxlen=2000)  # the event log's text
        self.series: dict[str, list[tuple[float, float]]] = {lb: [] for lb in self.state.pairs}
        self._t0: float | None = None
        self._quit_screen: QuitScreen | None = None
        self._shutdown_tried = False
        # how leaving went, for abtui.ui.guard: "done" or "failed" once the controller's
        # shutdown has returned or raised; forced_out after a second ctrl+q
        self.restore_outcome = ""
        self.forced_out = False
        self.stop_reason = ""  # a signal's name, when one ended the console
        self._bench_file = bench_file or os.environ.get("ABTUI_BENCH_FILE")
        self.latencies: list[tuple[float, float]] = []  # (shown at, seconds since arrival)
        self.shown_intervals = 0
        self._first_frame: float | None = None
        self._knobbar_lines = 0
        self._label_cols = 0  # the phase table's configuration column, as laid out
        self._control_lock = asyncio.Lock()
        self._connected = False  # the controller's connect() has returned
        self._mode: Mode | None = None  # what the console last started
        self._first_interval_at: float | None = None
        # auto-alternation (ctrl+a): the knob last flipped is what it alternates
        self.alternation: LiveAlternation | None = None
        self.min_effect = self.profile.min_effect
        self.alternate_every: float | None = None  # seconds a value is held (None: default)
        self._last_knob: str | None = None
        for key, knob in self.knob_keys.items():
            binding = Binding(key, f"knob('{knob}')", knob, id=f"knob.{knob}")
            self._bindings.key_to_bindings.setdefault(key, []).append(binding)
        controller.subscribe(self._on_event)

    # ---- keys ---------------------------------------------------------------------------
    def _assign_keys(self) -> dict[str, str]:
        """Every knob a key: its profile binding when free, else the next free one."""
        taken = set(self.RESERVED)
        out: dict[str, str] = {}
        pool = iter(k for k in AUTO_KEYS if k not in taken)
        for knob in self.profile.knobs:
            key = knob.binding
            if not key or key in taken or len(key) != 1 or key not in string.printable:
                key = next((k for k in pool if k not in taken), None)
            if key is None:
                continue  # more knobs than keys: the palette still lists them
            taken.add(key)
            out[key] = knob.name
        return out

    def palette_actions(self) -> list[tuple[str, str, str]]:
        acts = [(f"{b.description}", b.action, f"key {b.key_display or b.key}")
                for b in self.BINDINGS if isinstance(b, Binding)]
        acts.append(("Stop measuring", "stop", "stop all pairs"))
        acts.append(("Start measuring", "start", "start all pairs together"))
        acts.append(("Compare with a saved session…", "compare_saved", "abtui compare's table"))
        for key, knob in self.knob_keys.items():
            acts.append((f"Knob: cycle {knob}", f"knob('{knob}')", f"key {key}"))
        for scope in self.scopes:
            acts.append((f"Scope: {scope}", f"set_scope('{scope}')", "where knobs apply"))
        return acts

    # ---- layout -------------------------------------------------------------------------
    def compose(self) -> ComposeResult:
        yield Header(show_clock=False, icon="⇄")
        with Grid(id="panes"):
            for ps in self.state.pairs.values():
                yield PairPane(ps)
        yield Static(id="knobbar")
        yield ProgressBar(total=1, id="plan-progress", show_eta=False)  # no idle animation
        yield VerdictPanel(id="verdicts")
        with Horizontal(id="bottom"):
            table: DataTable[Text] = DataTable(id="phases", cursor_type="row", zebra_stripes=True)
            yield table
            yield RichLog(id="log", max_lines=2000, wrap=False, markup=False)
        yield Footer()

    def on_mount(self) -> None:
        self._log_widget = self.query_one("#log", RichLog)
        self._table = self.query_one("#phases", DataTable)
        self._knobbar = self.query_one("#knobbar", Static)
        self._panes = list(self.query(PairPane))
        self._grid = self.query_one("#panes", Grid)
        self._rebuild_phase_table(self._table)
        self._layout(self.size.width, self.size.height)
        self.call_after_refresh(self._first_frame_shown)
        self._flush_events()  # anything the controller said before the screen existed
        if self.autostart:
            self.run_controller("start", "continuous")

    def _first_frame_shown(self) -> None:
        # what start-up built lives as long as the app: keep it out of the collector's
        # full passes, which otherwise stall a busy console for 100+ ms
        gc.freeze()
        self._first_frame = time.time()
        self._load_in_background("abtui.reports.stats", "stats")
        if self._bench_file:
            with open(self._bench_file, "a") as f:
                f.write(json.dumps({"first_frame": self._first_frame}) + "\n")

    def on_resize(self, event: Any) -> None:
        if self._grid is not None:  # resizes can come before mount
            self._layout(event.size.width, event.size.height)

    def on_pair_pane_grew(self) -> None:
        """Longer numbers wrapped a pane's line: the panes may no longer fit in full."""
        if self._grid is not None:
            self._layout(self.size.width, self.size.height)

    def _layout(self, width: int, height: int) -> None:
        """Panes PANE_WIDTH columns each; when the screen is too short for them and the
        phase table, panes drop their sparklines (and, narrow, the table takes most of the
        room below them, the log the rest), so every pane, knob and table row stays in reach."""
        n = max(len(self.state.pairs), 1)
        cols = max(1, min(n, width // PANE_WIDTH))
        assert self._grid is not None
        self._grid.styles.grid_size_columns = cols
        self._update_knobbar(width)
        rows = -(-n // cols)
        pane_w = (width - (cols - 1)) // cols
        room = height - 2 - self._knobbar_lines - BOTTOM_ROWS  # header, footer
        full = max((p.height_for(pane_w, False) for p in self._panes), default=0)
        compact = rows * full > room
        for pane in self._panes:
            if pane.has_class("-compact") != compact:
                pane.set_class(compact, "-compact")
                if pane.is_mounted:
                    pane.refresh_text()
        if self._label_cols and self._label_cols != self._label_width(
                [visible(self.row_label(r)) for r in self.state.phases.values()]):
            self._rebuild_phase_table(self._table)
        # narrow: the log goes under the table instead of beside it
        narrow, short = width < 100, height < SHORT_ROWS
        self.query_one("#bottom").set_class(narrow, "-narrow").set_class(
            narrow and short, "-short")

    # ---- events ---------------------------------------------------------------------------
    def _on_event(self, event: Event) -> None:
        """Called by the controller for every event: queue it, and have it shown as soon as
        the refresh budget allows (at most `flush_hz` flushes a second, none when idle)."""
        now = time.perf_counter()
        # an interval is timed from its line's arrival on the SSH channel when the engine
        # stamped it (a replay's events are not: from here)
        self._pending.append((event, now if event.arrived is None else event.arrived))
        if not self.is_running:
            return  # on_mount flushes (or the console has closed)
        wait = self._flush_wait(now)
        if event.kind in LAZY_KINDS:
            wait = max(wait, LAZY_S)
        due = now + wait
        if self._flush_due is not None and self._flush_due <= due \
                and now - self._flush_due < STALE_S:
            return  # a flush soon enough is on its way (and not lost: see abtui.ui.pacing)
        if self._flush_handle is not None:
            self._flush_handle.cancel()
        self._flush_due = due
        if wait > 0:  # asyncio's timer, never Textual's one-shot set_timer (abtui.ui.pacing)
            self._flush_handle = asyncio.get_running_loop().call_later(wait, self._post_flush)
        else:
            self._flush_handle = None
            self.call_later(self._flush_events)  # after the rest of this burst is queued

    def _post_flush(self) -> None:
        self._flush_handle = None
        self.call_later(self._flush_events)

    def _flush_wait(self, now: float) -> float:
        """Seconds until the refresh budget allows a flush: a token bucket of FLUSH_BURST
        flushes refilled at `flush_hz` a second (a lone interval never waits; a stream that
        never pauses gets `flush_hz` flushes a second)."""
        tokens = min(FLUSH_BURST, self._tokens + (now - self._filled) * self.flush_hz)
        return 0.0 if tokens >= 1 else (1 - tokens) / self.flush_hz

    def _flush_events(self) -> None:
        now = time.perf_counter()
        self._tokens = max(0.0, min(FLUSH_BURST, self._tokens + (now - self._filled)
                                    * self.flush_hz) - 1)
        self._filled = now
        self._flush_due = None
        if self._flush_handle is not None:
            self._flush_handle.cancel()
            self._flush_handle = None
        log = self._log_widget
        if not self._pending or log is None or not log.is_attached:
            return  # nothing new, not mounted yet, or the console is being taken down
        batch, self._pending = self._pending, []
        stamps = []
        for event, stamp in batch:
            self.events.append(event)
            if self._t0 is None:
                self._t0 = event.t
            line = self.state.apply(event)
            if line is not None:
                self._write_log(log, f"{event.t - self._t0:+8.1f}s  {line}")
            if event.kind == "interval" and event.pair in self.series:
                bps = event.data.get("bits_per_second")
                if isinstance(bps, int | float):
                    self.series[event.pair].append((event.t - self._t0, float(bps)))
                stamps.append(stamp)
        self._apply_dirty()
        if stamps:
            self.call_after_refresh(self._shown, stamps)

    def _shown(self, stamps: list[float]) -> None:
        now = time.perf_counter()
        self.shown_intervals += len(stamps)
        if self._bench_file:
            wall = time.time()  # when shown, for benches that skip a warm-up
            self.latencies.extend((wall, now - s) for s in stamps)
            if self._first_interval_at is None:
                self._first_interval_at = time.time()

    def _apply_dirty(self) -> None:
        dirty = self.state.take_dirty()
        if not dirty:
            return
        scale = self.state.scale()
        for pane in self._panes:
            # a shared scale: every pane redraws when the ceiling moves, else only changed ones
            if scale != self._scale or pane.state.label in dirty.pairs:
                pane.refresh_charts(scale)
        self._scale = scale
        self._text_due.update(dirty.pairs)
        self.text_throttle(force=dirty.knobs)  # a knob's new value shows at once
        if dirty.phases:
            self.table_throttle(force=len(self._table.rows) != len(self.state.phases))
        if dirty.knobs:  # a value's length may change how the knob bar and panes wrap
            self._layout(self.size.width, self.size.height)
        elif dirty.status:
            self._update_knobbar()
        if dirty.status:
            self._show_plan_progress()
        if self._quit_screen is not None:
            self._quit_screen.show(self.state.restoring)

    @work(thread=True, exit_on_error=False, group="imports")
    def _load_in_background(self, module: str, key: str) -> None:
        """Import what the phase table's significance needs without stalling the screen."""
        import importlib

        loaded = importlib.import_module(module)
        self.call_from_thread(self._loaded, key, loaded)

    def _loaded(self, key: str, module: object) -> None:
        LOADED[key] = module if key == "stats" else True
        self.table_throttle(force=True)

    def _refresh_text(self) -> None:
        due, self._text_due = self._text_due, set()
        for pane in self._panes:
            if pane.state.label in due:
                pane.refresh_text()

    def row_label(self, row: PhaseRow) -> str:
        return self.state.row_label(row)

    def phase_rows(self) -> list[tuple[str, list[str]]]:
        return [(self.row_label(r), self.state.phase_cells(r))
                for r in self.state.phases.values()]

    def _update_phase_table(self) -> None:
        if LOADED.pop("want_scipy", False) and not self._scipy_asked:
            self._scipy_asked = True
            self._load_in_background("scipy.stats", "scipy")
        table = self._table
        labels = list(self.state.pairs)
        if len(table.rows) != len(self.state.phases):
            self._rebuild_phase_table(table)
            return
        for key, row in self.state.phases.items():
            for label, cell in zip(labels, self.state.phase_cells(row), strict=True):
                table.update_cell(repr(key), label, Text(cell))

    def _label_width(self, labels: list[str]) -> int:
        """The configuration column: as wide as its longest label, within what the pairs'
        columns leave of the table's share of the screen, but never below LABEL_MIN (with
        many pairs on a narrow screen the table scrolls sideways instead)."""
        width = self.size.width
        table = width if width < 100 else width * 3 // 5  # abtui.tcss: 3fr of 5, or all
        room = table - len(self.state.pairs) * (CELL_WIDTH + 2) - 3  # cell padding, bar
        longest = max([len("configuration"), *(len(lb) for lb in labels)])
        return min(longest, max(room, LABEL_MIN))

    def pair_title(self, label: str) -> str:
        """A pair's column in the phase tables: what its cells hold (mean Gbit/s, and for
        the others the Δ % vs the base pair)."""
        return f"{label} Gbit/s (base)" if label == self.state.base else f"{label} Gbit/s Δ%"

    def _rebuild_phase_table(self, table: DataTable[Text]) -> None:
        """A new configuration: lay the table out again, every width explicit (no jitter).
        Labels too long for their column are shortened alike (abtui.core.labels); every cell
        is text, never markup."""
        rows = [(repr(k), visible(self.row_label(r)), self.state.phase_cells(r))
                for k, r in self.state.phases.items()]
        width = self._label_width([lb for _, lb, _ in rows])
        fitted = fit_labels([self.state.row_parts(r) for r in self.state.phases.values()], width)
        self._label_cols = width
        cursor = table.cursor_row
        table.clear(columns=True)
        table.add_column("configuration", key="config", width=width)
        for label in self.state.pairs:
            table.add_column(Text(visible(self.pair_title(label))), key=label, width=CELL_WIDTH)
        for (key, _, cells), shown in zip(rows, fitted, strict=True):
            table.add_row(Text(shown), *(Text(c) for c in cells), key=key)
        if rows:
            table.move_cursor(row=min(max(cursor, 0), len(rows) - 1), scroll=False)

    def check_action(self, action: str, parameters: tuple[object, ...]) -> bool | None:
        """Once leaving has begun, only ctrl+q (to force out) still acts; while a dialog or
        the compare screen is up, the main screen's keys are its own (tab moves the focus
        in a dialog, letters type), never the scope's or a knob's behind it."""
        if self._shutdown_tried:
            return action == "quit"
        return action not in self.MAIN_ACTIONS or len(self.screen_stack) == 1

    def knobbar(self, width: int | None = None) -> Content:
        """The scope, each knob's key and value, and the run status, packed into lines as
        wide as the screen (or `width` columns): a chip is never split between lines unless
        it alone is wider. Values are what hosts and events said: text, never markup."""
        scope = self.scopes[self.scope_index]
        shown = "A+B" if scope == "all" and len(self.scopes) == 3 else scope
        chips = [Content.from_markup("[@click=app.cycle_scope][b reverse] $scope [/][/]",
                                     scope=visible(shown))]
        scope_pairs = self._scope_pairs()
        for key, knob in self.knob_keys.items():
            value = self.state.knob_value(knob, scope_pairs)
            markup = "[b $accent]$key[/] $knob=$value"
            if KNOB_NAME.fullmatch(knob):
                markup = f"[@click=app.knob('{knob}')]{markup}[/]"
            chips.append(Content.from_markup(markup, key=visible(key), knob=visible(knob),
                                             value=visible(str(value))))
        run = "running" if self.state.running else "stopped"
        p = self.plan_progress()
        if p:
            run += f" plan {p.get('done')}/{p.get('total')}"
            eta = p.get("eta_s")
            if isinstance(eta, int | float) and math.isfinite(eta):
                run += f", {eta:.0f} s left"
        chips.append(Content.styled(run, "dim"))
        return pack_chips(chips, (width or self.size.width) - 2)  # less the padding

    def _update_knobbar(self, width: int | None = None) -> None:
        content = self.knobbar(width)
        lines = content.plain.count("\n") + 1
        if lines != self._knobbar_lines:  # an explicit height: a layout pass, for sure
            self._knobbar.styles.height = lines
        self._knobbar.update(content, layout=False)
        self._knobbar_lines = lines

    # ---- scope and knobs ------------------------------------------------------------------
    def _scope_pairs(self) -> list[str]:
        scope = self.scopes[self.scope_index]
        return list(self.state.pairs) if scope == "all" else [scope]

    def action_cycle_scope(self) -> None:
        self._scope_to((self.scope_index + 1) % len(self.scopes))

    def action_set_scope(self, scope: str) -> None:
        if scope in self.scopes:
            self._scope_to(self.scopes.index(scope))

    def _scope_to(self, index: int) -> None:
        """Knobs now apply to this scope: its panes are outlined, and a single pair's pane
        is scrolled into sight (tab reaches every pane, however many scroll off)."""
        self.scope_index = index
        self._update_knobbar()
        scoped = set(self._scope_pairs())
        for pane in self._panes:
            pane.set_class(pane.state.label in scoped and len(scoped) == 1, "-scoped")
            if pane.state.label in scoped and len(scoped) == 1:
                pane.scroll_visible(animate=False)

    def on_click(self, event: Any) -> None:
        pane = next((w for w in event.widget.ancestors_with_self
                     if isinstance(w, PairPane)), None) if event.widget else None
        if pane is not None:
            self.action_set_scope(pane.state.label)

    def action_knob(self, name: str) -> None:
        try:
            knob = self.profile.knob(name)
        except KeyError:
            return
        pairs = self._scope_pairs()
        ps = self.state.pairs[pairs[0]]
        value = cycle(knob.values, ps.config.get(name), ps.original.get(name))
        self.apply_knob(name, value, pairs)

    @work(group="knobs", exit_on_error=False)
    async def apply_knob(self, name: str, value: str, pairs: list[str]) -> None:
        self._last_knob = name
        if all(self.state.pairs[lb].config.get(name) == value for lb in pairs):
            self._log_line(f"{name} is {value} already on {', '.join(pairs)}")
            return
        self._log_line(f"setting {name}={value} on {', '.join(pairs)}…")
        try:
            await self.controller.set_knob(name, value, pairs)
        except KnobRefused as exc:
            self._fail(f"{name}={value} refused: {exc}", pairs)
        except Exception as exc:  # a host error must never take the console down
            self._fail(f"{name}={value} failed: {type(exc).__name__}: {exc}", pairs)
        else:
            for label in pairs:
                self.state.pairs[label].error = ""

    def _log_line(self, line: str) -> None:
        t = self.events[-1].t - self._t0 if self.events and self._t0 is not None else 0.0
        if self._log_widget is not None:
            self._write_log(self._log_widget, f"{t:+8.1f}s  {line}")

    def _write_log(self, log: RichLog, text: str) -> None:
        """One line of the event log: what hosts said in it is shown as text, control
        characters spelled out (the log widget does not read markup)."""
        text = visible(text)
        self.log_lines.append(text)
        log.write(text)

    def _fail(self, message: str, pairs: list[str] | None = None) -> None:
        for label in pairs or []:
            if label in self.state.pairs:
                self.state.pairs[label].error = message
                self.state.dirty.pairs.add(label)
        self._log_line(message)
        self.notify(visible(message), severity="error", timeout=6, markup=False)
        self._apply_dirty()

    # ---- controller calls in workers ------------------------------------------------------
    @work(group="controller", exit_on_error=False)
    async def run_controller(self, method: str, *args: Any) -> None:
        """One controller call at a time, in the order asked (a second key waits for the
        first). "start" connects once, ends whatever runs, then starts in the mode given."""
        async with self._control_lock:
            try:
                if method == "start":
                    if not self._connected:
                        await self.controller.connect()
                        self._connected = True
                    await self.controller.stop()
                    self._mode = args[0] if args else "continuous"
                    self.state.progress = None  # the last plan's, if any
                    self._show_plan_progress()
                    self._update_knobbar()
                    await self.controller.start(self._mode)
                    return
                if method == "stop":
                    self._mode = None
                await getattr(self.controller, method)(*args)
            except Exception as exc:
                self._fail(f"{method} failed: {type(exc).__name__}: {exc}")

    def plan_progress(self) -> dict[str, Any] | None:
        """The plan's last PROGRESS while the plan is what the console last started."""
        return self.state.progress if self._mode == "plan" else None

    def _show_plan_progress(self) -> None:
        p = self.plan_progress()
        bar = self.query_one("#plan-progress", ProgressBar)
        bar.display = p is not None
        if p is not None:
            bar.update(total=max(int(p.get("total") or 0), 1), progress=int(p.get("done") or 0))

    def measuring(self) -> bool:
        """Runs going on, or a plan between its steps."""
        p = self.plan_progress()
        return self.state.running or (p is not None
                                      and (p.get("done") or 0) < (p.get("total") or 0))

    def action_start_stop(self) -> None:
        if self.measuring():
            self.run_controller("stop")
        else:
            self.run_controller("start", "continuous")

    def action_start(self) -> None:
        self.run_controller("start", "continuous")

    def action_stop(self) -> None:
        self.run_controller("stop")

    def action_plan(self) -> None:
        """Run the profile's plan: every value of its matrix, with progress and time left."""
        self.run_controller("start", "plan")

    def action_restart(self) -> None:
        self.run_controller("start", "continuous")

    def action_mark(self) -> None:
        def done(text: object) -> None:
            if isinstance(text, str) and text:
                self.run_controller("mark", text)

        self.push_screen(TextPrompt("Mark the timeline", "what just happened?"), done)

    # ---- auto-alternation and its live verdict ----------------------------------------------
    @work(group="alternate", exit_on_error=False)
    async def action_alternate(self) -> None:
        """Start alternating the knob last flipped (measuring continuously), or stop."""
        from abtui.measure.alternate import LiveAlternation, console_alternation

        live = self.alternation
        if live is not None and live.running:
            await live.stop()
            self._log_line(f"alternation of {live.alt.knob} stopped")
            self._show_verdicts()
            return
        pairs = list(self.state.pairs)
        try:
            alt = console_alternation(self.profile, self._last_knob,
                                      self.state.pairs[pairs[0]].config,
                                      *([self.alternate_every] if self.alternate_every else []))
        except AbtuiError as exc:
            self._fail(str(exc))
            return
        if not self.state.running or self._mode != "continuous":
            self.run_controller("start", "continuous")
            await self.workers.wait_for_complete([w for w in self.workers
                                                  if w.group == "controller"])
        live = self.alternation = LiveAlternation(self.controller, alt, self.min_effect,
                                                  notify=self._show_verdicts)
        self._log_line(f"alternating {alt.knob}: {' / '.join(alt.values)} every {alt.every:g} s")
        try:
            await live.start()
        except Exception as exc:
            self._fail(f"alternation of {alt.knob} failed: {exc}")
        self._show_verdicts()

    def action_min_effect(self) -> None:
        """The smallest effect worth resolving, next choice (0.5, 1, 2, 5, 10 %)."""
        from abtui.measure.alternate import next_min_effect

        self.min_effect = next_min_effect(self.min_effect)
        if self.alternation is not None:
            self.alternation.set_min_effect(self.min_effect)
        self.notify(f"min effect {self.min_effect:g}%", timeout=2)

    def _show_verdicts(self) -> None:
        self.query_one("#verdicts", VerdictPanel).show(self.alternation)

    def action_toggle_log(self) -> None:
        log = self._log_widget
        assert log is not None
        log.display = not log.display

    def deliver_screenshot(self, filename: str | None = None, path: str | None = None,
                           time_format: str | None = None) -> str | None:
        """The palette's Screenshot: an SVG of the screen, in the sessions folder (Textual's
        default, ~/Downloads, may not exist), and where it went said in the log."""
        from abtui.sessions import store

        folder = Path(path) if path else self._folder()
        name = filename or f"{store.session_name(self.profile.name)}.svg"
        try:
            folder.mkdir(parents=True, exist_ok=True)
            written = self.save_screenshot(name, str(folder), time_format)
        except OSError as exc:
            self._fail(f"screenshot failed: {exc}")
            return None
        self._done(f"screenshot saved to {written}")
        return None

    def action_help(self) -> None:
        keys = [(b.key_display or b.key, b.description) for b in self.BINDINGS
                if isinstance(b, Binding)]
        keys += [(k, f"knob {n}: next value") for k, n in self.knob_keys.items()]
        keys += [("ctrl+p", "command palette (every action, themes)")]
        self.push_screen(HelpScreen(keys))

    def action_tunnel(self) -> None:
        knob = next((k for k in self.profile.knobs if k.kind is KnobKind.TUNNEL), None)
        if knob is None:
            self.notify("this profile has no tunnel knob", severity="warning")
            return
        pairs = self._scope_pairs()
        choices = self.state.tunnel_choices(list(knob.values), pairs)
        current = self.state.pairs[pairs[0]].tunnel

        def chosen(value: object) -> None:
            if isinstance(value, str):
                self.apply_knob(knob.name, value, pairs)

        self.push_screen(TunnelSwitcher(choices, current, ", ".join(pairs)), chosen)

    def _folder(self) -> Path:
        """Where the console offers to write: the sessions folder (or `save_dir`)."""
        from abtui.sessions import store

        return Path(self.save_dir) if self.save_dir else store.sessions_dir(self.sessions_dir)

    def _session_name(self) -> str:
        from abtui.sessions import store

        path = self.controller.session_path
        return store.name_of(path) if path else store.session_name(self.profile.name)

    def _events_now(self) -> list[Event]:
        """Everything received so far, the events still queued for the screen included."""
        self._flush_events()
        return list(self.events)

    def action_export(self) -> None:
        def chosen(result: object) -> None:
            if isinstance(result, tuple):
                self._write_file("export", result[0], result[1], self._events_now())

        default = str(self._folder() / f"{self._session_name()}.md")
        self.push_screen(PathPrompt("Export the session (the report abtui export writes)",
                                    default, EXPORT_FORMATS), chosen)

    def action_save(self) -> None:
        from abtui.sessions import store

        def chosen(result: object) -> None:
            if isinstance(result, tuple):
                self._write_file("save", result[0], None, self._events_now())

        # With the engine the session is journalled as it runs (controller.session_path):
        # `s` saves a copy of what the console has received, under another name.
        live = self.controller.session_path
        note = (f"This session is being written to {live} as it runs (finished there when "
                "you quit); this saves a copy of it so far.") if live else ""
        default = store.new_session_path(self.profile.name, self._folder() if self.save_dir
                                         else self.sessions_dir)
        self.push_screen(PathPrompt("Save the session", str(store.finished_path(default)),
                                    note=note, resolve=store.saved_path, replace=False),
                         chosen)

    @work(thread=True, exit_on_error=False, group="files")
    def _write_file(self, what: str, path: Path, fmt: str | None, events: list[Event]) -> None:
        """Save (a session journal) or export (md/csv/json, as `abtui export`), off the loop."""
        from abtui.core.errors import AbtuiError

        try:
            if what == "save":
                from abtui.sessions.store import save_events

                written = save_events(path, events, profile=self.profile.name,
                                      pairs=list(self.state.pairs))
                line = f"saved {len(events)} events to {written}"
            else:
                from abtui.reports.exports import render
                from abtui.sessions.session import Session

                session = Session.from_events(events, name=self.profile.name)
                path.parent.mkdir(parents=True, exist_ok=True)
                path.write_text(render(session, fmt or "md", base=self.state.base))
                line = f"exported {fmt} to {path}"
        except (OSError, ValueError, AbtuiError) as exc:
            self.call_from_thread(self._fail, f"{what} failed: {exc}")
            return
        self.call_from_thread(self._done, line)

    def _done(self, line: str) -> None:
        self._log_line(line)
        self.notify(visible(line), markup=False)

    def action_compare(self) -> None:
        """This session: the phase table, pairs over time, per-configuration bars."""
        rows = self.phase_rows()
        bars = {label: [(configuration_rate(r.segments.get(label, [])) or 0.0) / 1e9
                        for r in self.state.phases.values()] for label in self.state.pairs}
        self.push_screen(CompareScreen(Comparison(
            f"Compare: {self.profile.name}, phase by phase",
            ["configuration", *map(self.pair_title, self.state.pairs)],
            [[label, *cells] for label, cells in rows],
            {lb: [(t, v / 1e9) for t, v in pts] for lb, pts in self.series.items()},
            [str(i + 1) for i in range(len(rows))], bars)))

    def action_compare_saved(self) -> None:
        """This session against a saved one (`abtui compare`'s table): picked from the
        sessions folder, or typed as a file or a name."""
        from abtui.sessions import store

        def chosen(result: object) -> None:
            if isinstance(result, Path):
                self._load_comparison(result, self._events_now())

        live = self.controller.session_path
        mine = {live, store.finished_path(live)} if live else set()
        saved = [p for p in reversed(store.list_sessions(self.sessions_dir)) if p not in mine]
        self.push_screen(SessionPicker(
            "Compare with a saved session", saved,
            lambda ref: store.find_session(ref, self.sessions_dir)), chosen)

    @work(thread=True, exit_on_error=False, group="files")
    def _load_comparison(self, path: Path, events: list[Event]) -> None:
        from abtui.core.errors import AbtuiError
        from abtui.reports import compare
        from abtui.reports.exports import interval_rows
        from abtui.reports.formatting import fmt_cell, fmt_compare
        from abtui.sessions.session import Session

        try:
            saved = Session.load(path)
        except (OSError, AbtuiError) as exc:
            self.call_from_thread(self._fail, f"compare failed: {exc}")
            return
        now = Session.from_events(events, name="this session")
        table = compare.rows(saved, now)
        lines = {}
        for side, session in (("saved", saved), ("now", now)):
            for pair in session.pairs:
                lines[f"{side} {pair}"] = [(r["time"], (r["bits_per_second"] or 0) / 1e9)
                                           for r in interval_rows(session, pair)]
        rows = [[r["pair"], r["config"],
                 fmt_cell(r["left"], 1e9), fmt_cell(r["right"], 1e9),
                 fmt_compare(r["left"], r["right"])] for r in table]
        mean = [(r["left"].throughput.mean if r["left"] else 0.0,
                 r["right"].throughput.mean if r["right"] else 0.0) for r in table]
        comparison = Comparison(
            f"Compare: {saved.name} → this session (Gbit/s)",
            ["pair", "configuration", saved.name, "this session", "Δ"], rows, lines,
            [str(i + 1) for i in range(len(rows))],
            {"saved": [(a or 0.0) / 1e9 for a, _ in mean],
             "now": [(b or 0.0) / 1e9 for _, b in mean]})
        self.call_from_thread(self.push_screen, CompareScreen(comparison))

    # ---- leaving --------------------------------------------------------------------------
    @property
    def leaving(self) -> bool:
        """ctrl+q (or a signal) has started restoring the hosts."""
        return self._shutdown_tried

    async def action_quit(self) -> None:
        if self._shutdown_tried:
            self.forced_out = True
            self._write_bench()
            self.exit(1, return_code=1)
            return
        self._shutdown_tried = True
        self._quit_screen = QuitScreen()
        self.push_screen(self._quit_screen)
        self._restore_and_exit()

    @work(group="shutdown", exit_on_error=False)
    async def _restore_and_exit(self) -> None:
        code = 0
        try:
            with contextlib.suppress(TimeoutError):  # a start or stop under way ends first
                await asyncio.wait_for(self._control_lock.acquire(), CONTROL_WAIT_S)
            await self.controller.shutdown()
            self.restore_outcome = "done"
        except Exception as exc:
            code = 1
            self.restore_outcome = "failed"
            self._fail(f"restoring failed: {type(exc).__name__}: {exc}")
        self._flush_events()
        self._write_bench()
        self.exit(code, return_code=code)

    def _write_bench(self) -> None:
        if not self._bench_file:
            return
        with open(self._bench_file, "a") as f:
            f.write(json.dumps({"received": self.state.intervals_seen,
                                "shown": self.shown_intervals,
                                "first_interval_at": self._first_interval_at,
                                "exit_at": time.time(),
                                "latencies": self.latencies}) + "\n")

    def phase_config_keys(self) -> list[str]:
        return [config_key(r.config) for r in self.state.phases.values()]
