"""The abtui console: a pane per pair, the knob bar, the phase table and the event log.

Events from the controller are queued as they arrive and folded into the screen in flushes: an
interval at once while the refresh budget allows (FLUSH_HZ a second, bursts of FLUSH_BURST),
ping replies and watch samples with the next flush or within LAZY_S, so a fast stream costs a
bounded number of refreshes. Every controller call runs
in a worker; a failure is shown in its pane and the log, never as a traceback.
"""

from __future__ import annotations

import gc
import json
import os
import string
import time
from collections import deque
from pathlib import Path
from typing import Any, ClassVar

from textual import work
from textual.app import App, ComposeResult
from textual.binding import Binding, BindingType
from textual.containers import Grid, Horizontal
from textual.timer import Timer
from textual.widgets import DataTable, Footer, Header, ProgressBar, RichLog, Static

from abtui.configuration import cycle
from abtui.controller import Controller, KnobRefused, Mode
from abtui.model import Event, EventKind, KnobKind
from abtui.profile import RESERVED_KEYS
from abtui.ui.commands import ConsoleCommands
from abtui.ui.screens import (
    CompareScreen,
    Comparison,
    HelpScreen,
    PathPrompt,
    QuitScreen,
    TextPrompt,
    TunnelSwitcher,
)
from abtui.ui.state import LOADED, ConsoleState, PhaseRow, config_key
from abtui.ui.widgets import PairPane

FLUSH_HZ = 5  # flushes a second at most when events never pause (see _flush_wait)
FLUSH_BURST = 3  # flushes at once after a pause: a lone interval is shown at once
LAZY_S = 0.5  # ping replies and watch samples wait this long at most to be shown
LAZY_KINDS = frozenset({EventKind.PING, EventKind.WATCH})
PANE_WIDTH = 40  # columns a pane wants: two fit in 80
TABLE_HZ = 2  # phase table repaints a second, at most
TEXT_HZ = 5  # panes' numbers repaints a second, at most
CELL_WIDTH = 19  # "12.34 n999 +10.5%**"
EXPORT_FORMATS = ("md", "csv", "json")
AUTO_KEYS = "1234567890" + string.ascii_lowercase  # free ones, in this order


class Throttle:
    """Run `action` at most `hz` times a second; a call inside the window runs it once at the
    window's end, so the last values always show."""

    def __init__(self, app: App[Any], hz: float, action: Any) -> None:
        self.app, self.period, self.action = app, 1 / hz, action
        self.at = -1e9
        self.pending = False

    def __call__(self, force: bool = False) -> None:
        now = time.perf_counter()
        if force or now - self.at >= self.period:
            self._run(now)
        elif not self.pending:
            self.pending = True
            self.app.set_timer(self.at + self.period - now, self._late)

    def _late(self) -> None:
        if self.pending:
            self._run(time.perf_counter())

    def _run(self, now: float) -> None:
        self.at, self.pending = now, False
        self.action()


class AbtuiApp(App[int]):
    """The console on any abtui.controller.Controller (the engine, or a replay)."""

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
        Binding("question_mark", "help", "Help", id="help", key_display="?"),
    ]
    # Plain keys the console keeps for itself (profiles may not bind these: abtui.profile);
    # every other action is on a ctrl key, so knobs may take any other letter.
    RESERVED: ClassVar[frozenset[str]] = frozenset(
        {"question_mark" if k == "?" else k for k in RESERVED_KEYS})

    def __init__(self, controller: Controller, *, title: str | None = None,
                 subtitle: str = "", autostart: bool = True, flush_hz: int = FLUSH_HZ,
                 history: int = 120, bench_file: str | None = None,
                 save_dir: str | Path = ".", sessions_dir: str | Path | None = None) -> None:
        super().__init__()
        self.controller = controller
        self.profile = controller.profile
        self.state = ConsoleState(self.profile, history=history)
        self.title = title or f"abtui — {self.profile.name}"
        self.sub_title = subtitle
        self.autostart = autostart
        self.flush_hz = flush_hz
        self.save_dir = Path(save_dir)  # where exports are offered
        self.sessions_dir = sessions_dir  # where saves are offered (None: abtui's folder)
        self.scopes = ["all", *self.state.pairs]
        self.scope_index = 0
        self.knob_keys = self._assign_keys()
        self._pending: list[tuple[Event, float]] = []
        self._grid: Grid | None = None  # the main screen's widgets, set on mount
        self._log_widget: RichLog | None = None
        self._panes: list[PairPane] = []
        self._scale: tuple[float, float] = (0.0, 0.0)
        self._flush_due: float | None = None  # when the next flush is scheduled, if one is
        self._flush_timer: Timer | None = None
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
        self._bench_file = bench_file or os.environ.get("ABTUI_BENCH_FILE")
        self.latencies: list[tuple[float, float]] = []  # (shown at, seconds since arrival)
        self.shown_intervals = 0
        self._first_frame: float | None = None
        self._first_interval_at: float | None = None
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
        with Horizontal(id="bottom"):
            table: DataTable[str] = DataTable(id="phases", cursor_type="row", zebra_stripes=True)
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
        self._layout_panes(self.size.width)
        self._update_knobbar()
        self.call_after_refresh(self._first_frame_shown)
        self._flush_events()  # anything the controller said before the screen existed
        if self.autostart:
            self.run_controller("start", "continuous")

    def _first_frame_shown(self) -> None:
        # what start-up built lives as long as the app: keep it out of the collector's
        # full passes, which otherwise stall a busy console for 100+ ms
        gc.freeze()
        self._first_frame = time.time()
        self._load_in_background("abtui.stats", "stats")
        if self._bench_file:
            with open(self._bench_file, "a") as f:
                f.write(json.dumps({"first_frame": self._first_frame}) + "\n")

    def on_resize(self, event: Any) -> None:
        if self._grid is not None:  # resizes can come before mount
            self._layout_panes(event.size.width)

    def _layout_panes(self, width: int) -> None:
        n = max(len(self.state.pairs), 1)
        cols = max(1, min(n, width // PANE_WIDTH))
        assert self._grid is not None
        self._grid.styles.grid_size_columns = cols
        # narrow: the log goes under the table instead of beside it
        self.query_one("#bottom").set_class(width < 100, "-narrow")

    # ---- events ---------------------------------------------------------------------------
    def _on_event(self, event: Event) -> None:
        """Called by the controller for every event: queue it, and have it shown as soon as
        the refresh budget allows (at most `flush_hz` flushes a second, none when idle)."""
        now = time.perf_counter()
        # an interval is timed from its line's arrival on the SSH channel when the engine
        # stamped it (a replay's events are not: from here)
        self._pending.append((event, now if event.arrived is None else event.arrived))
        wait = self._flush_wait(now)
        if event.kind in LAZY_KINDS:
            wait = max(wait, LAZY_S)
        due = now + wait
        if self._flush_due is not None and self._flush_due <= due:
            return  # a flush soon enough is on its way
        if self._flush_timer is not None:
            self._flush_timer.stop()
        self._flush_due = due
        if wait > 0:
            self._flush_timer = self.set_timer(wait, self._flush_events)
        else:
            self._flush_timer = None
            self.call_later(self._flush_events)  # after the rest of this burst is queued

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
        if self._flush_timer is not None:
            self._flush_timer.stop()
            self._flush_timer = None
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
        if dirty.knobs or dirty.status:
            self._update_knobbar()
        if dirty.status and self.state.progress:
            p = self.state.progress
            bar = self.query_one("#plan-progress", ProgressBar)
            bar.display = True
            bar.update(total=max(int(p.get("total") or 0), 1), progress=int(p.get("done") or 0))
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
                table.update_cell(repr(key), label, cell)

    def _rebuild_phase_table(self, table: DataTable[str]) -> None:
        """A new configuration: lay the table out again, every width explicit (no jitter)."""
        rows = [(repr(k), self.row_label(r), self.state.phase_cells(r))
                for k, r in self.state.phases.items()]
        width = min(max([len("configuration"), *(len(lb) for _, lb, _ in rows)]), 40)
        cursor = table.cursor_row
        table.clear(columns=True)
        table.add_column("configuration", key="config", width=width)
        for label in self.state.pairs:
            title = f"{label} (base)" if label == self.state.base else f"{label} Δ"
            table.add_column(title, key=label, width=CELL_WIDTH)
        for key, label, cells in rows:
            table.add_row(label, *cells, key=key)
        if rows:
            table.move_cursor(row=min(max(cursor, 0), len(rows) - 1), scroll=False)

    def check_action(self, action: str, parameters: tuple[object, ...]) -> bool | None:
        """Once leaving has begun, only ctrl+q (to force out) still acts."""
        return not (self._shutdown_tried and action != "quit")

    def _knobbar_markup(self) -> str:
        scope = self.scopes[self.scope_index]
        shown = "A+B" if scope == "all" and len(self.scopes) == 3 else scope
        chips = [f"[@click=app.cycle_scope][b reverse] {shown} [/][/]"]
        scope_pairs = self._scope_pairs()
        for key, knob in self.knob_keys.items():
            value = self.state.knob_value(knob, scope_pairs)
            chips.append(f"[@click=app.knob('{knob}')][b $accent]{key}[/] {knob}={value}[/]")
        run = "running" if self.state.running else "stopped"
        if self.state.progress:
            p = self.state.progress
            run += f" plan {p.get('done')}/{p.get('total')}, {p.get('eta_s', 0):.0f} s left"
        chips.append(f"[dim]{run}[/]")
        return "  ".join(chips)

    def _update_knobbar(self) -> None:
        self._knobbar.update(self._knobbar_markup(), layout=False)

    # ---- scope and knobs ------------------------------------------------------------------
    def _scope_pairs(self) -> list[str]:
        scope = self.scopes[self.scope_index]
        return list(self.state.pairs) if scope == "all" else [scope]

    def action_cycle_scope(self) -> None:
        self.scope_index = (self.scope_index + 1) % len(self.scopes)
        self._update_knobbar()

    def action_set_scope(self, scope: str) -> None:
        if scope in self.scopes:
            self.scope_index = self.scopes.index(scope)
            self._update_knobbar()

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
        self.log_lines.append(text)
        log.write(text)

    def _fail(self, message: str, pairs: list[str] | None = None) -> None:
        for label in pairs or []:
            if label in self.state.pairs:
                self.state.pairs[label].error = message
                self.state.dirty.pairs.add(label)
        self._log_line(message)
        self.notify(message, severity="error", timeout=6)
        self._apply_dirty()

    # ---- controller calls in workers ------------------------------------------------------
    @work(group="controller", exit_on_error=False)
    async def run_controller(self, method: str, *args: Any) -> None:
        try:
            if method == "start":
                await self.controller.connect()
            await getattr(self.controller, method)(*args)
        except Exception as exc:
            self._fail(f"{method} failed: {type(exc).__name__}: {exc}")

    def action_start_stop(self) -> None:
        self.run_controller("stop" if self.state.running else "start", "continuous")

    def action_start(self) -> None:
        self.run_controller("start", "continuous")

    def action_stop(self) -> None:
        self.run_controller("stop")

    def action_plan(self) -> None:
        """Run the profile's plan: every value of its matrix, with progress and time left."""
        self.restart_in("plan")

    def action_restart(self) -> None:
        self.restart_in("continuous")

    @work(group="controller", exit_on_error=False)
    async def restart_in(self, mode: Mode) -> None:
        try:
            await self.controller.stop()
            await self.controller.start(mode)
        except Exception as exc:
            self._fail(f"{mode} start failed: {type(exc).__name__}: {exc}")

    def action_mark(self) -> None:
        def done(text: object) -> None:
            if isinstance(text, str) and text:
                self.run_controller("mark", text)

        self.push_screen(TextPrompt("Mark the timeline", "what just happened?"), done)

    def action_toggle_log(self) -> None:
        log = self._log_widget
        assert log is not None
        log.display = not log.display

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

    def action_export(self) -> None:
        def chosen(result: object) -> None:
            if isinstance(result, tuple):
                self._write_file("export", result[0], result[1], list(self.events))

        default = str(self.save_dir / f"abtui-{self.profile.name}.md")
        self.push_screen(PathPrompt("Export the session (the report abtui export writes)",
                                    default, EXPORT_FORMATS), chosen)

    def action_save(self) -> None:
        from abtui import store

        def chosen(result: object) -> None:
            if isinstance(result, tuple):
                self._write_file("save", result[0], None, list(self.events))

        # With the engine the session is journalled as it runs (controller.session_path);
        # a replay's is written here, in the same format, on demand.
        default = self.controller.session_path or store.new_session_path(self.profile.name,
                                                                         self.sessions_dir)
        self.push_screen(PathPrompt("Save the session", str(default)), chosen)

    @work(thread=True, exit_on_error=False, group="files")
    def _write_file(self, what: str, path: Path, fmt: str | None, events: list[Event]) -> None:
        """Save (a session journal) or export (md/csv/json, as `abtui export`), off the loop."""
        from abtui.errors import AbtuiError

        try:
            if what == "save":
                from abtui.store import SessionWriter

                writer = SessionWriter(path, profile=self.profile.name,
                                       pairs=list(self.state.pairs))
                for event in events:
                    writer.write(event)
                line = f"saved {len(events)} events to {writer.close()}"
            else:
                from abtui.exports import render
                from abtui.session import Session

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
        self.notify(line)

    def action_compare(self) -> None:
        """This session: the phase table, pairs over time, per-configuration bars."""
        rows = self.phase_rows()
        bars = {label: [r.per_pair[label].mean / 1e9 if label in r.per_pair else 0.0
                        for r in self.state.phases.values()] for label in self.state.pairs}
        self.push_screen(CompareScreen(Comparison(
            f"Compare: {self.profile.name}, phase by phase",
            ["configuration", *self.state.pairs], [[label, *cells] for label, cells in rows],
            {lb: [(t, v / 1e9) for t, v in pts] for lb, pts in self.series.items()},
            [str(i + 1) for i in range(len(rows))], bars)))

    def action_compare_saved(self) -> None:
        """This session against a saved one (`abtui compare`'s table), picked by path."""
        def chosen(result: object) -> None:
            if isinstance(result, tuple):
                self._load_comparison(result[0], list(self.events))

        self.push_screen(PathPrompt("Compare with a saved session (file)", ""), chosen)

    @work(thread=True, exit_on_error=False, group="files")
    def _load_comparison(self, path: Path, events: list[Event]) -> None:
        from abtui import compare
        from abtui.errors import AbtuiError
        from abtui.exports import interval_rows
        from abtui.report import fmt_compare, fmt_mean_sd
        from abtui.session import Session

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
                 fmt_mean_sd(r["left"].throughput, 1e9) if r["left"] else "—",
                 fmt_mean_sd(r["right"].throughput, 1e9) if r["right"] else "—",
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
    async def action_quit(self) -> None:
        if self._shutdown_tried:
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
            await self.controller.shutdown()
        except Exception as exc:
            code = 1
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
