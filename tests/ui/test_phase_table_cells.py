"""The phase table repaints only what changed: new numbers for the configuration in force redraw
that row alone, the same numbers redraw nothing, and what the cheap path leaves on screen is
what a table laid out from scratch shows (it drops DataTable's cached renderings by hand, so a
Textual upgrade that changes those caches fails here)."""

from __future__ import annotations

import math
from pathlib import Path

import pytest
from rich.segment import Segment
from textual.geometry import Region
from textual.strip import Strip

from abtui.core.events import Event, EventKind
from abtui.measure.replay.synthetic import synthetic_events, synthetic_profile
from abtui.profile import parse_profile
from abtui.sessions.reader import load_events
from abtui.ui.app import AbtuiApp
from abtui.ui.model.phase_rows import LOADED
from abtui.ui.render.tables import PhaseTable
from tests.ui.console_kit import SpyController, settle, started, until

pytestmark = pytest.mark.ui

INTERVALS = 12  # per pair; the knob flips after the 6th: two rows
SHOWN = 8  # intervals per pair on screen before the test's own
GOLDEN = Path(__file__).resolve().parents[1] / "golden" / "ix-enable-aim.abtui.jsonl.gz"


def _ticks(events: list[Event]) -> list[list[Event]]:
    """The recording cut after each pair's interval: a list of events per tick."""
    chunks: list[list[Event]] = [[]]
    for e in events:
        chunks[-1].append(e)
        if e.kind is EventKind.INTERVAL and e.pair == "B":
            chunks.append([])
    return chunks


def _drawn(table: PhaseTable) -> list[list[Segment]]:
    """The table's lines as the screen has them (its kept lines, the dirty ones redrawn)."""
    strips: list[Strip] = table.render_lines(Region(0, 0, table.size.width, table.size.height))
    return [[s for s in strip if not s.control] for strip in strips]


def _row_text(table: PhaseTable, row: int) -> list[str]:
    return [str(c) for c in table.get_row_at(row)]


async def _new_numbers(app: AbtuiApp, ticks: list[list[Event]], row: int) -> None:
    """The next ticks received until the row's cells read otherwise; the screen settled."""
    before = _row_text(app.table, row)
    while ticks and _row_text(app.table, row) == before:
        for e in ticks.pop(0):
            app.receive(e)
        await app.settled()
    assert _row_text(app.table, row) != before, "the recording ran out before a change"


@pytest.mark.parametrize(("pairs", "size", "cursor", "scroll"), [
    (2, (160, 48), 0, 0),  # the cursor on the other row
    (2, (160, 48), 1, 0),  # the cursor on the changing row
    (4, (80, 24), 1, 9),  # a narrow screen, the table scrolled sideways
])
async def test_new_numbers_redraw_their_row_alone_as_a_whole_redraw_draws_it(
        pairs: int, size: tuple[int, int], cursor: int, scroll: int) -> None:
    profile = synthetic_profile(pairs)
    ticks = _ticks(synthetic_events(profile, intervals=INTERVALS, seed=7))
    app = AbtuiApp(SpyController(profile, [], speed=math.inf), autostart=False)
    async with app.run_test(size=size) as pilot:
        await started(pilot)
        for _ in range(SHOWN + 1):  # the preamble, then SHOWN ticks
            for e in ticks.pop(0):
                app.receive(e)
        await settle(pilot)
        table = app.table
        assert table.row_count == 2 and table.zebra_stripes
        table.move_cursor(row=cursor)
        table.scroll_to(x=scroll, animate=False, immediate=True)
        await settle(pilot)
        assert table.scroll_x == scroll and table.cursor_row == cursor
        first = _row_text(table, 0)
        drawn: list[int] = []
        line = table.render_line

        def spy(y: int) -> Strip:
            drawn.append(y)
            return line(y)

        table.render_line = spy  # type: ignore[method-assign]
        table.refresh_cells(app.state, app.main_width)  # the same numbers again
        await settle(pilot)
        assert drawn == []  # nothing redrawn

        await _new_numbers(app, ticks, 1)  # the configuration in force: the second row
        await settle(pilot)
        assert _row_text(table, 0) == first
        # that row alone (a short screen's table may have scrolled it up under the header)
        assert drawn and set(drawn) == {table.header_height + 1 - table.scroll_y}, drawn
        del table.render_line
        cheap, down = _drawn(table), table.scroll_y

        table.rebuild(app.state, app.main_width)  # every cell laid out and rendered anew
        await settle(pilot)
        table.scroll_to(x=scroll, y=down, animate=False, immediate=True)
        await settle(pilot)
        assert (table.scroll_x, table.scroll_y, table.cursor_row) == (scroll, down, cursor)
        assert cheap == _drawn(table)


async def test_rows_are_renamed_in_place_when_the_baseline_changes() -> None:
    """Labels name what sets a row apart from the base pair's hosts' configuration: when
    that changes (a reconnect), the next repaint renames the rows (the cells alone were
    updated in place before, the labels only when the table was laid out again)."""
    profile = synthetic_profile(2)
    ticks = _ticks(synthetic_events(profile, intervals=INTERVALS, seed=7))
    app = AbtuiApp(SpyController(profile, [], speed=math.inf), autostart=False)
    async with app.run_test(size=(160, 48)) as pilot:
        await started(pilot)
        for _ in range(SHOWN + 1):
            for e in ticks.pop(0):
                app.receive(e)
        await settle(pilot)
        table = app.table
        rows = list(app.state.phases.values())
        before = [_row_text(table, i)[0] for i in range(2)]
        # the hosts now read another value of a knob no row changed (a reconnect found a
        # colleague's setting): every row is named by it too (the baseline's row names its
        # values, so the flip alone would rename nothing)
        other = next(k for k in rows[0].config if rows[0].config[k] == rows[1].config[k])
        app.state.baseline = {**rows[1].config, other: "another"}
        table.refresh_cells(app.state, app.main_width)
        after = [_row_text(table, i)[0] for i in range(2)]
        assert after == [app.state.row_label(r) for r in rows] and after != before, after


async def test_a_recorded_session_s_table_shows_its_marks_as_a_whole_redraw_does() -> None:
    """A recorded session replayed through the cheap path (rows coming one by one, the unit
    changing, the significance marks arriving with the runs): the screen holds what a table
    laid out from scratch shows, marks included."""
    events = load_events(GOLDEN)
    profile = parse_profile(events[0].payload.profile_text, "ix-enable-aim.toml")
    app = AbtuiApp(SpyController(profile, [], speed=math.inf), autostart=False)
    async with app.run_test(size=(160, 48)) as pilot:
        await started(pilot)
        for e in events:
            app.receive(e)
        await until(pilot, lambda: bool(LOADED.get("scipy")))  # the marks' t distribution
        await settle(pilot)
        table = app.table
        cheap = _drawn(table)
        text = ["".join(s.text for s in line) for line in cheap]
        assert table.row_count >= 2 and sum("%~" in t or "%*" in t for t in text) >= 1, text
        table.rebuild(app.state, app.main_width)
        await settle(pilot)
        assert cheap == _drawn(table)
