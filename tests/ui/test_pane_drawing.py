"""A pane draws its own lines (abtui.ui.render.widgets.PairPane): they look exactly as Textual's
Static draws the same text in the same place, cell by cell (character and style), in the
line's colours and after a theme change; only the cheaper way of drawing them differs."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

from rich.style import Style
from textual.app import App, ComposeResult
from textual.containers import Vertical
from textual.content import Content
from textual.geometry import Region
from textual.widget import Widget
from textual.widgets import Static

import abtui.ui
from abtui.ui.model.pair_state import PairState
from abtui.ui.render.chips import pack_chips
from abtui.ui.render.drawing import ChartDrawer
from abtui.ui.render.textual_privates import FramedLines, styles_cache
from abtui.ui.render.widgets import PairPane

ERROR = "tcp_wmem=4096 16384 65536 refused: lab-a-snd: sysctl: permission denied on key"
CONFIG = {"cc": "cubic", "tcp_wmem": "4096 16384 65536", "tso": "off", "gro": "on",
          "mtu": "9000", "qdisc": "fq_codel", "tunnel": "none"}


def _state() -> PairState:
    return PairState("A", "a-snd", "a-rcv", dict(CONFIG), error=ERROR,
                     kernels={"a-snd": "6.1.0-18-amd64"})


class Both(App[None]):
    CSS_PATH = Path(abtui.ui.__file__).parent / "abtui.tcss"
    CSS = """
    .pane, .ref { width: 40; }
    .ref { height: auto; border: round $primary 60%; padding: 0 1; }
    .ref Static { height: auto; }
    .ref .config { color: $text-muted; }
    .ref .error { color: $error; text-style: bold; }
    """

    def compose(self) -> ComposeResult:
        yield PairPane(_state())
        with Vertical(classes="ref"):
            yield Static(id="config", classes="config")
            yield Static(id="error", classes="error")


def _cells(strips: list) -> list[list[tuple[str, Style | None]]]:  # type: ignore[type-arg]
    return [[(ch, seg.style.clear_meta_and_links() if seg.style else None)
             for seg in strip if not seg.control for ch in seg.text]
            for strip in strips]


def _band(pane: PairPane, band: str) -> list[list[tuple[str, Style | None]]]:
    """The band's rows as the pane draws them, inside its frame."""
    region = pane.band_region(band).translate(-pane.region.offset)
    inner = pane.content_region.translate(-pane.region.offset)
    strips = pane.render_lines(Region(0, region.y, pane.outer_size.width, region.height))
    return _cells([s.crop(inner.x, inner.right) for s in strips])


def _static(widget: Widget) -> list[list[tuple[str, Style | None]]]:
    size = widget.size
    return _cells(widget.render_lines(Region(0, 0, size.width, size.height)))


async def test_a_pane_s_lines_are_drawn_as_a_static_draws_them() -> None:
    app = Both()
    async with app.run_test(size=(100, 40)) as pilot:
        await pilot.pause()
        pane = app.query_one(PairPane)
        width = pane.content_region.width
        config = pack_chips([Content.assemble(f"{k}=", (v, "bold"))
                             for k, v in CONFIG.items() if k != "tunnel"], width)
        error = pack_chips([Content.assemble(("⚠ ", "bold"), ERROR)], width)
        assert "\n" in config.plain and "\n" in error.plain  # more than one line each
        app.query_one("#config", Static).update(config)
        app.query_one("#error", Static).update(error)
        await pilot.pause()
        for band in ("config", "error"):
            drawn = _band(pane, band)
            assert drawn == _static(app.query_one(f"#{band}", Static)), band
            shown = ["".join(ch for ch, _ in row).rstrip() for row in drawn]
            assert shown == pane.rows(band)  # what the pane says it shows
        assert any(style is not None and style.bold for line in _band(pane, "config")
                   for _ch, style in line)  # the spans' own styles are drawn
        framed = styles_cache(pane)
        assert isinstance(framed, FramedLines) and framed.quick_rows > 0  # framed the quick way
        app.theme = "textual-light"  # recoloured: the kept strips and styles are not reused
        await pilot.pause()
        for band in ("config", "error"):
            assert _band(pane, band) == _static(app.query_one(f"#{band}", Static)), band


async def test_a_pane_s_rows_framed_the_quick_way_are_textual_s_own() -> None:
    """FramedLines (a content row: its frame's kept segments around the pane's own) gives the
    cells Textual's StylesCache gives, in every border and background the pane takes."""
    from textual._styles_cache import StylesCache

    app = Both()
    async with app.run_test(size=(100, 40)) as pilot:
        pane = app.query_one(PairPane)
        for classes in ((), ("-scoped",), ("-lost",), ("-reconnecting",)):
            pane.set_class(True, *classes) if classes else None
            await pilot.pause()
            whole = Region(0, 0, pane.outer_size.width, pane.outer_size.height)
            quick = styles_cache(pane)
            assert isinstance(quick, FramedLines)
            quick.clear()  # every row drawn again
            before = quick.quick_rows
            drawn = _cells(quick.render_widget(pane, whole))
            assert quick.quick_rows - before >= pane.size.height - 2, classes  # the quick way
            assert drawn == _cells(StylesCache().render_widget(pane, whole)), classes
            pane.set_class(False, *classes) if classes else None


async def test_a_click_on_a_pane_s_chart_scopes_the_knobs_to_its_pair() -> None:
    """The pane is one widget: a click anywhere in it (here its throughput chart) names its
    pair, and that pane alone is outlined."""
    from tests.ui.console_kit import make_app, replayed, settle

    app = make_app(pairs=2, intervals=4)
    async with app.run_test(size=(80, 30)) as pilot:
        await replayed(pilot, 4)
        pane = app.query_one("#pane-B", PairPane)
        chart = pane.band_region("bps")
        assert chart.height == 2
        await pilot.click(pane, offset=(chart.x - pane.region.x + 3, chart.y - pane.region.y))
        await settle(pilot)
        assert app.scopes[app.scope_index] == "B"
        assert pane.has_class("-scoped") and not app.query_one("#pane-A").has_class("-scoped")


def chart_rows(data: Sequence[float], markers: Sequence[bool], ceiling: float, width: int,
               height: int, palette: tuple[Style, Style, Style, Style]) -> list[list]:  # type: ignore[type-arg]
    """A chart drawn afresh, nothing kept from an earlier drawing: the chart's definition,
    which a drawer that keeps its columns between drawings must give."""
    return ChartDrawer().rows(data, markers, ceiling, width, height, palette)


def test_a_chart_is_each_value_s_column_in_its_style_cell_by_cell() -> None:
    """A chart drawn afresh, read back cell by cell, is the chart's definition: the latest `width`
    values right-aligned, each a column of eighths (one at least above 0, all at or over the
    ceiling, none at 0, below it or NaN), `┆` where a knob's column is empty, and its style
    the marker's, else high from 66 % of the ceiling, else low."""
    import random

    from abtui.ui.render.drawing import BARS

    rng = random.Random(24)
    palette = (Style(), Style(color="red"), Style(color="green"), Style(color="blue"))
    base, low, high, mark = palette
    specials = [0.0, -1.0, float("nan"), 1e-12, 5.0, 12.0, 99.0]
    for trial in range(200):
        height, width = rng.choice([1, 2, 3, 4]), rng.choice([0, 1, 7, 36, 70])
        data = [rng.choice(specials) if rng.random() < 0.2 else rng.uniform(0, 13)
                for _ in range(rng.randrange(0, 90))]
        markers = [rng.random() < 0.1 for _ in range(rng.randrange(0, len(data) + 1))]
        rows = chart_rows(data, markers, 12.0, width, height, palette)
        cells = [[(ch, seg.style) for seg in row for ch in seg.text] for row in rows]
        assert len(cells) == height and all(len(r) == width for r in cells), trial
        shown = data[-width:] if width else []
        marks = ([False] * len(data) + markers)[-len(shown):] if shown else []
        pad = width - len(shown)
        for x in range(pad):
            assert all(cells[y][x] == (" ", base) for y in range(height)), trial
        for x, (v, m) in enumerate(zip(shown, marks, strict=True)):
            eighths = max(1, round(min(v / 12.0, 1.0) * 8 * height)) if v > 0 else 0
            style = mark if m else high if v >= 0.66 * 12.0 else low
            for y in range(height):  # top row first
                part = min(max(eighths - 8 * (height - 1 - y), 0), 8)
                char = BARS[part] if part or not m else "┆"
                assert cells[y][pad + x] == (char, style), (trial, x, y)


async def test_a_pane_s_repaint_of_its_rows_shows_every_interval() -> None:
    """An interval's rows are repainted through Textual's public `refresh` with their
    regions (the pane's whole width, its frame's columns included), and the screen shows
    every interval, row by row as it comes."""
    import math

    from abtui.core.events import EventKind
    from abtui.measure.replay.synthetic import synthetic_events, synthetic_profile
    from abtui.ui.app import AbtuiApp
    from tests.ui.console_kit import SpyController, settle, started

    profile = synthetic_profile(1)
    events = synthetic_events(profile, intervals=12, seed=3)
    app = AbtuiApp(SpyController(profile, [], speed=math.inf), autostart=False)
    async with app.run_test(size=(160, 48)) as pilot:
        await started(pilot)
        intervals = [i for i, e in enumerate(events) if e.kind is EventKind.INTERVAL]
        for e in events[:intervals[3]]:  # the preamble and three intervals: laid out
            app.receive(e)
        await settle(pilot)
        pane = app.query_one("#pane-A", PairPane)
        refreshed: list[tuple[Region, ...]] = []
        own = pane.refresh
        pane.refresh = lambda *r, **k: (refreshed.append(r), own(*r, **k))[1]  # type: ignore[method-assign]
        for e in events[intervals[3]:]:
            app.receive(e)
            if e.kind is EventKind.INTERVAL:
                await settle(pilot)
                shown = app.screen_text()
                assert f"n {app.state.pairs['A'].intervals} " in shown, shown
        assert app.state.pairs["A"].intervals == 12
        rows = [r for regions in refreshed for r in regions]
        assert rows and all(r.width == pane.outer_size.width for r in rows)


async def test_a_pane_s_new_rows_come_in_filtered_colours_without_filtering_them() -> None:
    """The app's line filter (Textual's ANSI-to-truecolour) is applied to the pane's styles
    once, not to each row it draws again: an interval's chart and numbers, drawn again, are
    not filtered, and every cell is what Textual's filtered rendering gives."""
    from textual._styles_cache import StylesCache
    from textual.filter import ANSIToTruecolor

    app = Both()
    async with app.run_test(size=(100, 40)) as pilot:
        await pilot.pause()
        pane = app.query_one(PairPane)
        filters = app.get_line_filters()
        assert filters and all(isinstance(f, ANSIToTruecolor) for f in filters)
        applied: list[int] = []
        for f in filters:
            own = f.apply
            f.apply = lambda segments, bg, own=own: (  # type: ignore[method-assign]
                applied.append(len(segments)), own(segments, bg))[1]
        whole = Region(0, 0, pane.outer_size.width, pane.outer_size.height)
        styles_cache(pane).render_widget(pane, whole)  # as drawn so far
        pane.state.bps.extend([1e9, 3e9, 2e9])
        pane.state.rtt.extend([0.2, 0.4])
        pane.state.intervals = 3
        pane.refresh_from_state((3e9, 0.4))  # its charts and numbers drawn again
        drawn = _cells(styles_cache(pane).render_widget(pane, whole))
        assert not applied, f"{len(applied)} rows filtered"
        assert "n 3" in pane.text("tcp")
        assert drawn == _cells(StylesCache().render_widget(pane, whole))  # Textual's, filtered
        assert applied  # (the reference was filtered)
        for dim in (False, True):  # a filter's colours change (a theme's ANSI colours)
            app.ansi_color = dim
            await pilot.pause()
            assert _cells(styles_cache(pane).render_widget(pane, whole)) == _cells(
                StylesCache().render_widget(pane, whole)), dim


def test_a_scrolling_chart_is_drawn_as_afresh_working_out_only_its_new_columns() -> None:
    """ChartDrawer (a pane's chart, drawn again at every interval) gives exactly chart_rows'
    drawing of the same data — as the chart fills, scrolls by one value or a few, its
    markers move, its ceiling or width changes, NaN and all — and works out only the values
    that came since its last drawing while the chart scrolls."""
    import random
    from collections import deque

    import abtui.ui.render.drawing as drawing

    rng = random.Random(7)
    palette = (Style(), Style(color="red"), Style(color="green"), Style(color="blue"))
    worked: list[int] = []
    own = drawing._columns_of

    def counted(values, *rest):  # type: ignore[no-untyped-def]
        worked.append(len(values))
        return own(values, *rest)

    drawing._columns_of = counted  # type: ignore[assignment]
    try:
        for trial in range(20):
            drawer = drawing.ChartDrawer()
            data: deque[float] = deque(maxlen=120)
            marks: deque[bool] = deque(maxlen=120)
            height, width, ceiling = rng.choice([1, 2]), rng.choice([7, 35, 36]), 12.0
            for step in range(200):
                for _ in range(rng.choice([1, 1, 1, 1, 2, 3, 5])):  # a flush's intervals
                    data.append(rng.choice([0.0, float("nan"), 13.0]) if rng.random() < 0.05
                                else rng.uniform(0, 12))
                    marks.append(rng.random() < 0.05)
                if rng.random() < 0.03:
                    ceiling = rng.uniform(8, 14)  # the shared scale moved
                if rng.random() < 0.01:
                    width = rng.choice([7, 35, 36])  # a resize
                worked.clear()
                got = drawer.rows(data, marks, ceiling, width, height, palette)
                fresh = [[(seg.text, seg.style) for seg in row] for row in chart_rows(
                    data, marks, ceiling, width, height, palette)]
                assert [[(seg.text, seg.style) for seg in row] for row in got] == fresh, \
                    (trial, step)
        # a chart that scrolls by one value works out that value alone
        drawer = drawing.ChartDrawer()
        data = deque([rng.uniform(0, 12) for _ in range(120)], maxlen=120)
        drawer.rows(data, [], 12.0, 35, 2, palette)
        data.append(5.0)
        worked.clear()
        drawer.rows(data, [], 12.0, 35, 2, palette)
        assert worked == [1]
    finally:
        drawing._columns_of = own  # type: ignore[assignment]
