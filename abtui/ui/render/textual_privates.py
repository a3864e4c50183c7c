"""Every use of Textual's private API, in this one module, each with a public fallback.

Textual has no public API for some of what the console does (docs/architecture.md, "Size, and
where the code reaches past a public API"); what it reaches for is named in PRIVATES (a
private module's class, or an attribute of a class or of its instances), each with the
FEATURES that use it, and pinned by tests/ui/test_textual_privates.py against the installed
Textual (pyproject.toml bounds Textual to the versions tested). A feature whose private is
missing or has changed shape — not there at its first use, a StylesCache method with other
parameters (SIGNATURES), an AttributeError or a TypeError on the way — is turned off, once and
logged, and the console goes Textual's public way for it from then on: a newer Textual costs
speed, never a crash.

The features:

- `repaint_rows`: a pane's rows handed to the screen at once (else `Widget.refresh`);
- `draw_now`: a repaint the console paced drawn on the screen's next idle, not on the update
  timer's grid (else the timer draws it);
- `kept_lines`: the widgets on the screen that seldom change render their last lines again
  (`KeptLines`; else Textual renders them in every frame);
- `framed_lines`: a pane's content rows framed from its border's kept segments
  (`FramedLines`; else Textual's general rendering through the pane's `render_line`);
- `quiet_input`: the input thread asleep until input comes (`QuietInputDriver`; else
  Textual's Linux driver, which wakes ten times a second);
- `restore_terminal`: after a crash or a signal, what the app ended with, the driver's saved
  terminal modes and its writer thread (else the generic line, a reset sequence only);
- `screen_text`: the screen as plain text through its compositor (else parsed out of
  Textual's public SVG screenshot).

Measured in docs/performance-runs.md ("A pane's repaint handed to the screen", "The stamp taken by
the frame", "The console's frames", "The console's share of its own CPU").
"""

from __future__ import annotations

import contextlib
import html
import importlib
import inspect
import io
import logging
import os
import re
import selectors
from codecs import getincrementaldecoder
from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING, Any, NamedTuple, Protocol

from rich.cells import cell_len, set_cell_size
from rich.segment import Segment
from textual.app import App
from textual.color import Color
from textual.dom import NoScreen
from textual.driver import Driver
from textual.drivers.linux_driver import LinuxDriver
from textual.filter import LineFilter
from textual.geometry import Region, Size, Spacing
from textual.screen import Screen
from textual.strip import Strip
from textual.widget import Widget

from abtui.ui.render.drawing import Recolour

if TYPE_CHECKING:
    from textual.css.styles import StylesBase

__all__ = ["FEATURES", "PRIVATES", "SIGNATURES", "DrawnAtOnce", "FramedLines", "KeptLines",
           "QuietInputDriver", "draw_now", "fallen_back", "frame_with", "keep_unchanged_lines",
           "quiet_driver", "repaint_rows", "screen_text", "usable"]

log = logging.getLogger(__name__)

FEATURES = ("repaint_rows", "draw_now", "kept_lines", "framed_lines", "quiet_input",
            "restore_terminal", "screen_text")


def _private(module: str, name: str) -> Any:
    """A class from one of Textual's private modules, or None where it is not there."""
    try:
        return getattr(importlib.import_module(module), name)
    except (ImportError, AttributeError):
        return None


# (module, name) of each private class used, by the name PRIVATES knows it as
MODULES: dict[str, tuple[str, str]] = {
    "StylesCache": ("textual._styles_cache", "StylesCache"),
    "XTermParser": ("textual._xterm_parser", "XTermParser"),
    "ParseError": ("textual._parser", "ParseError"),
    "get_time": ("textual._time", "get_time"),
    "loop_last": ("textual._loop", "loop_last"),
}
_found: dict[str, Any] = {name: _private(*where) for name, where in MODULES.items()}
# what a private class is subclassed from when the installed Textual lacks it (never used:
# its feature is off)
_StylesCache: type = _found["StylesCache"] or type("StylesCacheMissing", (), {})
_LinuxDriver: type = LinuxDriver


class Private(NamedTuple):
    """One private: `owner` ("module": `name` is one of MODULES; else the class it is an
    attribute of: Screen, App, Widget, Compositor, StylesCache, XTermParser, LinuxDriver),
    `name`, the features that use it, and whether it is an instance's (set in __init__:
    looked for on an instance, at the feature's first use)."""

    owner: str
    name: str
    features: tuple[str, ...]
    on_instance: bool = False


_ROWS, _DRAW, _KEPT, _FRAMED = "repaint_rows", "draw_now", "kept_lines", "framed_lines"
_INPUT, _GUARD, _TEXT = "quiet_input", "restore_terminal", "screen_text"

PRIVATES: tuple[Private, ...] = (
    Private("module", "StylesCache", (_ROWS, _KEPT, _FRAMED)),
    Private("module", "XTermParser", (_INPUT,)),
    Private("module", "ParseError", (_INPUT,)),
    Private("module", "get_time", (_INPUT,)),
    Private("module", "loop_last", (_INPUT,)),
    Private("Screen", "_dirty_widgets", (_ROWS, _DRAW), True),
    Private("Screen", "_on_timer_update", (_DRAW,)),
    Private("Screen", "_compositor", (_ROWS, _TEXT), True),
    Private("Compositor", "visible_widgets", (_ROWS,), True),
    Private("Compositor", "render_update", (_TEXT,), True),
    Private("App", "_batch_count", (_DRAW,), True),
    Private("App", "_exception", (_GUARD,), True),
    Private("App", "_driver", (_GUARD,), True),
    Private("Widget", "_dirty_regions", (_ROWS,), True),
    Private("Widget", "_repaint_regions", (_ROWS,), True),
    Private("Widget", "_repaint_required", (_ROWS,), True),
    Private("Widget", "_layout_required", (_ROWS,), True),
    Private("Widget", "_closing", (_ROWS,), True),
    Private("Widget", "_styles_cache", (_ROWS, _KEPT, _FRAMED), True),
    Private("Widget", "_border_title", (_KEPT,), True),
    Private("Widget", "_border_subtitle", (_KEPT,), True),
    Private("StylesCache", "render_widget", (_KEPT,)),
    Private("StylesCache", "render", (_FRAMED,)),
    Private("StylesCache", "render_line", (_FRAMED,)),
    Private("StylesCache", "set_dirty", (_ROWS, _KEPT)),
    Private("StylesCache", "clear", (_KEPT, _FRAMED)),
    Private("StylesCache", "_dirty_lines", (_KEPT,), True),
    Private("XTermParser", "_timeout_time", (_INPUT,), True),
    Private("XTermParser", "tick", (_INPUT,)),
    Private("XTermParser", "feed", (_INPUT,)),
    Private("LinuxDriver", "exit_event", (_INPUT,), True),
    Private("LinuxDriver", "fileno", (_INPUT,), True),
    Private("LinuxDriver", "_debug", (_INPUT,), True),
    Private("LinuxDriver", "process_message", (_INPUT,)),
    Private("LinuxDriver", "disable_input", (_INPUT,)),
    Private("LinuxDriver", "run_input_thread", (_INPUT,)),
    Private("LinuxDriver", "_writer_thread", (_GUARD,), True),
    Private("LinuxDriver", "attrs_before", (_GUARD,), True),
)

# the parameters of the StylesCache methods overridden or called here, as Textual 8.2 has
# them (FramedLines.render_line reads opacity, ansi_theme and native_ansi by position)
SIGNATURES: dict[str, tuple[str, ...]] = {
    "render_widget": ("self", "widget", "crop"),
    "render": ("self", "styles", "size", "base_background", "background",
               "render_content_line", "filters", "border_title", "border_subtitle",
               "content_size", "padding", "crop", "opacity", "ansi_theme", "native_ansi"),
    "render_line": ("self", "styles", "y", "size", "content_size", "padding",
                    "base_background", "background", "render_content_line", "border_title",
                    "border_subtitle", "opacity", "ansi_theme", "native_ansi"),
    "set_dirty": ("self", "regions"),
    "clear": ("self",),
}
_SIGNED = {_KEPT: ("render_widget", "set_dirty", "clear"),
           _FRAMED: ("render", "render_line", "clear")}

_off: dict[str, str] = {}  # feature -> why it went the public way
_checked: set[str] = set()  # features whose privates were all found


def _classes() -> dict[str, Any]:
    return {"Screen": Screen, "App": App, "Widget": Widget, "LinuxDriver": LinuxDriver,
            "StylesCache": _found["StylesCache"], "XTermParser": _found["XTermParser"]}


def missing(feature: str, instances: dict[str, object] | None = None) -> list[str]:
    """The privates of `feature` the installed Textual lacks (looked for on the instance of
    their owner in `instances`, else on its class; a StylesCache method with parameters
    other than SIGNATURES' counts as missing)."""
    given = instances or {}
    classes = _classes()
    gone: list[str] = []
    for private in PRIVATES:
        if feature not in private.features:
            continue
        if private.owner == "module":
            if _found.get(private.name) is None:
                gone.append(".".join(MODULES.get(private.name, ("?", private.name))))
            continue
        if private.owner in given:
            where = given[private.owner]
        elif private.on_instance or classes.get(private.owner) is None:
            continue  # looked for on an instance at first use; a private class gone is named
        else:
            where = classes[private.owner]
        if not hasattr(where, private.name):
            gone.append(f"{private.owner}.{private.name}")
    cache = _found["StylesCache"]
    if cache is not None:
        for name in _SIGNED.get(feature, ()):
            method = getattr(cache, name, None)
            if method is not None and tuple(inspect.signature(method).parameters) != \
                    SIGNATURES[name]:
                gone.append(f"StylesCache.{name}{tuple(inspect.signature(method).parameters)}")
    return gone


def usable(feature: str, **instances: object) -> bool:
    """Whether `feature` goes the private way: its privates were all there when first asked
    (on these instances: screen, app, widget, compositor, driver, by owner name) and none
    has failed since."""
    if feature in _off:
        return False
    if feature in _checked:
        return True
    gone = missing(feature, {owner: i for owner, i in instances.items()})
    if gone:
        fall_back(feature, f"not in this Textual: {', '.join(gone)}")
        return False
    _checked.add(feature)
    return True


def fall_back(feature: str, why: str | BaseException) -> None:
    """`feature` goes Textual's public way from now on; said once, in the log."""
    if feature in _off:
        return
    reason = why if isinstance(why, str) else f"{type(why).__name__}: {why}"
    _off[feature] = reason
    _checked.discard(feature)
    log.warning("Textual's private API changed (%s); the console's %s goes the public "
                "way, slower", reason, feature)


def fallen_back() -> dict[str, str]:
    """The features turned off so far, with why (a copy)."""
    return dict(_off)


def reset() -> None:
    """Every feature asked again (tests that take a private away, and put it back)."""
    _off.clear()
    _checked.clear()
    _found.update({name: _private(*where) for name, where in MODULES.items()})


# ---- a pane's rows, a paced repaint, the kept and framed lines (drawing) -----------------

class DrawnAtOnce(Protocol):
    """A widget some of whose repaints are rate-limited by the console itself (a pane's: the
    flushes and the numbers' throttle; the phase table's: TABLE_HZ): the frame of such a
    repaint (`repaint_due`) is drawn on the screen's next idle (`draw_now`), since it adds no
    frame the update timer's rate kept out. Its other repaints (a mouse moving over it) wait
    for the timer as any widget's. A protocol, not a base: such a widget says so by having
    `repaint_due` (read with getattr on the frame's path: an isinstance of a runtime
    protocol costs microseconds per dirty widget)."""

    repaint_due: bool  # its pending repaint is one the console paced

    def drawn(self) -> None:
        """Its paced repaint was drawn."""


def styles_cache(widget: Widget) -> Any:
    """The StylesCache the widget is rendered with (a FramedLines or KeptLines of ours where
    those features are on)."""
    return widget._styles_cache


def draw_now(screen: Screen[Any]) -> None:
    """Draw the screen's pending changes now when a repaint paced by the console (DrawnAtOnce)
    is among them, as the update timer's tick does (Screen._on_timer_update), rather than
    resume that timer: it ticks on a grid (TEXTUAL_FPS), so a repaint waited up to a period
    with nothing to do (8-17 ms measured, at 120 frames a second, after a frame longer than
    its period), and each tick woke the timer's task twice. Otherwise (and with the feature
    off) the changes are left to the timer."""
    if _DRAW not in _checked and not usable(_DRAW, Screen=screen, App=screen.app):
        return  # (checked once: the frame's path pays a set lookup)
    try:
        if screen.app._batch_count or not screen.is_current:
            return
        due: list[DrawnAtOnce] = [w for w in screen._dirty_widgets  # type: ignore[misc]
                                  if getattr(w, "repaint_due", False)]
        if due:
            for widget in due:
                widget.drawn()
            screen._on_timer_update()
    except (AttributeError, TypeError) as exc:
        fall_back(_DRAW, exc)


def repaint_rows(widget: Widget, spans: Sequence[tuple[int, int]]) -> None:
    """Repaint content rows (each span: its first row and how many) over the widget's whole
    width, its frame's columns included (lines neither cropped nor cut at the content's
    edge): Widget.refresh with those regions, handed to the screen at once. Textual's way
    posts the widget a Prompt, and on its idle the screen an Update, two message pumps woken
    for each repaint before the screen's own idle resumes its drawing (8 panes at 0.1 s:
    about 1 % of a core in those wake-ups). The content's offset is worked out once (what
    Widget._set_dirty does, without working it out again). Textual's way whenever the widget
    is not simply on screen and laid out (a layout or a full repaint pending, hidden,
    closing), or the feature is off."""
    left, top = widget.content_offset
    width = widget.outer_size.width
    try:
        screen: Screen[Any] | None = widget.screen
    except NoScreen:  # (being taken down)
        screen = None
    try:
        if screen is not None and (_ROWS in _checked or usable(
                _ROWS, Screen=screen, Widget=widget, StylesCache=widget._styles_cache,
                Compositor=getattr(screen, "_compositor", None))) \
                and not (widget._repaint_required or widget._layout_required
                         or widget._closing or not widget.display
                         or widget not in screen._compositor.visible_widgets):
            regions = [Region(0, top + y, width, rows) for y, rows in spans]
            widget._dirty_regions.update(regions)
            widget._repaint_regions.update(regions)
            widget._styles_cache.set_dirty(*regions)
            screen._dirty_widgets.add(widget)
            screen.check_idle()
            return
    except (AttributeError, TypeError) as exc:
        fall_back(_ROWS, exc)
    widget.refresh(*(Region(-left, y, width, rows) for y, rows in spans))


def keep_unchanged_lines(screen: Screen[Any]) -> None:
    """The screen and the widgets placed directly on it render their last lines again, as
    they are, while unchanged (KeptLines): every frame renders them. Only those drawn
    Textual's general way (its own StylesCache and render_lines)."""
    if not usable(_KEPT, Widget=screen, StylesCache=getattr(screen, "_styles_cache", None)):
        return
    for widget in (screen, *screen.children):
        if type(widget._styles_cache) is _found["StylesCache"] \
                and type(widget).render_lines is Widget.render_lines:
            widget._styles_cache = KeptLines()


def frame_with(widget: Widget, cache: FramedLines) -> None:
    """The widget rendered through `cache` from now on (where the feature is on; else
    through Textual's own StylesCache and the widget's `render_line`)."""
    if usable(_FRAMED, Widget=widget, StylesCache=getattr(widget, "_styles_cache", None)):
        widget._styles_cache = cache


Frame = tuple[int, int, tuple[Segment, ...], tuple[Segment, ...]]  # rows above, rows to the
# last content row, and a content row's segments to its left and right (border, padding)


class FramedLines(_StylesCache):  # type: ignore[misc,valid-type]
    """A StylesCache for a widget whose content rows change often (a pane's charts, ten times
    a second): a content row is its frame's left and right segments, kept, around the
    widget's own segments for the row (`cells(y, width)`: exactly `width` cells), instead of
    Textual's general path (border, padding, hatch, tint and opacity worked out again for
    every row, and a Strip, seven caches each, made for the content on its way). Only for
    the simple case — no hatch, tint, outline nor opacity — which the pane's styles are;
    otherwise, and for the border rows, Textual's own rendering. `recolour` (the app's line
    filters applied to the widget's styles) is the widget's either way."""

    def __init__(self, cells: Callable[[int, int], Sequence[Segment] | None],
                 recoloured: Callable[[], None] = lambda: None) -> None:
        super().__init__()
        self._cells = cells  # a content row's segments at a width, if the widget has them
        self._frames: dict[tuple[object, ...], Frame | None] = {}
        self.quick_rows = 0  # content rows framed the quick way (for tests)
        # the app's line filters, applied to the widget's styles (its `cells` are drawn in
        # them) rather than to each new row; `recoloured`: they changed, draw the cells again
        self.recolour = Recolour()
        self._recoloured = recoloured

    def clear(self) -> None:
        super().clear()
        self._frames.clear()

    def render(self, styles: StylesBase, size: Size, base_background: Color,
               background: Color, render_content_line: Callable[[int], Strip],
               filters: Sequence[LineFilter], *rest: Any, **options: Any) -> list[Strip]:
        """Textual's, the rows already in filtered styles (Recolour) where it can be."""
        if self.recolour.update(filters, background):
            self.clear()
            self._recoloured()
        strips: list[Strip] = super().render(
            styles, size, base_background, background, render_content_line,
            () if self.recolour.active else filters, *rest, **options)
        return strips

    def render_line(self, styles: StylesBase, y: int, size: Size, content_size: Size,
                    padding: Spacing, base_background: Color, background: Color,
                    render_content_line: Callable[[int], Strip], *rest: Any) -> Strip:
        # rest: the border's title and subtitle (its top and bottom rows only), opacity,
        # ANSI theme, native ANSI
        key = (getattr(styles, "_cache_key", None), size, content_size, padding,
               base_background, background, rest[2], id(rest[3]), rest[4])
        if key not in self._frames:
            self._frames[key] = self._frame(styles, size, content_size, padding,
                                            base_background, background, rest)
        frame = self._frames[key]
        cells = None
        if frame is not None and frame[0] <= y < frame[1]:
            cells = self._cells(y - frame[0], content_size.width)
        if frame is None or cells is None:  # Textual's row, filtered as Textual would
            return self.recolour.strip(super().render_line(
                styles, y, size, content_size, padding, base_background, background,
                render_content_line, *rest))
        self.quick_rows += 1
        return Strip([*frame[2], *cells, *frame[3]], size.width)

    def _frame(self, styles: StylesBase, size: Size, content_size: Size, padding: Spacing,
               base_background: Color, background: Color,
               rest: tuple[Any, ...]) -> Frame | None:
        """A content row's left and right segments, cut from Textual's rendering of a blank
        row; None where they are not the same for every row (hatch, tint, outline,
        opacity)."""
        if (styles.has_rule("hatch") and styles.hatch != "none") or styles.tint.a \
                or rest[2] != 1.0 or styles.text_opacity != 1.0 \
                or any(edge for edge, _ in styles.outline):
            return None
        gutter = styles.gutter
        if not content_size.height or content_size.width != size.width - gutter.width:
            return None
        blank = Strip.blank(content_size.width)
        row = super().render_line(styles, gutter.top, size, content_size, padding,
                                  base_background, background, lambda _y: blank, *rest)
        segments = list(row)
        at, cut = 0, 0
        while cut < len(segments) and at < gutter.left:
            at += segments[cut].cell_length
            cut += 1
        tail: list[Segment] = []
        width = 0
        for segment in reversed(segments[cut:]):
            if width >= gutter.right:
                break
            tail.insert(0, segment)
            width += segment.cell_length
        middle = segments[cut:len(segments) - len(tail)]
        if at != gutter.left or width != gutter.right or [s.text for s in middle] != \
                [s.text for s in blank]:
            return None  # not cut where expected: Textual's own way for every row
        return (gutter.top, gutter.top + content_size.height,
                tuple(self.recolour.segments(segments[:cut])),
                tuple(self.recolour.segments(tail)))


class KeptLines(_StylesCache):  # type: ignore[misc,valid-type]
    """A StylesCache that hands back its last rendering while none of the widget's lines is
    dirty and it is asked for the same region at the same size with the same filters.

    Textual's compositor renders every widget whose clip overlaps a frame's dirty rectangle:
    for a widget directly on the screen the clip is the whole screen, so the header, the
    footer, the knob bar, the panes' grid, the bottom row and the screen itself were rendered
    in every frame a pane's chart made (each line looked up in the cache and its filter's
    result looked up again: 0.05-0.13 ms a widget, half a millisecond a frame). Textual's own
    cache already reuses a line until the widget is refreshed (Widget._set_dirty: set_dirty
    or clear, both kept track of here), so the lines handed back are the ones it would give."""

    def __init__(self) -> None:
        super().__init__()
        self._kept: tuple[tuple[object, ...], list[Strip]] | None = None
        self.kept = 0  # renderings handed back as kept (for tests)

    def clear(self) -> None:
        super().clear()
        self._kept = None

    def set_dirty(self, *regions: Any) -> None:
        super().set_dirty(*regions)
        self._kept = None

    def render_widget(self, widget: Any, crop: Any) -> list[Strip]:
        key = (crop, widget.region.size, *map(id, widget.get_line_filters()),
               widget._border_title, widget._border_subtitle,
               widget.hover_style if widget.auto_links else None)
        kept = self._kept
        if kept is not None and kept[0] == key and not self._dirty_lines:
            self.kept += 1
            return kept[1]
        strips: list[Strip] = super().render_widget(widget, crop)
        self._kept = (key, strips)
        return strips


# ---- the screen as text ------------------------------------------------------------------

_SVG_TEXT = re.compile(r'<text [^>]*?x="([\d.]+)"[^>]*clip-path="url\(#[^"]*-line-(\d+)\)"'
                       r'[^>]*>(.*?)</text>')
SVG_CELL = 20 * 0.61  # a cell's width in rich's SVG (its char height times its aspect ratio)


def screen_text(app: App[Any]) -> str:
    """The screen as plain text, laid out as a screenshot shows it: its compositor's render
    (what Textual's screenshot renders as SVG: Textual has no public "screen as text"), or,
    with the feature off, the text of that public SVG screenshot, line by line."""
    from rich.console import Console

    width, height = app.size
    console = Console(width=width, height=height, file=io.StringIO(), force_terminal=True,
                      color_system=None, record=True, legacy_windows=False, safe_box=False)
    behind: list[Screen[Any]] = []  # screens showing through, bottom first
    for screen in reversed(app.screen_stack[:-1]):
        behind.insert(0, screen)
        if screen.styles.background.a == 1:
            break
    if usable(_TEXT, Screen=app.screen, Compositor=getattr(app.screen, "_compositor", None)):
        try:
            console.print(app.screen._compositor.render_update(full=True,
                                                               screen_stack=behind))
            return console.export_text()
        except (AttributeError, TypeError) as exc:
            fall_back(_TEXT, exc)
    lines: dict[int, str] = {}
    for x, y, text in _SVG_TEXT.findall(app.export_screenshot()):
        line = lines.get(int(y), "")  # each run at its column (runs of spaces are left out)
        line += " " * max(0, round(float(x) / SVG_CELL) - cell_len(line))
        lines[int(y)] = line + html.unescape(text).replace("\xa0", " ")
    return "\n".join(set_cell_size(lines.get(y, ""), width) for y in range(height))


# ---- after a crash or a signal (the guard) ----------------------------------------------

# (these read their privates with getattr and a default: a missing one is the public way,
# the generic line and a reset sequence, with nothing to turn off)
def driver_of(app: App[Any]) -> Any:
    """The app's driver, if it has one."""
    return getattr(app, "_driver", None)


def saved_terminal_modes(app: App[Any]) -> tuple[int, Any] | None:
    """The terminal's file descriptor and the modes the driver found it in, to put back."""
    driver = driver_of(app)
    attrs = getattr(driver, "attrs_before", None)
    fileno = getattr(driver, "fileno", None)
    return None if attrs is None or fileno is None else (fileno, attrs)


def silence_dead_writer(app: App[Any]) -> None:
    """A driver's writer thread that has ended (its terminal gone) writes nothing from now
    on: frames queued to it would block the event loop for good."""
    writer = getattr(driver_of(app), "_writer_thread", None)
    if writer is not None and not writer.is_alive():
        writer.write = writer.stop = lambda *_: None


def ended_with(app: App[Any]) -> BaseException | None:
    """What Textual's app ended with, if anything."""
    error = getattr(app, "_exception", None)
    return error if isinstance(error, BaseException) else None


# ---- the terminal driver: its input thread asleep until input comes ---------------------

def quiet_driver(driver: type[Driver]) -> type[Driver]:
    """The driver the console runs on: QuietInputDriver where Textual would pick its Linux
    driver (not one named in TEXTUAL_DRIVER, nor the headless one of tests) and the feature
    is on.

    Textual's input thread waits for the terminal's input with a 0.1 s timeout, so it wakes
    ten times a second whether or not a key came (to give its parser a look at the clock: a
    lone Escape is a key only once no sequence follows it): on a live 2-pair console that
    thread took 0.10-0.15 % of a core. QuietInputDriver's waits with no timeout while its
    parser waits for nothing, and until the parser's own deadline when it does (the lone
    Escape is delivered as before); disabling input wakes it through a pipe of its own."""
    if driver is LinuxDriver and _INPUT not in _off and not missing(_INPUT):
        return QuietInputDriver  # (its instance's privates are looked for as it starts)
    return driver


def _wait(parser: Any) -> float | None:
    """How long the input thread may sleep: until the parser's deadline, or for good."""
    deadline: float | None = parser._timeout_time
    return None if deadline is None else max(0.0, deadline - _found["get_time"]())


class QuietInputDriver(_LinuxDriver):  # type: ignore[misc,valid-type]
    """LinuxDriver whose input thread sleeps until input comes, its parser's deadline, or
    input is disabled (a byte on its wake-up pipe)."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self._wake_read, self._wake_write = os.pipe()
        os.set_blocking(self._wake_read, False)

    def disable_input(self) -> None:
        """Textual's, the input thread woken first to see its exit event (the byte stays in
        the pipe, so a thread that looks before the event is set waits on the event, not on
        input: see run_input_thread), then the pipe emptied for the next input thread."""
        os.write(self._wake_write, b"\0")
        try:
            super().disable_input()
        finally:
            with contextlib.suppress(BlockingIOError):
                while os.read(self._wake_read, 512):
                    pass

    def close(self) -> None:
        super().close()
        for fd in (self._wake_read, self._wake_write):
            with contextlib.suppress(OSError):
                os.close(fd)

    def run_input_thread(self) -> None:
        """Wait for input and dispatch events (Textual's, but for the wait; Textual's own
        where what it takes from Textual is not there)."""
        parser: Any = None
        try:
            parser = _found["XTermParser"](self._debug)
        except (AttributeError, TypeError) as exc:
            fall_back(_INPUT, exc)
        if _INPUT in _off or not usable(_INPUT, LinuxDriver=self, XTermParser=parser):
            super().run_input_thread()
            return
        selector = selectors.SelectSelector()
        selector.register(self.fileno, selectors.EVENT_READ)
        selector.register(self._wake_read, selectors.EVENT_READ)
        fileno = self.fileno
        feed = parser.feed
        tick = parser.tick
        decode = getincrementaldecoder("utf-8")().decode
        read = os.read
        loop_last = _found["loop_last"]
        parse_error: type[Exception] = _found["ParseError"] or EOFError

        def process_selector_events(
            selector_events: list[tuple[selectors.SelectorKey, int]], final: bool = False
        ) -> None:
            for last, (key, mask) in loop_last(selector_events):
                if key.fd == fileno and mask & selectors.EVENT_READ:
                    unicode_data = decode(read(fileno, 1024 * 4), final=final and last)
                    if not unicode_data:
                        break  # (stdin piped, and at its end)
                    for event in feed(unicode_data):
                        self.process_message(event)
            for event in tick():
                self.process_message(event)

        try:
            while not self.exit_event.is_set():
                ready = selector.select(_wait(parser))
                if any(key.fd == self._wake_read for key, _ in ready):
                    self.exit_event.wait(1.0)  # disable_input sets it right after the byte
                process_selector_events(ready)
            selector.unregister(self.fileno)
            selector.unregister(self._wake_read)
            process_selector_events(selector.select(0.1), final=True)
        finally:
            selector.close()
            try:
                for _event in feed(""):
                    pass
            except (EOFError, parse_error):
                pass
