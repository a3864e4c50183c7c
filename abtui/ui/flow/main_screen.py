"""The console's main screen: it owns the main keys (scope, runs, knobs, dialogs) and their
actions, so they act on it alone and never behind a dialog; the app keeps what is the app's
(the controller, the event feed, the screens, ctrl+q): a dialog or a notice is posted to it as a
message (abtui.ui.flow.messages). Given the console it drives as a
`Console` (what its actions use), it never imports the app."""

from __future__ import annotations

from typing import ClassVar, Protocol

from textual import events, on
from textual.binding import Binding, BindingType
from textual.screen import Screen
from textual.widget import Widget

from abtui.core.controller import Mode
from abtui.ui.flow.alternation import ConsoleAlternation
from abtui.ui.flow.bisection import ConsoleBisection
from abtui.ui.flow.control import ControllerCalls
from abtui.ui.flow.files import SessionFiles
from abtui.ui.flow.keymap import SCOPE_BINDINGS, SCREEN_BINDINGS, knob_binding_id
from abtui.ui.flow.knobkeys import KnobKeys
from abtui.ui.flow.messages import Notice, ShowScreen
from abtui.ui.render.layout import keys_panel
from abtui.ui.render.textual_privates import draw_now


class Console(Protocol):
    """What the main screen's actions act on (abtui.ui.app.AbtuiApp is one)."""

    calls: ControllerCalls
    alternation: ConsoleAlternation
    bisection: ConsoleBisection
    knobs: KnobKeys
    files: SessionFiles

    @property
    def leaving(self) -> bool: ...

    def start(self, mode: Mode) -> None: ...

    def cycle_scope(self) -> None: ...

    def set_scope(self, scope: str) -> None: ...

    def scope_pairs(self) -> list[str]: ...

    def toggle_log(self) -> None: ...

    def relayout(self) -> None: ...


class MainScreen(Screen[None]):
    """The main screen; `for_knobs` gives it the knob keys as bindings of its own, so they act
    (and show in the footer and the keys panel) on it alone, never behind a dialog."""

    BINDINGS: ClassVar[list[BindingType]] = []
    BINDING_GROUP_TITLE = "abtui"  # the keys panel's heading over the console's own keys

    def __init__(self, console: Console) -> None:
        super().__init__(id="_default")
        self.console = console
        self._focus_before: Widget | None = None  # what had the focus before `?`

    @classmethod
    def for_knobs(cls, console: Console, knob_keys: dict[str, str]) -> MainScreen:
        # the app's ctrl+q (a priority binding) takes this one's place in the footer: first
        quit_ = Binding("ctrl+q", "app.quit", "Quit", id="quit")
        knobs = [Binding(key, f"knob('{knob}')", knob, id=knob_binding_id(knob))
                 for key, knob in knob_keys.items()]
        bindings: list[BindingType] = [quit_, *SCOPE_BINDINGS, *SCREEN_BINDINGS, *knobs]
        return type("KnobScreen", (cls,), {"BINDINGS": bindings})(console)

    @on(events.Idle)
    def _draw_paced(self) -> None:
        """An interval's chart, the table: drawn now, not on the update timer's tick (before
        Textual's own idle handler, which would resume that timer)."""
        draw_now(self)

    def check_action(self, action: str, parameters: tuple[object, ...]) -> bool | None:
        """Once leaving has begun nothing here acts (ctrl+q, the app's, still does); while a
        dialog or the compare screen is up, its keys are its own (tab moves the focus in a
        dialog, letters type), never the scope's or a knob's behind it (the palette's
        entries run here too)."""
        if action == "close_verdicts" and not (self.console.alternation.ended()
                                               or self.console.bisection.ended()):
            return False  # nothing to close (a bisection running): not in the footer either
        return not self.console.leaving and self.app.screen is self

    # ---- scope and knobs ------------------------------------------------------------------
    def action_cycle_scope(self) -> None:
        self.console.cycle_scope()

    def action_set_scope(self, scope: str) -> None:
        self.console.set_scope(scope)

    def action_knob(self, name: str) -> None:
        if not self._bisecting():
            self.console.knobs.flip(name, self.console.scope_pairs())

    def action_tunnel(self) -> None:
        if not self._bisecting():
            self.console.knobs.tunnel(self.console.scope_pairs())

    def _bisecting(self) -> bool:
        """A bisection runs (abtui.ui.flow.bisection): it sets the hosts and measures until its
        answer, so the keys that would too are refused, and said so."""
        if not self.console.bisection.running:
            return False
        self.app.post_message(Notice("a bisection is running: it sets the hosts and measures "
                                     "until its answer (ctrl+q stops it and sets the hosts "
                                     "back)", warning=True, timeout=4))
        return True

    # ---- runs (abtui.ui.flow.control), each in a worker ----------------------------------------
    def action_start_stop(self) -> None:
        """space: stop while measuring, else start measuring continuously."""
        if self._bisecting():
            return
        if self.console.calls.measuring():
            self.action_stop()
        else:
            self.console.start("continuous")

    def action_start(self) -> None:
        if not self._bisecting():
            self.console.start("continuous")

    def action_stop(self) -> None:
        if not self._bisecting():
            self.app.run_worker(self.console.calls.stop(), group="controller",
                                exit_on_error=False)

    def action_plan(self) -> None:
        """Run the profile's plan: every value of its matrix, with progress and time left."""
        if not self._bisecting():
            self.console.start("plan")

    def action_restart(self) -> None:
        if not self._bisecting():
            self.console.start("continuous")

    def action_mark(self) -> None:
        """m: ask what just happened, then have the controller mark the timeline."""
        def done(text: object) -> None:
            if isinstance(text, str) and text:
                self.app.run_worker(self.console.calls.mark(text), group="controller",
                                    exit_on_error=False)

        from abtui.ui.render.screens import TextPrompt  # (its first use: not in the first frame)

        self.app.post_message(ShowScreen(TextPrompt("Mark the timeline",
                                                    "what just happened?"), done))

    def action_alternate(self) -> None:
        """Alternate the knob last flipped with a live verdict (abtui.ui.flow.alternation), or
        stop."""
        if not self._bisecting():
            self.console.alternation.toggle()

    def action_close_verdicts(self) -> None:
        """escape: an ended alternation's or bisection's panel closed, its rows given
        back."""
        self.console.alternation.close()
        self.console.bisection.close()

    def action_min_effect(self) -> None:
        self.console.alternation.next_min_effect()

    def action_why(self) -> None:
        """ctrl+y: which functions moved between the alternated values (their profiles)."""
        self.console.alternation.toggle_why()

    # ---- the screen -----------------------------------------------------------------------
    def action_toggle_log(self) -> None:
        self.console.toggle_log()

    def action_help(self) -> None:
        """Textual's keys panel, abtui's keys first (the focus is taken off the table while
        it is open: the focused widget's cursor keys would lead the list, before every key
        of abtui's), knobs included; again hides it and gives the focus back."""
        if keys_panel(self) is not None:
            self.app.action_hide_help_panel()
            if self._focus_before is not None and self._focus_before.is_attached:
                self.set_focus(self._focus_before)
            self._focus_before = None
        else:
            self._focus_before = self.focused
            self.set_focus(None)
            self.app.action_show_help_panel()
        # the screen's widgets laid out again for the room the panel leaves them
        self.call_after_refresh(self.console.relayout)

    # ---- files (abtui.ui.flow.files) -----------------------------------------------------------
    def action_export(self) -> None:
        self.console.files.export()

    def action_save(self) -> None:
        self.console.files.save()

    def action_save_setup(self) -> None:
        self.console.files.save_setup()

    def action_compare_saved(self) -> None:
        self.console.files.compare_saved()

    def action_compare(self) -> None:
        """This session: the phase table, pairs over time, per-configuration bars."""
        self.console.files.compare_session()
