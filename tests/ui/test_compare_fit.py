"""The compare screen against a saved session fits 80 and 160 columns: each configuration named
by the knobs that set it apart, as the report names its rows (the knobs every row shares said
once above the table), and what still does not fit wraps in its column, never cut. "Compare
with a saved session…" from the palette works while the compare screen is open."""

from __future__ import annotations

from pathlib import Path

import pytest
from textual.widgets import DataTable, Input

from abtui.measure.replay.synthetic import synthetic_events, synthetic_profile
from abtui.sessions import writer
from abtui.ui.render.screens import CompareScreen, SessionPicker
from abtui.ui.render.tables import column_widths
from tests.ui.console_kit import make_app, replayed, settle, until

pytestmark = pytest.mark.ui


def saved_session(folder: Path, name: str) -> Path:
    path = folder / f"{name}.abtui.jsonl"
    with writer.SessionWriter(path, profile="synthetic", pairs=["A", "B"],
                              compact=False) as w:
        for e in synthetic_events(synthetic_profile(2), intervals=10, seed=11):
            w.write(e)
    return path


async def compare_with(pilot, path: Path) -> CompareScreen:  # type: ignore[no-untyped-def]
    app = pilot.app
    await until(pilot, lambda: isinstance(app.screen, SessionPicker))
    box = app.screen.query_one("#session", Input)
    box.value = str(path)
    box.focus()
    await pilot.press("enter")
    await until(pilot, lambda: isinstance(app.screen, CompareScreen)
                and app.screen.comparison.columns[2] == path.name.split(".")[0])
    await settle(pilot)
    return app.screen  # type: ignore[no-any-return]


def screen_rows(app) -> list[str]:  # type: ignore[no-untyped-def]
    return app.screen_text().splitlines()


@pytest.mark.parametrize("size", [(80, 24), (160, 48)])
async def test_the_saved_comparison_fits_the_screen_and_wraps(tmp_path: Path,
                                                              size: tuple[int, int]) -> None:
    path = saved_session(tmp_path, "before")
    app = make_app(intervals=10)
    async with app.run_test(size=size) as pilot:
        await replayed(pilot, 10)
        await app.run_action("compare_saved", app.main_screen)
        screen = await compare_with(pilot, path)
        table = screen.query_one("#compare-table", DataTable)
        widths = [c.get_render_width(table) for c in table.columns.values()]
        assert sum(widths) <= table.content_region.width, (widths, table.content_region)
        # the knobs every row shares are said once, above the table
        note = str(screen.query_one("#compare-note").render())
        assert note == "in every configuration: cc=reno, tso=on, tunnel=none"
        configs = [r[1] for r in screen.comparison.rows]
        assert configs == ["tcp_wmem=4096 16384 4194304", "tcp_wmem=4096 16384 65536"] * 2
        # every cell's words are on screen in its row (wrapped where it is too long)
        text = screen_rows(app)
        region = table.content_region
        heights = [r.height for r in table.ordered_rows]
        assert region.height >= 1 + sum(heights)  # every row in sight
        for i, row in enumerate(screen.comparison.rows):
            y = region.y + 1 + sum(heights[:i])
            shown = " ".join(text[y:y + heights[i]])
            for cell in row:
                for word in cell.split():
                    assert word in shown, (word, shown)
        assert all("%" in r[4] for r in screen.comparison.rows)


async def test_compare_with_a_saved_session_from_the_palette_over_the_compare_screen(
        tmp_path: Path) -> None:
    first, second = saved_session(tmp_path, "first"), saved_session(tmp_path, "second")
    app = make_app(intervals=10)
    async with app.run_test(size=(120, 36)) as pilot:
        await replayed(pilot, 10)
        await app.run_action("compare_saved", app.main_screen)
        await compare_with(pilot, first)
        await pilot.press("ctrl+p")
        await until(pilot, lambda: app.screen.__class__.__name__ == "CommandPalette")
        await pilot.press(*"Compare with a saved")
        await until(pilot, lambda: "Compare with a saved" in app.screen_text())
        await pilot.press("enter")
        screen = await compare_with(pilot, second)
        assert screen.comparison.columns[2] == "second"
        assert sum(isinstance(s, CompareScreen) for s in app.screen_stack) == 1
        await pilot.press("escape")
        await until(pilot, lambda: app.screen is app.main_screen)


def test_column_widths_narrow_the_widest_columns_alike() -> None:
    columns = ["pair", "configuration", "before", "this session", "Δ"]
    rows = [["A", "x" * 60, "2.95", "2.98", "y" * 40]]
    widths = column_widths(columns, rows, 80)
    assert sum(widths) + 2 * len(widths) <= 80
    assert widths[0] == 6 and widths[2:4] == [6, 12]  # narrow ones whole
    assert widths[1] == widths[4] > len("configuration")
    assert column_widths(columns, [["A", "c", "1", "2", "+1%"]], 80) == [4, 13, 6, 12, 3]
