"""abtui.ui.render.textual_privates is the one place that uses Textual's private API: every private
it names is there in the installed Textual (with the parameters it expects), nothing else in
abtui reaches for one, and with any of them gone the console still runs, Textual's public way
(a newer Textual costs speed, never a crash)."""

from __future__ import annotations

import inspect
import re
import signal
from collections.abc import Iterator
from pathlib import Path

import pytest
from textual.app import App
from textual.drivers.linux_driver import LinuxDriver
from textual.geometry import Region, Size
from textual.screen import Screen
from textual.widget import Widget

from abtui.ui.render import textual_privates as tp
from abtui.ui.render.widgets import PairPane
from tests.ui.console_kit import make_app, replayed, settle

pytestmark = pytest.mark.ui

ABTUI = Path(__file__).resolve().parents[2] / "abtui"
FENCE = ABTUI / "ui" / "render" / "textual_privates.py"


@pytest.fixture(autouse=True)
def _fence() -> Iterator[None]:
    """Each test asks the fence afresh, and leaves it as it found it."""
    tp.reset()
    yield
    tp.reset()


def _linux_driver() -> LinuxDriver:
    handlers = {s: signal.getsignal(s) for s in (signal.SIGTSTP, signal.SIGCONT)}
    try:
        return LinuxDriver(App())
    finally:
        for sig, h in handlers.items():
            signal.signal(sig, h)


async def test_every_textual_private_the_console_uses_is_there() -> None:
    """What the fence reaches into is in the installed Textual (on a running console's
    screen, app, pane and compositor, a StylesCache, an input parser and a
    Linux driver), and the StylesCache methods it overrides or calls take the parameters it
    passes: an upgrade of Textual that moves one fails here, by name; and each, renamed, is
    named missing (the check can fail)."""
    app = make_app(pairs=2, intervals=2)
    async with app.run_test(size=(160, 48)) as pilot:
        await replayed(pilot, 2)
        pane = app.query_one("#pane-A", PairPane)
        instances = {"Screen": app.screen, "App": app, "Widget": pane,
                     "Compositor": app.screen._compositor,
                     "StylesCache": tp._found["StylesCache"](),
                     "XTermParser": tp._found["XTermParser"](False),
                     "LinuxDriver": _linux_driver()}
        for feature in tp.FEATURES:
            assert tp.missing(feature, instances) == [], feature
        # each one renamed, as a newer Textual might: named missing for each of its features
        for n, private in enumerate(tp.PRIVATES):
            gone = private._replace(name=private.name + "_gone")
            with pytest.MonkeyPatch.context() as patch:
                patch.setattr(tp, "PRIVATES", (*tp.PRIVATES[:n], gone, *tp.PRIVATES[n + 1:]))
                if private.owner == "module":
                    patch.setitem(tp._found, private.name, None)
                for feature in private.features:
                    assert tp.missing(feature, instances), (private, feature)
        assert isinstance(tp.styles_cache(pane), tp.FramedLines)
        assert tp.fallen_back() == {}  # the console ran the private way throughout
        assert len(app.screen_text().splitlines()) == 48
    assert {p.owner for p in tp.PRIVATES} == {"module", "Screen", "App", "Widget",
                                              "Compositor", "StylesCache", "XTermParser",
                                              "LinuxDriver"}
    assert {f for p in tp.PRIVATES for f in p.features} == set(tp.FEATURES)
    for name, parameters in tp.SIGNATURES.items():
        method = getattr(tp._found["StylesCache"], name)
        assert tuple(inspect.signature(method).parameters) == parameters, name
    # (a Textual without them is named: the check can fail)
    assert "StylesCache._dirty_lines" in tp.missing("kept_lines", {"StylesCache": object()})


def test_nothing_else_in_abtui_reaches_for_a_textual_private() -> None:
    """A private module of Textual is imported, and a private of PRIVATES read, only in the
    fence (the guard's and the files' included)."""
    names = {p.name for p in tp.PRIVATES if p.name.startswith("_")}
    own = {"_closing", "_debug", "_driver"}  # (names abtui's own objects use too)
    any_name, read_name = "|".join(names), "|".join(names - own)
    pattern = re.compile(rf"(?:from|import) textual(?:\.\w+)*\._\w+"
                         rf"|getattr\([^)]*[\"'](?:{any_name})[\"']|\.(?:{read_name})\b")
    found = [f"{path.relative_to(ABTUI)}: {m.group(0)}" for path in ABTUI.rglob("*.py")
             if path != FENCE for m in pattern.finditer(path.read_text())]
    assert found == []


async def _shown(pilot) -> tuple[str, str]:  # type: ignore[no-untyped-def]
    app = pilot.app
    await replayed(pilot, 4)
    await settle(pilot)
    return app.query_one("#pane-A", PairPane).text("tcp"), app.screen_text()


async def test_with_every_private_gone_the_console_draws_the_same_the_public_way(
        monkeypatch: pytest.MonkeyPatch) -> None:
    """Every private renamed away (each private module's class gone, each attribute under
    another name): the console runs on Textual's public paths — refresh, its update timer,
    its own StylesCache, the public screenshot — and shows what it shows the private way,
    each feature turned off once and said in the log."""
    app = make_app(pairs=2, intervals=4)
    async with app.run_test(size=(120, 40)) as pilot:
        private_way = await _shown(pilot)
    assert tp.fallen_back() == {}
    monkeypatch.setattr(tp, "PRIVATES", tuple(p._replace(name=p.name + "_gone")
                                              if p.owner != "module" else p
                                              for p in tp.PRIVATES))
    for name in tp.MODULES:
        monkeypatch.setitem(tp._found, name, None)
    monkeypatch.setattr(tp, "_checked", set())  # (asked afresh, as a new process would)
    app = make_app(pairs=2, intervals=4)
    async with app.run_test(size=(120, 40)) as pilot:
        public_way = await _shown(pilot)
        pane = app.query_one("#pane-A", PairPane)
        assert not isinstance(tp.styles_cache(pane), tp.FramedLines)
        assert not isinstance(tp.styles_cache(app.screen), tp.KeptLines)
    assert public_way == private_way
    assert private_way[0] and "A " in private_way[1]
    assert set(tp.fallen_back()) == {"repaint_rows", "draw_now", "kept_lines",
                                     "framed_lines", "screen_text"}


def test_a_stylescache_method_with_other_parameters_is_not_overridden(
        monkeypatch: pytest.MonkeyPatch) -> None:
    """A StylesCache method whose parameters are not the ones FramedLines and KeptLines
    read by position: neither is installed (Textual's own cache renders: the screen drawn
    so is the test above's), each said once; with the parameters expected, both are."""
    pane, screen = Widget(), Screen()
    tp.frame_with(pane, tp.FramedLines(lambda _y, _width: None))
    tp.keep_unchanged_lines(screen)
    assert isinstance(tp.styles_cache(pane), tp.FramedLines)
    assert isinstance(tp.styles_cache(screen), tp.KeptLines)
    tp.reset()
    monkeypatch.setitem(tp.SIGNATURES, "render_line", ("self", "styles", "y", "size"))
    monkeypatch.setitem(tp.SIGNATURES, "render_widget", ("self", "widget"))
    pane, screen = Widget(), Screen()
    tp.frame_with(pane, tp.FramedLines(lambda _y, _width: None))
    tp.keep_unchanged_lines(screen)
    assert type(tp.styles_cache(pane)) is tp._found["StylesCache"]
    assert type(tp.styles_cache(screen)) is tp._found["StylesCache"]
    assert "render_line" in tp.fallen_back()["framed_lines"]
    assert "render_widget" in tp.fallen_back()["kept_lines"]


class _Stub:
    """A widget and its screen as a newer Textual might make them: none of the privates
    the fence reads (an AttributeError at the first use), a timer update taking an
    argument (a TypeError)."""

    content_offset = (1, 1)
    outer_size = Size(10, 5)
    display = True
    is_current = True

    def __init__(self) -> None:
        self.refreshed: list[tuple[Region, ...]] = []
        self.screen = self
        self.app = self
        self._batch_count = 0
        self._dirty_widgets = {self}
        self.repaint_due = True

    def refresh(self, *regions: Region) -> None:
        self.refreshed.append(regions)

    def drawn(self) -> None:
        self.repaint_due = False

    def _on_timer_update(self, changed: object) -> None:
        raise AssertionError("not called with an argument")


def test_a_private_missing_or_of_another_shape_at_its_first_use_goes_the_public_way(
        caplog: pytest.LogCaptureFixture) -> None:
    """The rows handed on by Widget.refresh when the widget lacks what the quick way reads
    (an AttributeError), a paced repaint left to the update timer when the screen's update
    takes other arguments (a TypeError): each said once, and the next use goes straight to
    the public way."""
    stub = _Stub()
    for _ in range(2):
        tp.repaint_rows(stub, [(0, 2)])  # type: ignore[arg-type]
        tp.draw_now(stub)  # type: ignore[arg-type]
    assert stub.refreshed == [(Region(-1, 0, 10, 2),)] * 2
    assert "AttributeError" in tp.fallen_back()["repaint_rows"]
    assert "TypeError" in tp.fallen_back()["draw_now"]
    assert len([r for r in caplog.records if "goes the public way" in r.getMessage()]) == 2


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
