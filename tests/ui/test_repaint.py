"""abtui.ui.repaint is the one place that uses Textual's private drawing machinery: the
privates it names are there in the installed Textual, with the parameters it expects, and a
pane's repaint works its content's offset out once."""

from __future__ import annotations

import inspect

import pytest
from textual._styles_cache import StylesCache
from textual.app import App
from textual.screen import Screen
from textual.widget import Widget

from abtui.ui.widgets import PairPane
from tests.ui.console_kit import make_app, replayed, settle

pytestmark = pytest.mark.ui


async def test_the_textual_privates_the_console_relies_on_are_there() -> None:
    """What abtui.ui.repaint reaches into is in the installed Textual (on a running
    console's screen, app and pane), and the StylesCache methods it overrides or calls take
    the parameters it passes: an upgrade of Textual that moves one fails here, by name."""
    from abtui.ui.repaint import PRIVATES, SIGNATURES, missing_privates, styles_cache

    app = make_app(pairs=2, intervals=2)
    async with app.run_test(size=(160, 48)) as pilot:
        await replayed(pilot, 2)
        pane = app.query_one("#pane-A", PairPane)
        instances = {Screen: app.screen, App: app, Widget: pane, StylesCache: StylesCache()}
        assert missing_privates(instances) == []
        assert isinstance(styles_cache(pane), StylesCache)
        assert hasattr(app.screen._compositor, "visible_widgets")
    assert {whose for whose, _ in PRIVATES} == {Screen, App, Widget, StylesCache}
    for name, parameters in SIGNATURES.items():
        assert tuple(inspect.signature(getattr(StylesCache, name)).parameters) == parameters, \
            name
    # (a Textual without them is named: the check can fail)
    assert "StylesCache._dirty_lines" in missing_privates({StylesCache: object()})


async def test_a_pane_s_repaint_works_its_content_s_offset_out_once(
        monkeypatch: pytest.MonkeyPatch) -> None:
    """A chart's new interval repaints its rows: the pane's content offset (its gutter: the
    border, the padding and the scrollbars worked out) is read once for it, not once to
    place the rows and again to mark them dirty."""
    app = make_app(pairs=2, intervals=4)
    async with app.run_test(size=(160, 48)) as pilot:
        await replayed(pilot, 4)
        await settle(pilot)
        pane = app.query_one("#pane-A", PairPane)
        reads: list[None] = []
        offset = Widget.content_offset
        monkeypatch.setattr(PairPane, "content_offset", property(
            lambda w: (reads.append(None), offset.__get__(w))[1]))
        pane.state.bps.append(1.5 * pane.series("bps").ceiling)
        pane.refresh_charts((2 * pane.series("bps").ceiling, pane.series("rtt").ceiling))
        assert pane in app.screen._dirty_widgets  # its chart's rows are to be drawn
        assert len(reads) == 1, f"{len(reads)} reads"
        await settle(pilot)
        assert pane.series("bps").data[-1] == pane.state.bps[-1]
