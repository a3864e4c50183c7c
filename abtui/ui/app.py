"""The abtui console: a pane per pair, the knob bar, the phase table and the event log.

The app only views and dispatches: events reach it through abtui.ui.flow.feed (queued, flushed
within a refresh budget by abtui.ui.model.pacing's one scheduler), abtui.ui.flow.record folds them
into abtui.ui.model.state (keeping a bounded window of them), abtui.ui.render.eventlog says them,
and abtui.ui.flow.on_disk has them all on disk for save, export and compare to read in a worker. The
screen is built and laid out by abtui.ui.render.layout, the panes repainted by
abtui.ui.render.panes, the tables built by abtui.ui.render.tables; the keys are
abtui.ui.flow.keymap's, acted on by the main screen (abtui.ui.flow.main_screen) and
abtui.ui.flow.knobkeys, controller calls abtui.ui.flow.control's through the session's lifecycle
(abtui.measure.session, as `abtui run`'s; a knob's flip runs there as a task, never back through the
app; each call posts the typed messages of abtui.ui.flow.messages, handled here with `@on`; a
failure is shown in its pane and the log, never as a traceback), leaving abtui.ui.flow.leaving's,
bench timings abtui.ui.model.bench's.
"""

from __future__ import annotations

import gc
from collections import deque
from collections.abc import Awaitable, Iterable
from pathlib import Path
from typing import TYPE_CHECKING, Any

from textual import on
from textual.app import App, ComposeResult, SystemCommand
from textual.content import Content
from textual.reactive import reactive
from textual.screen import ModalScreen, Screen

from abtui.core.controller import Controller, Mode
from abtui.core.events import Event
from abtui.core.text import visible
from abtui.measure.session import ControllerSession
from abtui.ui.flow.alternation import ConsoleAlternation
from abtui.ui.flow.bisection import ConsoleBisection
from abtui.ui.flow.collector import LiveFreeze
from abtui.ui.flow.control import ControllerCalls
from abtui.ui.flow.feed import FLUSH_HZ, LAZY_S, EventFeed
from abtui.ui.flow.files import SessionFiles
from abtui.ui.flow.keymap import (
    APP_BINDINGS,
    RESERVED,
    assign_keys,
    load_keymap,
    palette_actions,
    system_commands,
)
from abtui.ui.flow.knobkeys import KnobKeys
from abtui.ui.flow.leaving import Leaving
from abtui.ui.flow.main_screen import MainScreen
from abtui.ui.flow.messages import (
    Done,
    Failed,
    KnobSet,
    Leave,
    Notice,
    Said,
    ShowScreen,
    Started,
    VerdictsShown,
)
from abtui.ui.flow.on_disk import EventsOnDisk
from abtui.ui.flow.record import SessionRecord
from abtui.ui.model.bench import BenchProbe
from abtui.ui.model.pacing import Clock, Scheduler, Throttle
from abtui.ui.model.phase_rows import PhaseRow
from abtui.ui.model.state import ConsoleState
from abtui.ui.render import tables
from abtui.ui.render.eventlog import EventLog
from abtui.ui.render.knobbar import knobbar_content, show_progress
from abtui.ui.render.layout import MainLayout, MainWidgets, keys_panel
from abtui.ui.render.panes import PaneBoard, pane_label

if TYPE_CHECKING:
    from abtui.measure.bisect.run import BisectPlan

__all__ = ["AbtuiApp"]

TABLE_HZ = 2  # phase table repaints a second, at most
TABLE_AFTER = 1.5  # flush periods from a burst's first flush to the table's repaint ...
TABLE_CARRY = 0.8  # ... or to a flush that carries it (a burst's flushes come closer)


class AbtuiApp(App[int]):
    """The console on any abtui.core.controller.Controller (the engine, or a replay)."""

    CSS_PATH = "abtui.tcss"
    TITLE = "abtui"
    BINDINGS = APP_BINDINGS
    RESERVED = RESERVED

    scope_index: reactive[int] = reactive(0, init=False)  # where knobs apply: scopes[i]
    running: reactive[bool] = reactive(False, init=False)  # runs going on
    progress: reactive[dict[str, Any] | None] = reactive(None, init=False)  # plan.plan_progress

    def __init__(self, controller: Controller | ControllerSession[Any], *,
                 title: str | None = None,
                 subtitle: str = "", autostart: bool = True, flush_hz: int = FLUSH_HZ,
                 history: int = 120, bench_file: str | None = None,
                 save_dir: str | Path | None = None,
                 sessions_dir: str | Path | None = None,
                 keymap: dict[str, str] | None = None,
                 clock: Clock | None = None, bisection: BisectPlan | None = None) -> None:
        super().__init__()
        # the session's lifecycle (on hosts: the command's, journalled, its engine built on
        # the console's first call; else the console's own on `controller`): connect, start,
        # shutdown go through it
        session = controller if isinstance(controller, ControllerSession) else \
            ControllerSession(controller)
        self.session: ControllerSession[Any] = session
        self.profile = session.profile
        self.state = ConsoleState(self.profile, history=history)
        self.title = title or f"abtui — {self.profile.name}"
        self.sub_title = subtitle
        self.autostart = autostart
        self.scopes = ["all", *self.state.pairs]
        self.knob_keys = assign_keys(self.profile, self.RESERVED)
        # every deferred flush and repaint (abtui.ui.model.pacing); `clock` for tests
        self.scheduler = Scheduler(self.call_later, *([clock] if clock else []))
        self.feed = EventFeed(self.scheduler, self._flush_events, flush_hz,
                              live=lambda: self.is_running)
        self.bench = BenchProbe(bench_file)
        self.calls = ControllerCalls(session, self.state, self.post_message)
        # the flow helpers post what the screen should show (abtui.ui.flow.messages, handled
        # here with @on) and run their calls as this app's workers; none holds the app
        post, work = self.post_message, self.run_worker
        self.alternation = ConsoleAlternation(post, work, self.profile, self.state,
                                              self.calls)  # ctrl+a, ctrl+e
        # `abtui bisect` in the console: it starts in place of measuring only
        self.bisection = ConsoleBisection(post, work, self.profile, self.state,
                                          self.calls, bisection)
        self.knobs = KnobKeys(post, self.profile, self.state, self.alternation,
                              self.calls.flip)  # a knob's key, ctrl+t
        self.exit_flow = Leaving(post, work, self.state, self.calls, self.alternation,
                                 self.bench, self.fail, self.fold_queued,
                                 self.bisection)  # ctrl+q
        self.screen_layout: MainLayout | None = None  # set on mount
        self._main_screen: MainScreen | None = None  # built when Textual asks for it
        self.event_log = EventLog(self.scheduler.clock)
        self.record = SessionRecord(self.state, self.event_log)
        self.live_freeze = LiveFreeze()  # what going live built, out of the collector's way
        # every event on disk (what save, export and compare read): the engine's journal, or
        # the console's own spool; subscribed first, so it has whatever the screen has
        self.on_disk = EventsOnDisk(session.session_path, self.profile.name,
                                      list(self.state.pairs))
        self.files = SessionFiles(post, work, session, self.state, self.on_disk,
                                  self.event_log, width=lambda: self.size.width,
                                  save_dir=save_dir, sessions_dir=sessions_dir)
        # the panes' repaints (TEXT_HZ at most); the numbers and the phase table are repainted
        # in a flush's frame while flushes keep coming, not in frames of their own
        self.board = PaneBoard(self.scheduler, self.state, slack=1 / flush_hz)
        self.text_throttle = self.board.text_throttle
        # the phase table's means move slowly: repainted TABLE_HZ times a second at most, a
        # deferred repaint waiting up to LAZY_S for a flush to carry it (as ping replies do);
        # and never in the frame of the flush that changed it (see _table_later)
        self.table_throttle = Throttle(self.scheduler, TABLE_HZ, self._update_phase_table,
                                       slack=1 / flush_hz, burst=1, lazy=LAZY_S)
        self._table_soon = self.scheduler.wakeup(self.table_throttle)
        self._table_asked = -1e9  # when the flush that scheduled it came
        self._table_intervals: dict[str, int] = {}  # each pair's intervals it last showed
        self.set_keymap(load_keymap() if keymap is None else keymap)
        session.subscribe(self.on_disk.write)
        session.subscribe(self.feed.receive)  # the screen's side: straight into the feed

    @property
    def controller(self) -> Controller:
        """The session's controller (on hosts the engine: built by the session on first use)."""
        return self.session.controller

    @property
    def main_screen(self) -> MainScreen:
        """The console's main screen (abtui.ui.flow.main_screen): the main keys and their
        actions."""
        if self._main_screen is None:
            self._main_screen = MainScreen.for_knobs(self, self.knob_keys)
        return self._main_screen

    def get_default_screen(self) -> Screen[Any]:
        return self.main_screen

    def get_system_commands(self, screen: Screen[Any]) -> Iterable[SystemCommand]:
        """The palette: Textual's own commands, then every console action (run on the main
        screen), knobs included."""
        yield from super().get_system_commands(screen)
        yield from system_commands(self.palette_actions(), self._from_palette)

    def _from_palette(self, action: str) -> Awaitable[Any]:
        """A palette entry acts on the main screen; chosen over the compare screen, that
        screen gives way first (a new comparison takes its place)."""
        from abtui.ui.render.screens import CompareScreen

        if isinstance(self.screen, CompareScreen):
            self.pop_screen()
        return self.run_action(action, self.main_screen)

    def palette_actions(self) -> list[tuple[str, str, str]]:
        return palette_actions(self.knob_keys, self.scopes)

    def compose(self) -> ComposeResult:
        self.widgets = MainWidgets(self.state)  # the render wing's, kept there
        yield from self.widgets.compose()

    def on_mount(self) -> None:
        widgets = self.widgets
        self.event_log.attach(widgets.log)
        self.table = widgets.table
        self._knobbar = widgets.knobbar
        self.board.panes = list(widgets.panes)
        if self.bench.on:  # each pane says when it draws its pair's intervals
            for pane in self.board.panes:
                pane.probe = self.bench
        self.table.rebuild(self.state, self.main_width)
        self.screen_layout = MainLayout(self, self.state, widgets, self.update_knobbar,
                                        lambda: self.main_width)
        self.screen_layout.fit()
        self.call_after_refresh(self._first_frame_shown)
        self._flush_events()  # anything the controller said before the screen existed

    def _first_frame_shown(self) -> None:
        # what start-up built lives as long as the app: keep it out of the collector's
        # full passes, which otherwise stall a busy console for 100+ ms; the collector, off
        # while the console was built (abtui.commands.tui), runs from now on
        gc.freeze()
        gc.enable()
        self.bench.first_frame()
        if self.autostart and self.bisection.plan is not None:
            self.bisection.begin()
        elif self.autostart:  # after the first frame: connecting imports asyncssh (0.3 s)
            self.start("continuous")
        self.table.load_stats(lambda: self.table_throttle(force=True))

    def on_unmount(self) -> None:
        self.calls.cancel_flips()  # as Textual cancels its workers
        self.on_disk.close()  # a spool of the console's own is removed

    def on_resize(self, event: Any) -> None:
        if self.screen_layout is not None:  # resizes can come before mount
            self.screen_layout.fit(event.size.width - self.keys_panel_width(),
                                   event.size.height)

    def keys_panel_width(self) -> int:
        """The columns the keys panel (`?`) takes beside the main screen's widgets (0 when
        it is closed; abtui.ui.render.layout.keys_panel finds it)."""
        if self._main_screen is None:
            return 0
        panel = keys_panel(self._main_screen)
        return panel.outer_size.width if panel is not None else 0

    @property
    def main_width(self) -> int:
        """The columns the main screen's own widgets have: the terminal's, less the keys
        panel's while it is open beside them."""
        return self.size.width - self.keys_panel_width()

    def relayout(self) -> None:
        """Lay the main screen out again for the room it has (the keys panel opened or
        closed beside it)."""
        if self.screen_layout is not None:
            self.screen_layout.fit()

    def on_verdict_panel_changed(self) -> None:
        """The alternation's or bisection's panel shown, hidden or ended: room and keys
        change with it."""
        if self.screen_layout is not None:
            self.screen_layout.fit()
        self.refresh_bindings()

    def on_pair_pane_grew(self) -> None:
        """Longer numbers wrapped a pane's line: the panes may no longer fit in full."""
        if self.screen_layout is not None:
            self.screen_layout.fit()

    # ---- events ---------------------------------------------------------------------------
    def receive(self, event: Event) -> None:
        """An event shown as the controller's are (tests and scripts that drive the console;
        the controller's own go straight to the feed, abtui.ui.flow.feed)."""
        self.feed.receive(event)

    async def settled(self) -> None:
        """Return once every event received is on screen and no repaint is waiting (for
        tests and scripts that drive the console)."""
        await self.scheduler.until(lambda: not self.feed.pending and not self.scheduler.busy)

    async def caught_up(self) -> None:
        """Return once every event received before this call is folded in (events may
        keep coming: for tests and scripts that drive a live console)."""
        target = self.feed.queued
        await self.scheduler.until(lambda: self.feed.taken >= target)

    @property
    def log_lines(self) -> deque[str]:
        """The event log's text (abtui.ui.render.eventlog)."""
        return self.event_log.lines

    def _flush_events(self) -> None:
        log = self.event_log.widget
        batch = self.feed.take(ready=log is not None and log.is_attached)
        if not batch:
            return  # nothing new, not mounted yet, or the console is being taken down
        stamps = self.record.fold(batch)
        if stamps:
            self.live_freeze.live()
            self.bench.arrived(stamps)  # (before the panes take them: see abtui.ui.model.bench)
        self._apply_dirty()

    def post_display_hook(self) -> None:
        """A frame was handed to the terminal: the bench's stamp for the intervals it drew
        (nothing without a bench file)."""
        if self.bench.on and self.bench.waiting:
            self.bench.frame_written(self._unseen)

    def _unseen(self, pair: str) -> bool:
        """The pair's pane is in no frame: scrolled away, or under a screen that hides it."""
        pane = next((p for p in self.board.panes if p.state.label == pair), None)
        if pane is None or not pane.is_on_screen:
            return True
        return pane.screen is not self.screen and not isinstance(self.screen, ModalScreen)

    def _apply_dirty(self) -> None:
        dirty = self.state.take_dirty()
        if not dirty:
            return
        self.board.changed(dirty.pairs, now=dirty.knobs)  # a knob's new value shows at once
        rows_changed = False
        if dirty.phases:
            rows_changed = self.table.rows_changed(self.state)
            if rows_changed:
                self.table_throttle(force=True)  # a row came, went or swapped: at once
            else:
                self._table_later()
        # a value's length may rewrap bar and panes; on a small screen the table's rows take
        # room from the panes (a new phase's first interval can come a flush after its knob)
        if (dirty.knobs or rows_changed) and self.screen_layout:
            self.screen_layout.fit()
        if dirty.bisect:
            self.bisection.show()
        if dirty.verdicts:
            self.alternation.show_recorded(self.state.recorded_verdicts)
        self.running = self.state.running
        self.progress = self.plan_progress()
        self.exit_flow.show()

    def _table_later(self) -> None:
        """The table's repaint after the burst of flushes that changed it: TABLE_AFTER flush
        periods after the burst's first flush, or with the first flush at least
        TABLE_CARRY periods after it (a stream's next tick: 8 pairs at 0.1 s). In an
        interval's flush the table widens that frame's rectangle (the compositor renders the
        box around every dirty region), on the interval's path to the screen. Measured with
        the table redrawing only its changed row (2 pairs live, thread CPU): its own frame
        2.0-2.6 ms, 3 frames a second; repainted in both intervals' frames instead, 2 frames
        a second at 3.5-3.8 ms each and 0.4 ms more per flush, no less CPU in all and more on
        the path. At 1 s the pairs' intervals come 20-55 ms apart, and the table, repainted
        after both, shows both.

        Once every pair has an interval the table does not show yet, the flush that brought
        the last of them carries it: the table's rows are in that interval's frame, and a
        2-pair console at 1 s makes 2 frames a second instead of 3 (the frame it joins grows
        by the table's row; its own frame, 1.9 ms of CPU, is gone). A pair whose intervals
        stopped (failed, idle) leaves the table to the timer, as before."""
        now = self.scheduler.clock()
        period = 1 / self.feed.flush_hz
        if self._table_caught_up():
            self._table_soon.cancel()
            self.table_throttle()
        elif not self._table_soon.pending:
            self._table_asked = now
            self._table_soon.at(now + TABLE_AFTER * period)
        elif now - self._table_asked >= TABLE_CARRY * period:
            self._table_soon.cancel()
            self.table_throttle()

    def watch_running(self) -> None:
        self.update_knobbar()

    def watch_progress(self, progress: dict[str, Any] | None) -> None:
        show_progress(self.widgets.progress, progress)
        self.update_knobbar()

    def row_label(self, row: PhaseRow) -> str:
        return self.state.row_label(row)

    def phase_rows(self) -> list[tuple[str, list[str]]]:
        return tables.phase_rows(self.state)

    def _table_caught_up(self) -> bool:
        """Every pair has had an interval since the table's last repaint."""
        shown = self._table_intervals
        return all(ps.intervals > shown.get(label, 0)
                   for label, ps in self.state.pairs.items())

    def _update_phase_table(self) -> None:
        self._table_intervals = {label: ps.intervals for label, ps in self.state.pairs.items()}
        self.table.refresh_cells(self.state, self.main_width)

    def check_action(self, action: str, parameters: tuple[object, ...]) -> bool | None:
        """Once leaving has begun, only ctrl+q (to force out) still acts (the main screen's
        keys check the same: abtui.ui.flow.main_screen)."""
        return action == "quit" if self.exit_flow.begun else True

    def knobbar(self, width: int | None = None) -> Content:
        """The knob bar's lines for the screen's width (or `width` columns)."""
        return knobbar_content(self.scopes[self.scope_index], self.scope_pairs(),
                               self.knob_keys, self.state, self.plan_progress(),
                               (width or self.main_width) - 2)  # less the padding

    def update_knobbar(self, width: int | None = None) -> int:
        return self._knobbar.show(self.knobbar(width))

    # ---- scope and knobs ------------------------------------------------------------------
    def scope_pairs(self) -> list[str]:
        """The pairs knobs apply to: the scope's."""
        scope = self.scopes[self.scope_index]
        return list(self.state.pairs) if scope == "all" else [scope]

    def cycle_scope(self) -> None:
        self.scope_index = (self.scope_index + 1) % len(self.scopes)

    def set_scope(self, scope: str) -> None:
        if scope in self.scopes:
            self.scope_index = self.scopes.index(scope)

    def watch_scope_index(self) -> None:
        """Knobs now apply to this scope: its panes are outlined, and a single pair's pane
        is scrolled into sight (tab reaches every pane, however many scroll off)."""
        self.update_knobbar()
        self.board.outline(set(self.scope_pairs()))

    def on_click(self, event: Any) -> None:
        """A click in a pane scopes the knobs to its pair."""
        if (label := pane_label(event.widget)) is not None:
            self.set_scope(label)

    def say(self, line: str) -> None:
        """A line in the event log, stamped like the events'."""
        self.event_log.say(line)

    def fail(self, message: str, pairs: list[str] | None = None) -> None:
        self.state.pairs_failed(pairs or [], message)
        self.say(message)
        self.notify(visible(message), severity="error", timeout=6, markup=False)
        self._apply_dirty()

    # ---- controller calls (abtui.ui.flow.control), each in a worker -----------------------
    def start(self, mode: Mode) -> None:
        """Measure in `mode` (after any controller call asked before)."""
        self.run_worker(self.calls.start(mode), group="controller", exit_on_error=False)

    def plan_progress(self) -> dict[str, Any] | None:
        return self.calls.plan_progress()

    @on(Said)
    def _said(self, message: Said) -> None:
        self.say(message.line)

    @on(Failed)
    def _failed(self, message: Failed) -> None:
        self.fail(message.text, message.pairs)

    @on(Started)
    def _started(self, message: Started) -> None:
        self.progress = None  # the last plan's
        self.update_knobbar()

    @on(KnobSet)
    def _knob_set(self, message: KnobSet) -> None:
        for label in message.pairs:
            self.state.pairs[label].error = ""

    @on(Done)
    def _done(self, message: Done) -> None:
        self.done(message.line)

    @on(Notice)
    def _notice(self, message: Notice) -> None:
        self.notify(message.text, severity="warning" if message.warning else "information",
                    timeout=message.timeout)

    @on(VerdictsShown)
    def _verdicts_shown(self, message: VerdictsShown) -> None:
        """An alternation's or a bisection's panel (abtui.ui.flow.alternation, .bisection):
        one panel, drawn by the render wing's widget."""
        self.widgets.verdicts.show(message.lines, message.ended)

    @on(ShowScreen)
    def _show_screen(self, message: ShowScreen) -> None:
        self.push_screen(message.screen, message.chosen)

    @on(Leave)
    def _leave(self, message: Leave) -> None:
        self.exit(message.code, return_code=message.code)

    def toggle_log(self) -> None:
        """ctrl+l: the event log shown or hidden (on a short narrow screen, whole or only its
        latest line), the layout fitted to it."""
        if self.screen_layout is not None:
            self.screen_layout.toggle_log()

    def deliver_screenshot(self, filename: str | None = None, path: str | None = None,
                           time_format: str | None = None) -> str | None:
        """The palette's Screenshot (abtui.ui.flow.files: in the sessions folder)."""
        self.files.screenshot(self.save_screenshot, filename, path, time_format)
        return None

    def screen_text(self) -> str:
        """The screen as plain text, laid out as a screenshot shows it (for scripts and the
        lab walk that check what is in sight)."""
        from abtui.ui.render.screen_text import screen_text  # (html: not before the frame)

        return screen_text(self)  # (abtui.ui.render.screen_text: Textual's public SVG)

    # ---- files (abtui.ui.flow.files) ---------------------------------------------------------
    def fold_queued(self) -> None:
        """Fold in the events still queued for the screen, now."""
        self._flush_events()

    @property
    def recent(self) -> deque[Event]:
        """The latest events received (abtui.ui.flow.record's window; all of them are in
        `on_disk`)."""
        return self.record.recent

    def done(self, line: str) -> None:
        """What a dialog did: said in the log and a notification."""
        self.say(line)
        self.notify(visible(line), markup=False)

    # ---- leaving --------------------------------------------------------------------------
    @property
    def leaving(self) -> bool:
        """ctrl+q (or a signal) has started restoring the hosts."""
        return self.exit_flow.begun

    async def action_quit(self) -> None:
        self.exit_flow.quit()
