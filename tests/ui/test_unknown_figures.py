"""The console's small numbers on screen: a figure nobody measured reads `—` (the phase
table, the compare screen's table and bars), never 0, and the pane's mean is the phase's
run-level figure, what every table prints."""

from __future__ import annotations

import pytest
from textual.widgets import DataTable

from abtui.core.events import Event, EventKind, IntervalMeasured
from abtui.core.numbers import sig
from abtui.measure.replay.synthetic import T0, synthetic_events, synthetic_profile
from abtui.ui.render.screens import CompareScreen
from abtui.ui.render.widgets import PairPane
from tests.ui.console_kit import make_app, until

pytestmark = pytest.mark.ui

INTERVALS = 10  # per pair; the knob flips half-way


def _b_silent_after_the_flip() -> list[Event]:
    """Two pairs; after the flip, pair B delivers no interval (a stalled or failed pair)."""
    return [e for e in synthetic_events(synthetic_profile(2), intervals=INTERVALS, seed=7)
            if not (e.kind is EventKind.INTERVAL and e.pair == "B" and e.payload.phase == 1)]


async def test_an_unmeasured_cell_is_a_dash_in_the_table_and_no_bar_on_the_compare_screen(
        ) -> None:
    app = make_app(events=_b_silent_after_the_flip())
    async with app.run_test(size=(120, 36)) as pilot:
        await until(pilot, lambda: app.state.intervals_seen >= INTERVALS * 3 // 2
                    and not app.controller.running)  # type: ignore[attr-defined]
        await app.settled()
        table = app.query_one("#phases", DataTable)
        assert [str(c) for c in table.get_row_at(1)][2] == "—"
        await pilot.press("ctrl+o")
        await until(pilot, lambda: isinstance(app.screen, CompareScreen))
        screen = app.screen
        assert isinstance(screen, CompareScreen)
        cells = [str(c) for c in screen.query_one("#compare-table", DataTable).get_row_at(1)]
        assert cells[2] == "—"
        bars = screen.comparison.bars
        assert bars["A"][1] is not None and bars["A"][1] > 1 and bars["B"][1] is None
        assert "mean Gbit/s per row (—: not measured)" in app.screen_text()


async def test_the_pane_s_mean_is_the_phase_s_run_level_figure() -> None:
    """A short last interval (0.1 s at 10 Mbit/s) weighs a tenth of a second: the pane's mean
    moves as little as the phase table's figure does, not as the plain mean of rates."""
    app = make_app(intervals=4)
    async with app.run_test(size=(120, 36)) as pilot:
        await until(pilot, lambda: app.state.intervals_seen >= 8
                    and not app.controller.running)  # type: ignore[attr-defined]
        app.receive(Event.of(IntervalMeasured.from_data({
            "run": 0, "phase": 1, "start": 4.0, "end": 4.1, "bits_per_second": 1e7,
            "omitted": False, "straddles": False}), T0 + 4.1, pair="A"))
        await until(pilot, lambda: app.state.intervals_seen >= 9)
        await app.settled()
        pane = app.state.pairs["A"]
        rate = pane.phase_rate
        assert rate is not None and pane.phase.mean < rate * 0.85  # the two differ here
        numbers = app.query_one("#pane-A", PairPane).text("bps-label")
        # the pane's rates share the unit of its smallest (the 10 Mbit/s interval): Mbit/s
        assert numbers.startswith("10.0 Mbit/s") and f"mean {sig(rate / 1e6)}" in numbers, \
            numbers
        row = next(r for r in app.state.phases.values() if "A" in r.segments
                   and pane.segment in r.segments["A"])
        assert app.state.phase_cells(row)[0].split()[0] == sig(rate / 1e9)  # the table's Gbit/s
