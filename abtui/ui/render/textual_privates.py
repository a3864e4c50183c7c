"""Every use of Textual's private API, in this one module, each with a public fallback.

Textual has no public API for some of what the console does (docs/architecture.md, "Size, and
where the code reaches past a public API"); what it reaches for is named in PRIVATES (a
private module's class, or an attribute of a class or of its instances), each with the
FEATURES that use it, and pinned by tests/ui/test_textual_privates.py against the installed
Textual (pyproject.toml bounds Textual to the versions tested). A feature whose private is
missing or has changed shape — not there at its first use, a StylesCache method with other
parameters (SIGNATURES), an AttributeError or a TypeError on the way — is turned off, once and
logged, and the console goes Textual's public way for it from then on: a newer Textual costs
speed, never a crash. SWITCH turns features off from the start (the bench's arms).

A private is kept only where no public path does the same, and, for speed, only with a gain
over its public path measured in the same run (docs/performance.md, "Textual's privates, each
against its public path"). The features:

- `draw_now`: a repaint the console paced drawn on the screen's next idle, not on the update
  timer's grid (else the timer draws it);
- `framed_lines`: a pane's content rows framed from its border's kept segments
  (`FramedLines`; else Textual's general rendering through the pane's `render_line`);
- `restore_terminal`: after a crash or a signal, what the app ended with and a writer thread
  its terminal's end stopped (else the generic line; frames then queued could block).

Gone the public way, measured too small to keep their privates: a pane's rows handed to the
screen at once (`Widget.refresh` with the rows' regions), the widgets that seldom change
rendering their last lines again (Textual's own StylesCache), the input thread asleep until
input comes (Textual's Linux driver), the screen as text (abtui.ui.render.screen_text: the
text of Textual's public SVG screenshot).
"""

from __future__ import annotations

import importlib
import inspect
import logging
import os
from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING, Any, NamedTuple, Protocol

from rich.segment import Segment
from rich.terminal_theme import TerminalTheme
from textual.app import App
from textual.color import Color
from textual.drivers.linux_driver import LinuxDriver
from textual.filter import LineFilter
from textual.geometry import Size, Spacing
from textual.screen import Screen
from textual.strip import Strip
from textual.widget import Widget

from abtui.ui.render.drawing import Recolour

if TYPE_CHECKING:
    from textual.css.styles import StylesBase

__all__ = ["FEATURES", "PRIVATES", "SIGNATURES", "SWITCH", "DrawnAtOnce", "FramedLines",
           "draw_now", "ended_with", "fallen_back", "frame_with", "silence_dead_writer",
           "usable"]

log = logging.getLogger(__name__)

FEATURES = ("draw_now", "framed_lines", "restore_terminal")


def _private(module: str, name: str) -> Any:
    """A class from one of Textual's private modules, or None where it is not there."""
    try:
        return getattr(importlib.import_module(module), name)
    except (ImportError, AttributeError):
        return None


# (module, name) of each private class used, by the name PRIVATES knows it as
MODULES: dict[str, tuple[str, str]] = {
    "StylesCache": ("textual._styles_cache", "StylesCache"),
}
_found: dict[str, Any] = {name: _private(*where) for name, where in MODULES.items()}
# what a private class is subclassed from when the installed Textual lacks it (never used:
# its feature is off)
_StylesCache: type = _found["StylesCache"] or type("StylesCacheMissing", (), {})


class Private(NamedTuple):
    """One private: `owner` ("module": `name` is one of MODULES; else the class it is an
    attribute of: Screen, App, Widget, StylesCache, LinuxDriver),
    `name`, the features that use it, and whether it is an instance's (set in __init__:
    looked for on an instance, at the feature's first use)."""

    owner: str
    name: str
    features: tuple[str, ...]
    on_instance: bool = False


_DRAW, _FRAMED, _GUARD = "draw_now", "framed_lines", "restore_terminal"

PRIVATES: tuple[Private, ...] = (
    Private("module", "StylesCache", (_FRAMED,)),
    Private("Widget", "_styles_cache", (_FRAMED,), True),
    Private("StylesCache", "render", (_FRAMED,)),
    Private("StylesCache", "render_line", (_FRAMED,)),
    Private("StylesCache", "clear", (_FRAMED,)),
    Private("Screen", "_dirty_widgets", (_DRAW,), True),
    Private("Screen", "_on_timer_update", (_DRAW,)),
    Private("App", "_exception", (_GUARD,), True),
    Private("App", "_driver", (_GUARD,), True),
    Private("LinuxDriver", "_writer_thread", (_GUARD,), True),
)

# the parameters of the StylesCache methods overridden here, as Textual 8.2 has them
# (FramedLines' overrides take the same, by name)
SIGNATURES: dict[str, tuple[str, ...]] = {
    "render": ("self", "styles", "size", "base_background", "background",
               "render_content_line", "filters", "border_title", "border_subtitle",
               "content_size", "padding", "crop", "opacity", "ansi_theme", "native_ansi"),
    "render_line": ("self", "styles", "y", "size", "content_size", "padding",
                    "base_background", "background", "render_content_line", "border_title",
                    "border_subtitle", "opacity", "ansi_theme", "native_ansi"),
    "clear": ("self",),
}
_SIGNED = {_FRAMED: ("render", "render_line", "clear")}

_off: dict[str, str] = {}  # feature -> why it went the public way
_checked: set[str] = set()  # features whose privates were all found
# features (comma-separated, or "all") that go the public way from the start: the bench's
# arms that measure each private's gain over its public path (docs/performance.md)
SWITCH = "ABTUI_TEXTUAL_PUBLIC"


def switched_off() -> list[str]:
    """The features SWITCH names (all of them for "all"); a name that is no feature is left
    out."""
    wanted = [w.strip() for w in os.environ.get(SWITCH, "").split(",") if w.strip()]
    return list(FEATURES) if "all" in wanted else [w for w in wanted if w in FEATURES]


def _switch() -> None:
    for feature in switched_off():
        _off[feature] = f"turned off by {SWITCH}"


def _classes() -> dict[str, Any]:
    return {"Screen": Screen, "App": App, "Widget": Widget, "LinuxDriver": LinuxDriver,
            "StylesCache": _found["StylesCache"]}


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
    (on these instances: screen, app, widget, styles cache, driver, by owner name) and none
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
    _switch()


_switch()


# ---- a paced repaint, the framed lines (drawing) --------------------------------------

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
    """The StylesCache the widget is rendered with (a FramedLines of ours where that feature
    is on)."""
    return widget._styles_cache


def draw_now(screen: Screen[Any]) -> None:
    """Draw the screen's pending changes now when a repaint paced by the console (DrawnAtOnce)
    is among them, as the update timer's tick does (Screen._on_timer_update), rather than
    resume that timer: it ticks on a grid (TEXTUAL_FPS), so a repaint waited up to a period
    with nothing to do (8-17 ms measured, at 120 frames a second, after a frame longer than
    its period), and each tick woke the timer's task twice. Otherwise (and with the feature
    off) the changes are left to the timer. (The tick itself draws nothing while the screen
    is not current or the app is in a batch update.)"""
    if _DRAW not in _checked and not usable(_DRAW, Screen=screen):
        return  # (checked once: the frame's path pays a set lookup)
    try:
        if not screen.is_current:
            return
        due: list[DrawnAtOnce] = [w for w in screen._dirty_widgets  # type: ignore[misc]
                                  if getattr(w, "repaint_due", False)]
        if due:
            for widget in due:
                widget.drawn()
            screen._on_timer_update()
    except (AttributeError, TypeError) as exc:
        fall_back(_DRAW, exc)



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
                    render_content_line: Callable[[int], Strip], border_title: Any,
                    border_subtitle: Any, opacity: float, ansi_theme: TerminalTheme,
                    native_ansi: bool) -> Strip:
        # (the frames are forgotten whenever Textual clears its lines: a change of styles
        # does, as it does for Textual's own cache)
        key = (id(styles), size, content_size, padding, base_background, background, opacity,
               id(ansi_theme), native_ansi)
        titles = (border_title, border_subtitle, opacity, ansi_theme, native_ansi)
        if key not in self._frames:
            self._frames[key] = self._frame(styles, size, content_size, padding,
                                            base_background, background, titles)
        frame = self._frames[key]
        cells = None
        if frame is not None and frame[0] <= y < frame[1]:
            cells = self._cells(y - frame[0], content_size.width)
        if frame is None or cells is None:  # Textual's row, filtered as Textual would
            return self.recolour.strip(super().render_line(
                styles, y, size, content_size, padding, base_background, background,
                render_content_line, *titles))
        self.quick_rows += 1
        return Strip([*frame[2], *cells, *frame[3]], size.width)

    def _frame(self, styles: StylesBase, size: Size, content_size: Size, padding: Spacing,
               base_background: Color, background: Color,
               titles: tuple[Any, Any, float, TerminalTheme, bool]) -> Frame | None:
        """A content row's left and right segments, cut from Textual's rendering of a blank
        row (`titles`: the border's title and subtitle, opacity, ANSI theme, native ANSI);
        None where they are not the same for every row (hatch, tint, outline, opacity)."""
        if (styles.has_rule("hatch") and styles.hatch != "none") or styles.tint.a \
                or titles[2] != 1.0 or styles.text_opacity != 1.0 \
                or any(edge for edge, _ in styles.outline):
            return None
        gutter = styles.gutter
        if not content_size.height or content_size.width != size.width - gutter.width:
            return None
        blank = Strip.blank(content_size.width)
        row = super().render_line(styles, gutter.top, size, content_size, padding,
                                  base_background, background, lambda _y: blank, *titles)
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


# ---- after a crash or a signal (the guard) ----------------------------------------------

# (these read their privates with getattr and a default: a missing one is the public way,
# the generic line, with nothing to turn off; the terminal's modes the guard saves itself)
def silence_dead_writer(app: App[Any]) -> None:
    """A driver's writer thread that has ended (its terminal gone) writes nothing from now
    on: frames queued to it would block the event loop for good (Textual has no public way
    to stop a driver's writing short of ending the app, which is still restoring)."""
    writer = getattr(getattr(app, "_driver", None), "_writer_thread", None)
    if writer is not None and not writer.is_alive():
        writer.write = writer.stop = lambda *_: None


def ended_with(app: App[Any]) -> BaseException | None:
    """What Textual's app ended with, if anything (Textual keeps it for its test harness
    only: `run_async` returns with return code 1 and no exception)."""
    error = getattr(app, "_exception", None)
    return error if isinstance(error, BaseException) else None
