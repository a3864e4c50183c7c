"""The console's frames do no work that changes nothing on screen: a pane that grows costs
the screen the layouts Textual makes for it (the pane's, then one its widgets' new sizes ask
for), not a third for the fit that follows it; a fit that changes nothing lays nothing out."""

from __future__ import annotations

import dataclasses

import pytest

from abtui.core.events import Event, EventKind
from abtui.ui.render.widgets import PairPane
from tests.ui.console_kit import make_app, replayed, settle

pytestmark = pytest.mark.ui


async def test_a_pane_that_grows_costs_no_layout_of_the_console_s_own() -> None:
    app = make_app(pairs=4, intervals=2)
    async with app.run_test(size=(160, 48)) as pilot:
        await replayed(pilot, 2)
        await settle(pilot)
        screen = app.screen
        layouts: list[bool] = []
        own = screen._refresh_layout
        screen._refresh_layout = (  # type: ignore[method-assign]
            lambda *a, **k: (layouts.append(True), own(*a, **k))[1])
        pane = app.query_one("#pane-A", PairPane)
        rows = pane.size.height
        last = [e for e in app.recent if e.kind is EventKind.INTERVAL][-4:]
        for ev in last:  # a retransmit count long enough to wrap the TCP line
            app.receive(Event.of(dataclasses.replace(
                ev.payload, retransmits=123456789012345), ev.t + 1, ev.pair, ev.host))
        await settle(pilot)
        await pilot.pause()
        assert "123456789012345" in pane.text("tcp")
        assert pane.size.height > rows  # it grew, and the screen was laid out for it
        assert len(layouts) == 2, f"{len(layouts)} layouts"
        app.screen_layout.fit()  # nothing changed: nothing laid out
        await settle(pilot)
        await pilot.pause()
        assert len(layouts) == 2, f"{len(layouts)} layouts"


async def test_the_plan_s_progress_bar_runs_no_timer_that_shows_nothing() -> None:
    """Textual's progress bar refreshes its ETA from a timer every second; the console's
    shows no ETA, so its bar has no timer (a wake-up a second of the console's for nothing),
    and still shows a plan's progress."""
    from textual.widgets import ProgressBar

    from abtui.ui.render.knobbar import show_progress

    app = make_app(pairs=2, intervals=2)
    async with app.run_test(size=(160, 48)) as pilot:
        await replayed(pilot, 2)
        bar = app.query_one("#plan-progress", ProgressBar)
        assert not [t.name for t in bar._timers], [t.name for t in bar._timers]
        show_progress(bar, {"total": 4, "done": 1})
        await pilot.pause()
        assert bar.display and bar.percentage == 0.25
        assert "25%" in app.screen_text()
        show_progress(bar, None)
        await pilot.pause()
        assert not bar.display
