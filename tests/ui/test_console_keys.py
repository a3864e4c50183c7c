"""The console's keys as a user presses them, on a replay: plan progress before its first
estimate, space stopping and starting, keys behind a dialog, and the screen following the
controller however the flushes are timed."""

from __future__ import annotations

import pytest
from textual.widgets import Input

from abtui.core.events import Event, Mark, Progress
from abtui.measure.replay.synthetic import T0, synthetic_profile
from abtui.ui.app import AbtuiApp
from abtui.ui.render.screens import TextPrompt, TunnelSwitcher
from tests.ui.console_kit import FakeClock, SpyController, make_app, replayed, settle, until

pytestmark = pytest.mark.ui


def log_text(app: AbtuiApp) -> str:
    return "\n".join(app.log_lines)


async def test_plan_progress_without_an_estimate_yet_shows() -> None:
    """The engine's first PROGRESS has eta_s None (nothing measured yet)."""
    app = make_app(intervals=2)
    async with app.run_test() as pilot:
        await replayed(pilot, 2)
        app.calls.mode = "plan"  # as after `p`
        app.receive(Event.of(Progress(done=0, total=4, eta_s=None), T0 + 5))
        await until(pilot, lambda: app.state.progress is not None)
        assert app.is_running
        assert "plan 0/4" in app.knobbar().plain
        assert "s left" not in app.knobbar().plain
        app.receive(Event.of(Progress(done=1, total=4, eta_s=29.6), T0 + 6))
        await until(pilot, lambda: "plan 1/4, 30 s left" in app.knobbar().plain)


async def test_space_stops_then_starts_again() -> None:
    ctl = SpyController(synthetic_profile(2), speed=50.0, seed=1)  # live, 20 ms/interval
    app = AbtuiApp(ctl)
    async with app.run_test() as pilot:
        await until(pilot, lambda: app.state.pairs["A"].intervals >= 3)
        await pilot.press("space")
        await until(pilot, lambda: not ctl.running and not app.state.running)
        assert "failed" not in log_text(app)
        n = app.state.pairs["A"].intervals
        await pilot.press("space")
        await until(pilot, lambda: app.state.pairs["A"].intervals >= n + 3)
        assert ctl.running and "failed" not in log_text(app)
        await pilot.press("space")
        await until(pilot, lambda: not ctl.running)


async def test_keys_behind_a_dialog_do_not_act() -> None:
    """Tab moves focus inside a dialog; the scope and knobs behind it stay as they are."""
    app = make_app(intervals=2)
    async with app.run_test() as pilot:
        await replayed(pilot, 2)
        await pilot.press("m")
        assert isinstance(app.screen, TextPrompt)
        await pilot.press("tab", "tab")
        assert app.scope_index == 0
        await pilot.press("escape")
        await pilot.press("ctrl+t")
        assert isinstance(app.screen, TunnelSwitcher)
        await pilot.press("tab", "w", "space")
        await settle(pilot)
        assert app.scope_index == 0
        assert not [c for c in app.controller.calls if c[0] == "set_knob"]
        await pilot.press("escape")
        await pilot.press("tab")  # on the main screen tab still cycles the scope
        assert app.scope_index == 1


async def test_a_mark_typed_in_the_dialog_reaches_the_log() -> None:
    app = make_app(intervals=2)
    async with app.run_test() as pilot:
        await replayed(pilot, 2)
        await pilot.press("m")
        app.screen.query_one("#text", Input).value = "cable swapped"
        await pilot.press("enter")
        await until(pilot, lambda: "mark: cable swapped" in log_text(app))


@pytest.mark.parametrize("delay", [1e-9, 1e-4])
async def test_a_flush_due_in_a_tiny_delay_still_happens(delay: float) -> None:
    """Textual's one-shot timer never fires when its delay is shorter than the time between
    two clock readings in its task (1e-7 s and less always; longer ones when the process is
    descheduled); a flush scheduled that way must still happen, and later ones too."""

    clock = FakeClock()
    app = make_app(intervals=1, clock=clock)
    async with app.run_test() as pilot:
        await replayed(pilot, 1)
        period = 1 / app.feed.flush_hz
        shown = app.record.received
        # one flush now; the next event arrives `delay` before the next flush is allowed
        app.receive(Event.of(Mark(text="first"), T0 + 2))
        await until(pilot, lambda: app.record.received == shown + 1, timeout=2)
        clock.now += period - delay
        app.receive(Event.of(Mark(text="second"), T0 + 3))
        await until(pilot, lambda: app.record.received == shown + 2, timeout=2)
        clock.now += 1.0
        app.receive(Event.of(Mark(text="third"), T0 + 4))
        await until(pilot, lambda: app.record.received == shown + 3, timeout=2)
        assert "mark: third" in log_text(app)


async def test_pane_numbers_follow_when_their_repaint_falls_due_in_a_tiny_delay() -> None:
    clock = FakeClock()
    app = make_app(intervals=1, clock=clock)
    async with app.run_test() as pilot:
        await replayed(pilot, 1)
        throttle = app.text_throttle
        for _ in range(throttle.burst):
            throttle(force=True)  # runs now, at the frozen clock: no run left
        clock.now += 1 / throttle.hz - 1e-9
        ran = []
        throttle.action = lambda: ran.append(1)
        throttle()
        await until(pilot, lambda: bool(ran), timeout=2)
        assert not throttle.pending


async def test_after_a_plan_space_measures_continuously_without_the_plans_progress() -> None:
    from textual.widgets import ProgressBar

    ctl = SpyController(synthetic_profile(2), speed=200.0)
    app = AbtuiApp(ctl, autostart=False)
    async with app.run_test() as pilot:
        await pilot.press("p")
        await until(pilot, lambda: (app.state.progress or {}).get("done") == 4
                    and not ctl.running)
        assert "plan 4/4" in app.knobbar().plain
        await pilot.press("space")  # the plan is over: space starts measuring again
        await until(pilot, lambda: app.calls.mode == "continuous" and app.state.running)
        assert "plan" not in app.knobbar().plain
        assert not app.query_one("#plan-progress", ProgressBar).display
        assert "failed" not in log_text(app)
        await pilot.press("space")
        await until(pilot, lambda: not ctl.running)


async def test_clicks_on_the_knob_bar_scope_and_flip_on_the_main_screen() -> None:
    """The bar's chips are links to the main screen's actions (abtui.ui.flow.main_screen)."""
    from abtui.ui.render.knobbar import KnobBar

    app = make_app(intervals=2)
    async with app.run_test(size=(120, 36)) as pilot:
        await replayed(pilot, 2)
        bar = app.query_one("#knobbar", KnobBar)
        first = app.knobbar().plain.splitlines()[0]
        await pilot.click(bar, offset=(1 + first.index(" A+B ") + 1, 0))  # padding 0 1
        await until(pilot, lambda: app.scope_index == 1)
        first = app.knobbar().plain.splitlines()[0]
        await pilot.click(bar, offset=(1 + first.index("tso=") + 1, 0))
        await until(pilot, lambda: any(c[0] == "set_knob" for c in app.controller.calls))
        assert [c for c in app.controller.calls if c[0] == "set_knob"][-1][:2] == ("set_knob",
                                                                                   "tso")
