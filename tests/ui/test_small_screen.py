"""At 80×24 every knob, every pane and every value stays in sight or in reach: the knob bar
wraps, a pane's lines wrap instead of being cut, and with 4 pairs the panes shrink and tab
brings each one into view."""

from __future__ import annotations

import pytest
from textual.widgets import DataTable, Static

from abtui.core.events import IntervalMeasured, KnobChanged
from abtui.ui.render.screens import CompareScreen
from abtui.ui.render.widgets import PairPane
from tests.ui.console_kit import make_app, replayed, settle, until

pytestmark = pytest.mark.ui


def fully_shown(app, widget, band: str | None = None) -> bool:  # type: ignore[no-untyped-def]
    """Whether `widget` (or the band of rows a pane draws, by name) is whole on screen."""
    geometry = app.screen.find_widget(widget)
    if band is not None:
        region = widget.band_region(band)
        return bool(region) and geometry.visible_region.contains_region(region) and \
            app.screen.region.contains_region(region)
    return geometry.visible_region == geometry.region and \
        app.screen.region.contains_region(geometry.region)


def lines_of(widget: Static) -> list[str]:
    return str(widget.render()).splitlines()


@pytest.mark.parametrize("pairs", [2, 4])
async def test_every_knob_and_pane_in_reach_at_80x24(pairs: int) -> None:
    app = make_app(pairs=pairs, intervals=6)
    async with app.run_test(size=(80, 24)) as pilot:
        await replayed(pilot, 6)
        bar = app.query_one("#knobbar", Static)
        assert fully_shown(app, bar)
        shown = lines_of(bar)
        assert bar.region.height == len(shown)  # every line of it on screen
        assert all(len(line) <= bar.content_region.width for line in shown)
        first = app.state.pairs["A"]
        for key, knob in app.knob_keys.items():
            chip = f"{key} {knob}={first.config[knob]}"
            assert any(chip in line for line in shown), (chip, shown)
        assert any("running" in line or "stopped" in line for line in shown)
        for label in app.state.pairs:
            # tab scopes the knobs to each pair in turn and brings its pane into view
            while app.scopes[app.scope_index] != label:
                await pilot.press("tab")
            await settle(pilot)
            pane = app.query_one(f"#pane-{label}", PairPane)
            assert pane.has_class("-scoped")
            assert fully_shown(app, pane), label
            for name in ("config", "bps-label", "rtt-label", "tcp"):
                text = pane.rows(name)
                assert pane.band_region(name).height == len(text), (label, name, text)
                assert fully_shown(app, pane, name), (label, name)
                assert all(len(line) <= pane.content_region.width for line in text), text
            config = " ".join(pane.rows("config"))
            for knob, value in pane.state.config.items():
                if knob != "tunnel" or pane.has_class("-compact"):
                    assert f"{knob}={value}" in config, (knob, config)
            numbers = " ".join(pane.rows("bps-label"))
            assert "mean" in numbers and "min" in numbers and "max" in numbers
        table = app.query_one("#phases", DataTable)
        assert fully_shown(app, table)
        assert table.region.height >= 1 + table.row_count  # header and every row


async def test_panes_give_way_when_their_numbers_grow_at_80x24() -> None:
    """Numbers getting longer (10 Gbit/s and more) wrap a pane's line after the layout was
    made: the panes drop their sparklines so the phase table and a few log lines still show."""
    import dataclasses

    from abtui.core.events import Event, EventKind

    app = make_app(pairs=2, intervals=2)
    async with app.run_test(size=(80, 24)) as pilot:
        await replayed(pilot, 2)
        last = [e for e in app.recent if e.kind is EventKind.INTERVAL][-2:]
        for k in range(1, 4):
            for ev in last:
                app.receive(Event.of(dataclasses.replace(
                    ev.payload, bits_per_second=12.345e9 * k, retransmits=12345),
                    ev.t + k, ev.pair, ev.host))
        await settle(pilot)
        pane = app.query_one("#pane-A", PairPane)
        assert "37.0 Gbit/s" in pane.text("bps-label")
        table, log = app.query_one("#phases", DataTable), app.query_one("#log")
        assert fully_shown(app, table) and table.region.height >= 1 + table.row_count
        assert pane.has_class("-compact")
        assert log.display and log.region.height >= 2  # collapsed: its latest line
        await pilot.press("ctrl+l")  # the log whole: its border and four lines at least
        await settle(pilot)
        assert log.display and log.region.height >= 5
        assert fully_shown(app, table) and table.region.height >= 1 + table.row_count
        for label in app.state.pairs:
            assert fully_shown(app, app.query_one(f"#pane-{label}", PairPane))


# configurations whose labels share their start (seed 606 of the console walk)
CONFIGS = [
    {"cc": "bbr", "tcp_wmem": "4096 16384 65536", "tunnel": "wireguard"},
    {"cc": "bbr", "tcp_wmem": "4096 16384 65536", "tso": "off"},
    {"cc": "bbr", "tcp_wmem": "4096 16384 65536"},
    {"tcp_wmem": "4096 16384 65536", "tso": "off", "tunnel": "vxlan"},
    {"tcp_wmem": "4096 16384 65536", "tso": "off"},
]


async def with_configs(pilot) -> None:  # type: ignore[no-untyped-def]
    """The replay, then a phase of each of CONFIGS (labels too long for 80 columns)."""
    from abtui.core.events import Event

    app = pilot.app
    await replayed(pilot, 2)
    base = dict(app.state.baseline or {})
    t, phase, now = 100.0, 10, dict(base)
    for config in CONFIGS:
        want = {**base, **config}
        for knob, value in want.items():
            if now.get(knob) != value:
                now[knob] = value
                app.receive(Event.of(KnobChanged.from_data({
                    "knob": knob, "value": value, "pairs": ["A", "B"]}), t))
        for pair in "AB":
            app.receive(Event.of(IntervalMeasured.from_data({
                "run": 9, "phase": phase, "start": 1.0, "end": 2.0,
                "bits_per_second": 1e9}), t + 1, pair=pair))
        t, phase = t + 2, phase + 1
    await settle(pilot)  # the table repaints twice a second at most: its last one is in


async def test_phase_table_rows_stay_distinct_at_80x24_and_whole_at_160x48() -> None:
    """Labels too long for the configuration column are shortened so that no two rows of
    different configurations read the same; where they fit they are shown whole."""
    app = make_app(pairs=2, intervals=2)
    async with app.run_test(size=(80, 24)) as pilot:
        await with_configs(pilot)
        table = app.query_one("#phases", DataTable)
        full = [app.row_label(r) for r in app.state.phases.values()]
        assert len(set(full)) == len(full) > len(CONFIGS)  # (and rows passed through)
        shown = [str(table.get_row_at(i)[0]) for i in range(table.row_count)]
        assert len(shown) == len(full)
        width = table.columns[next(iter(table.columns))].width
        assert all(len(x) <= width for x in shown), (width, shown)
        assert len(set(shown)) == len(shown), shown
        # the first row named by its values, as the report names it (not `initial`)
        assert shown[0].startswith("cc=reno,") and full[0].endswith("tunnel=none"), shown
        assert "tunnel=vxlan" in " ".join(shown)
        await pilot.resize_terminal(160, 48)
        await settle(pilot)
        width = table.columns[next(iter(table.columns))].width
        shown = [str(table.get_row_at(i)[0]) for i in range(table.row_count)]
        assert len(set(shown)) == len(shown), shown
        for whole, label in zip(full, shown, strict=True):
            assert label == whole if len(whole) <= width else len(label) <= width
        # (the first row names every knob the others change, with its values: long too)
        assert sum(a == b for a, b in zip(full, shown, strict=True)) >= len(full) - 2


async def test_the_log_collapses_to_its_latest_line_at_80x24_and_ctrl_l_shows_it_whole(
        ) -> None:
    """At 80×24 the phase table keeps the bottom but for the log's latest line; ctrl+l shows
    the log whole (the table scrolls in what is left), and collapses it again."""
    app = make_app(pairs=2, intervals=2)
    async with app.run_test(size=(80, 24)) as pilot:
        await with_configs(pilot)
        table, log = app.query_one("#phases", DataTable), app.query_one("#log")
        bottom = app.query_one("#bottom")
        latest = app.log_lines[-1]
        assert log.display and log.region.height == 2  # its border, its latest line
        assert table.region.height == bottom.region.height - 2
        assert " ".join(latest.split()) in " ".join(
            app.screen_text().splitlines()[log.region.y + 1].split())
        collapsed = table.region.height
        await pilot.press("ctrl+l")
        await settle(pilot)
        assert log.display and log.region.height >= 5
        assert 3 <= table.region.height < collapsed
        await pilot.press("ctrl+l")  # and back
        await settle(pilot)
        assert table.region.height == collapsed and log.region.height == 2


async def test_hiding_the_log_gives_its_room_to_the_phase_table_at_90x30() -> None:
    """Not short (30 rows): the log is whole under the table; ctrl+l hides it."""
    app = make_app(pairs=4, intervals=2)
    async with app.run_test(size=(90, 30)) as pilot:
        await with_configs(pilot)
        table = app.query_one("#phases", DataTable)
        bottom = app.query_one("#bottom")
        assert table.row_count + 1 > table.region.height  # more rows than room: it scrolls
        shown = table.region.height
        assert shown < bottom.region.height  # the log below it
        await pilot.press("ctrl+l")
        await settle(pilot)
        assert not app.query_one("#log").display
        assert table.region.height > shown
        await pilot.press("ctrl+l")  # and back
        await settle(pilot)
        assert table.region.height == shown


async def test_compare_screen_keeps_every_pair_column_in_sight_at_80x24() -> None:
    """The compare screen fits its labels as the phase table does (abtui.core.labels), so
    the pairs' columns stay on an 80-column screen and the rows still read apart."""
    app = make_app(pairs=2, intervals=2)
    async with app.run_test(size=(80, 24)) as pilot:
        await with_configs(pilot)
        await pilot.press("ctrl+o")
        await until(pilot, lambda: isinstance(app.screen, CompareScreen))
        table = app.screen.query_one("#compare-table", DataTable)
        widths = [c.get_render_width(table) for c in table.columns.values()]
        assert len(widths) == 1 + len(app.state.pairs)
        assert sum(widths) <= table.content_region.width, (widths, table.content_region)
        labels = [str(table.get_row_at(i)[0]) for i in range(table.row_count)]
        assert len(labels) == len(app.state.phases) and len(set(labels)) == len(labels)


async def test_a_layout_made_while_a_number_was_short_leaves_no_row_cut() -> None:
    """A line that wrapped keeps its second row when its numbers get shorter (padding: the pane
    does not jump). A layout made then sizes the pane by its texts; once the numbers are long
    again the pane grows back, its last line whole (it stayed a row short: the snapshot at
    80×24 failed so on a loaded machine, where the layout came at such a moment)."""
    app = make_app(pairs=2, intervals=24)
    async with app.run_test(size=(80, 34)) as pilot:  # room: the panes stay full
        await replayed(pilot, 24)
        pane = app.query_one("#pane-A", PairPane)
        s = pane.state
        short = s.retransmits, s.retransmits_total
        for retransmits in ((123456, 1234567), short):  # the tcp line on two rows, then one
            s.retransmits, s.retransmits_total = retransmits
            pane.refresh_text()
            await settle(pilot)
        assert len(pane.rows("tcp")) == 2 and not pane.has_class("-compact")
        app.relayout()  # a layout while the numbers are short
        await settle(pilot)
        s.retransmits, s.retransmits_total = 123456, 1234567
        pane.refresh_text()
        await settle(pilot)
        assert len(pane.rows("tcp")) == 2
        for band in ("config", "bps-label", "rtt-label", "tcp"):
            assert fully_shown(app, pane, band), band
        assert pane.band_region("tcp").bottom <= pane.content_region.bottom
