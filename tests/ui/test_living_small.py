"""A console you can live in at 80×24 (and nothing lost at 160×48): the panes keep their kernel
line, the phase table keeps rows and the log its latest line, the footer names the keys panel
within 80 columns, and an ended alternation's verdict panel is shown whole and closed with a
key the footer shows (escape)."""

from __future__ import annotations

import pytest
from textual.widgets import DataTable

from abtui.core.events import Facts
from abtui.measure.replay.controller import ReplayController
from abtui.measure.replay.synthetic import synthetic_profile
from abtui.ui.app import AbtuiApp
from abtui.ui.render.layout import TABLE_MIN
from abtui.ui.render.widgets import PairPane
from tests.ui.console_kit import alternating, make_app, replayed, settle, until
from tests.ui.test_small_screen import fully_shown, with_configs

pytestmark = pytest.mark.ui

SIZES = [(80, 24), (160, 48)]


def words(text: str) -> str:
    return " ".join(text.split())


def footer(app) -> str:  # type: ignore[no-untyped-def]
    return app.screen_text().splitlines()[-1]


@pytest.mark.parametrize("pairs", [2, 4])
@pytest.mark.parametrize("size", SIZES)
async def test_kernel_lines_table_rows_log_line_and_the_keys_panel_in_sight(
        size: tuple[int, int], pairs: int) -> None:
    app = make_app(pairs=pairs, intervals=2)
    async with app.run_test(size=size) as pilot:
        await with_configs(pilot)
        for label in app.state.pairs:
            while app.scopes[app.scope_index] != label:
                await pilot.press("tab")
            await settle(pilot)
            pane = app.query_one(f"#pane-{label}", PairPane)
            assert pane.shows("head") and fully_shown(app, pane, "head"), \
                (label, pane.band_region("head"))
            assert "kernel 6.1.0-" in pane.text("head")
        table = app.query_one("#phases", DataTable)
        assert fully_shown(app, table)
        assert table.region.height >= 1 + min(table.row_count, 4)  # header and 4 rows
        log = app.query_one("#log")
        screen = app.screen_text().splitlines()
        assert words(app.log_lines[-1]) in words(" ".join(screen[log.region.y:
                                                                 log.region.bottom]))
        assert "? Keys" in footer(app)


async def alternated(pilot) -> None:  # type: ignore[no-untyped-def]
    """tcp_wmem alternated on a live synthetic stream until the rule's verdict."""
    app = pilot.app
    await alternating(pilot, 0.05)
    await until(pilot, lambda: app.alternation.live is not None
                and app.alternation.live.why == "verdict", timeout=30)


@pytest.mark.parametrize("size", SIZES)
async def test_an_ended_alternation_s_panel_is_whole_and_escape_closes_it(
        size: tuple[int, int]) -> None:
    app = AbtuiApp(ReplayController(synthetic_profile(2), speed=400), title="abtui — test")
    async with app.run_test(size=size) as pilot:
        await alternated(pilot)
        panel = app.query_one("#verdicts")
        await until(pilot, lambda: "esc Close verdicts" in footer(app))
        assert panel.display and fully_shown(app, panel)
        shown = words(" ".join(app.screen_text().splitlines()[
            panel.region.y:panel.region.bottom]))
        for line in app.alternation.live.lines():  # type: ignore[union-attr]
            assert words(line) in shown, (line, shown)
        table = app.query_one("#phases", DataTable)
        assert fully_shown(app, table)
        assert table.region.height >= min(TABLE_MIN, 1 + table.row_count)
        for label in app.state.pairs:  # the panes' kernel lines stay
            assert fully_shown(app, app.query_one(f"#pane-{label}", PairPane), "head")
        await pilot.press("escape")
        await until(pilot, lambda: not panel.display)
        await until(pilot, lambda: "Close verdicts" not in footer(app))
        assert app.alternation.live is None
        await pilot.press("escape")  # nothing to close: nothing happens
        assert not panel.display


async def test_escape_does_not_close_a_running_alternation_s_panel() -> None:
    app = AbtuiApp(ReplayController(synthetic_profile(2), speed=400), title="abtui — test")
    async with app.run_test(size=(80, 24)) as pilot:
        await alternating(pilot, 5.0)
        live = app.alternation
        await until(pilot, lambda: live.live is not None and live.live.running)
        assert "Close verdicts" not in footer(app)
        await pilot.press("escape")
        await pilot.pause()
        assert app.query_one("#verdicts").display and live.live is not None
        await pilot.press("ctrl+a")  # stop it
        await until(pilot, lambda: "esc Close verdicts" in footer(app))


async def test_the_log_collapsed_at_80x24_shows_a_long_latest_line_whole() -> None:
    app = make_app(pairs=2, intervals=2)
    async with app.run_test(size=(80, 24)) as pilot:
        await replayed(pilot, 2)
        line = "start failed: " + " ".join(f"word{i}" for i in range(40))
        app.fail(line)
        await settle(pilot)
        log = app.query_one("#log")
        assert log.region.height >= 4  # its border and the line's three rows
        screen = app.screen_text().splitlines()
        assert words(line) in words(" ".join(screen[log.region.y:log.region.bottom]))


async def test_a_pane_made_compact_keeps_no_blank_row_of_its_longer_head() -> None:
    """A kernel line too long for the pane with the tunnel beside it takes two rows; made
    compact (the tunnel goes to the knobs' line) it takes one, with no padding row left."""
    from abtui.core.events import Event

    app = make_app(pairs=2, intervals=2)
    async with app.run_test(size=(80, 40)) as pilot:
        await replayed(pilot, 2)
        t = app.event_log.last_t or 0.0
        for pair in app.state.pairs.values():
            for host in (pair.sender, pair.receiver):
                app.receive(Event.of(Facts(facts={
                    "os": "Linux", "kernel_release": "6.18.44-fc-v1045-long"}), t, host=host))
        await settle(pilot)
        pane = app.query_one("#pane-A", PairPane)
        assert pane.band_region("head").height == 2  # kernel, then the tunnel
        await pilot.resize_terminal(80, 20)
        await settle(pilot)
        assert pane.has_class("-compact")
        assert pane.band_region("head").height == 1 == len(pane.rows("head"))


async def test_the_keys_panel_at_80x24_leaves_the_knob_bar_whole_beside_it() -> None:
    """`?` opens the keys panel beside the screen: the knob bar and panes are laid out again
    for the columns left (every knob still in sight), and again when it closes."""
    from textual.widgets import Static

    from tests.ui.test_small_screen import lines_of

    app = make_app(pairs=2, intervals=2)
    async with app.run_test(size=(80, 24)) as pilot:
        await replayed(pilot, 2)
        bar = app.query_one("#knobbar", Static)
        for opened in (True, False):
            await pilot.press("question_mark")
            await until(pilot, lambda o=opened: bool(app.screen.query("HelpPanel")) == o)
            await settle(pilot)
            shown = lines_of(bar)
            assert fully_shown(app, bar) and bar.region.height == len(shown)
            assert all(len(line) <= bar.content_region.width for line in shown), shown
            for key, knob in app.knob_keys.items():
                assert f"{key} {knob}=" in " ".join(shown), (knob, shown)
            assert (bar.region.width < 60) == opened
