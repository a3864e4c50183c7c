"""abtui.ui.render.textual_privates is the one place that uses Textual's private API: every private
it names is there in the installed Textual (with the parameters it expects), nothing else in
abtui reaches for one, there are at most ten of them, and with any of them gone (or all of
them turned off) the console still runs and draws the same screen, Textual's public way (a
newer Textual costs speed, never a crash)."""

from __future__ import annotations

import inspect
import re
import signal
from collections.abc import Iterator
from pathlib import Path

import pytest
from textual.app import App
from textual.drivers.linux_driver import LinuxDriver
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
    screen, app and pane, a StylesCache and a Linux driver), at most ten privates, and the
    StylesCache methods it overrides take the parameters it passes, by name: an upgrade of
    Textual that moves one fails here, by name; and each, renamed, is named missing (the
    check can fail)."""
    assert len(tp.PRIVATES) <= 10, [f"{p.owner}.{p.name}" for p in tp.PRIVATES]
    app = make_app(pairs=2, intervals=2)
    async with app.run_test(size=(160, 48)) as pilot:
        await replayed(pilot, 2)
        pane = app.query_one("#pane-A", PairPane)
        instances = {"Screen": app.screen, "App": app, "Widget": pane,
                     "StylesCache": tp._found["StylesCache"](),
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
                                              "StylesCache", "LinuxDriver"}
    assert {f for p in tp.PRIVATES for f in p.features} == set(tp.FEATURES)
    for name, parameters in tp.SIGNATURES.items():
        method = getattr(tp._found["StylesCache"], name)
        assert tuple(inspect.signature(method).parameters) == parameters, name
    for name in ("render_line", "clear"):  # FramedLines' own, by the same names (no
        # argument read by position)
        assert tuple(inspect.signature(getattr(tp.FramedLines, name)).parameters) == \
            tp.SIGNATURES[name], name
    # (a Textual without them is named: the check can fail)
    assert "StylesCache.render_line" in tp.missing("framed_lines", {"StylesCache": object()})


def test_nothing_else_in_abtui_reaches_for_a_textual_private() -> None:
    """A private module of Textual is imported, and a private of PRIVATES read, only in the
    fence (the guard's and the files' included)."""
    names = {p.name for p in tp.PRIVATES if p.name.startswith("_")}
    own = {"_driver"}  # (names abtui's own objects use too)
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
    assert public_way == private_way
    assert private_way[0] and "A " in private_way[1]
    assert set(tp.fallen_back()) == {"draw_now", "framed_lines"}


async def test_with_every_private_turned_off_the_console_draws_the_same_screen(
        monkeypatch: pytest.MonkeyPatch) -> None:
    """SWITCH=all (the bench's arm with every private off): each feature goes the public
    way from the start, said in none of the warnings a changed Textual gets, and the screen
    is the same, row for row, as with every private on; a switch naming one feature turns
    off that one only."""
    app = make_app(pairs=2, intervals=4)
    async with app.run_test(size=(120, 40)) as pilot:
        private_way = await _shown(pilot)
        assert isinstance(tp.styles_cache(app.query_one("#pane-A", PairPane)),
                          tp.FramedLines)
    monkeypatch.setenv(tp.SWITCH, "all")
    tp.reset()
    assert set(tp.fallen_back()) == set(tp.FEATURES)
    app = make_app(pairs=2, intervals=4)
    async with app.run_test(size=(120, 40)) as pilot:
        public_way = await _shown(pilot)
        assert not isinstance(tp.styles_cache(app.query_one("#pane-A", PairPane)),
                              tp.FramedLines)
    assert public_way[1].splitlines() == private_way[1].splitlines()
    assert public_way == private_way
    monkeypatch.setenv(tp.SWITCH, "draw_now, nothing")
    tp.reset()
    assert list(tp.fallen_back()) == ["draw_now"]


def test_a_stylescache_method_with_other_parameters_is_not_overridden(
        monkeypatch: pytest.MonkeyPatch) -> None:
    """A StylesCache method whose parameters are not the ones FramedLines takes: it is not
    installed (Textual's own cache renders: the screen drawn so is the test above's), said
    once; with the parameters expected, it is."""
    pane = Widget()
    tp.frame_with(pane, tp.FramedLines(lambda _y, _width: None))
    assert isinstance(tp.styles_cache(pane), tp.FramedLines)
    tp.reset()
    monkeypatch.setitem(tp.SIGNATURES, "render_line", ("self", "styles", "y", "size"))
    pane = Widget()
    tp.frame_with(pane, tp.FramedLines(lambda _y, _width: None))
    assert type(tp.styles_cache(pane)) is tp._found["StylesCache"]
    assert "render_line" in tp.fallen_back()["framed_lines"]


class _Stub:
    """A screen as a newer Textual might make it: a timer update taking an argument (a
    TypeError at the first use)."""

    is_current = True

    def __init__(self) -> None:
        self.screen = self
        self.app = self
        self._dirty_widgets = {self}
        self.repaint_due = True
        self.ticks = 0

    def drawn(self) -> None:
        self.repaint_due = False

    def _on_timer_update(self, changed: object) -> None:
        raise AssertionError("not called with an argument")


def test_a_private_of_another_shape_at_its_first_use_goes_the_public_way(
        caplog: pytest.LogCaptureFixture) -> None:
    """A paced repaint left to the update timer when the screen's update takes other
    arguments (a TypeError): said once, and the next use goes straight to the public way;
    the guard's reads of an app without them give the public way's answers."""
    stub = _Stub()
    for _ in range(2):
        tp.draw_now(stub)  # type: ignore[arg-type]
        stub.repaint_due = True
    assert "TypeError" in tp.fallen_back()["draw_now"]
    assert len([r for r in caplog.records if "goes the public way" in r.getMessage()]) == 1
    assert tp.ended_with(stub) is None  # type: ignore[arg-type]
    tp.silence_dead_writer(stub)  # type: ignore[arg-type]  (no driver: nothing to do)
