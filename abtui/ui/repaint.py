"""The one place the console reaches into Textual's private drawing machinery.

Three savings of the console's frames need it: a pane's rows handed to the screen without
waking the pane's message pump (`repaint_rows`), a rate-limited widget's repaint drawn on the
screen's next idle rather than on the update timer's next tick (`draw_now`), and widgets
rendered by a StylesCache of the console's own (`FramedLines` for a pane's rows, `KeptLines`
for the widgets on the screen that seldom change). Measured in docs/performance.md ("A pane's
repaint handed to the screen", "The stamp taken by the frame", "The console's frames").

Textual 8.2's privates used, here alone (PRIVATES and SIGNATURES; tests/ui/test_repaint.py
fails when the installed Textual lacks one, or a StylesCache method takes other parameters):

- `Screen._dirty_widgets` (the widgets a frame is to draw), `Screen._on_timer_update` (what
  the update timer's tick does: a layout if one is due, then the frame), `App._batch_count`,
  `Screen._compositor.visible_widgets`;
- what `Widget._set_dirty` does for a region: `Widget._dirty_regions`,
  `Widget._repaint_regions`, and `set_dirty` on the widget's StylesCache; and what makes a
  widget not simply on screen: `_repaint_required`, `_layout_required`, `_closing`;
- `Widget._styles_cache` (a StylesCache per widget, replaced by the ones here),
  `Widget._border_title` and `_border_subtitle`;
- `textual._styles_cache.StylesCache`: `render_widget`, `render`, `render_line`,
  `set_dirty`, `clear` and `_dirty_lines`, overridden or read by the caches here.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING, Any, Protocol

from rich.segment import Segment
from textual._styles_cache import StylesCache
from textual.app import App
from textual.color import Color
from textual.dom import NoScreen
from textual.filter import LineFilter
from textual.geometry import Region, Size, Spacing
from textual.screen import Screen
from textual.strip import Strip
from textual.widget import Widget

from abtui.ui.drawing import Recolour

if TYPE_CHECKING:
    from textual.css.styles import StylesBase

__all__ = ["PRIVATES", "SIGNATURES", "DrawnAtOnce", "FramedLines", "KeptLines", "draw_now",
           "frame_with", "keep_unchanged_lines", "missing_privates", "repaint_rows",
           "styles_cache"]

# (whose, which): a class and an attribute of it, or of its instances (those set in
# __init__ are looked for on an instance made by the test)
PRIVATES: tuple[tuple[type, str], ...] = (
    (Screen, "_dirty_widgets"), (Screen, "_on_timer_update"), (Screen, "_compositor"),
    (App, "_batch_count"),
    (Widget, "_set_dirty"), (Widget, "_dirty_regions"), (Widget, "_repaint_regions"),
    (Widget, "_repaint_required"), (Widget, "_layout_required"), (Widget, "_closing"),
    (Widget, "_styles_cache"), (Widget, "_border_title"), (Widget, "_border_subtitle"),
    (StylesCache, "render_widget"), (StylesCache, "render"), (StylesCache, "render_line"),
    (StylesCache, "set_dirty"), (StylesCache, "clear"), (StylesCache, "_dirty_lines"),
)


# the parameters of the methods overridden or called here, as Textual 8.2 has them
# (FramedLines.render_line reads opacity, ansi_theme and native_ansi by position)
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


def missing_privates(instances: dict[type, object],
                     privates: Sequence[tuple[type, str]] = PRIVATES) -> list[str]:
    """The `privates` (these PRIVATES, or another module's list) the installed Textual lacks
    (looked for on its class, or on the instance of it in `instances`)."""
    return [f"{whose.__name__}.{name}" for whose, name in privates
            if not hasattr(instances.get(whose, whose), name)]


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


def styles_cache(widget: Widget) -> StylesCache:
    """The StylesCache the widget is rendered with."""
    return widget._styles_cache


def draw_now(screen: Screen[Any]) -> None:
    """Draw the screen's pending changes now when a repaint paced by the console (DrawnAtOnce)
    is among them, as the update timer's tick does (Screen._on_timer_update), rather than
    resume that timer: it ticks on a grid (TEXTUAL_FPS), so a repaint waited up to a period
    with nothing to do (8-17 ms measured, at 120 frames a second, after a frame longer than
    its period), and each tick woke the timer's task twice. Otherwise the changes are left to
    the timer."""
    if screen.app._batch_count or not screen.is_current:
        return
    due: list[DrawnAtOnce] = [widget for widget in screen._dirty_widgets  # type: ignore[misc]
                              if getattr(widget, "repaint_due", False)]
    if due:
        for widget in due:
            widget.drawn()
        screen._on_timer_update()


def repaint_rows(widget: Widget, spans: Sequence[tuple[int, int]]) -> None:
    """Repaint content rows (each span: its first row and how many) over the widget's whole
    width, its frame's columns included (lines neither cropped nor cut at the content's
    edge): Widget.refresh with those regions, handed to the screen at once. Textual's way
    posts the widget a Prompt, and on its idle the screen an Update, two message pumps woken
    for each repaint before the screen's own idle resumes its drawing (8 panes at 0.1 s:
    about 1 % of a core in those wake-ups). The content's offset is worked out once (what
    Widget._set_dirty does, without working it out again). Textual's way whenever the widget
    is not simply on screen and laid out (a layout or a full repaint pending, hidden,
    closing)."""
    left, top = widget.content_offset
    width = widget.outer_size.width
    try:
        screen: Screen[Any] | None = widget.screen
    except NoScreen:  # (being taken down)
        screen = None
    if screen is None or widget._repaint_required or widget._layout_required \
            or widget._closing or not widget.display \
            or widget not in screen._compositor.visible_widgets:
        widget.refresh(*(Region(-left, y, width, rows) for y, rows in spans))
        return
    regions = [Region(0, top + y, width, rows) for y, rows in spans]
    widget._dirty_regions.update(regions)
    widget._repaint_regions.update(regions)
    widget._styles_cache.set_dirty(*regions)
    screen._dirty_widgets.add(widget)
    screen.check_idle()


def keep_unchanged_lines(screen: Screen[Any]) -> None:
    """The screen and the widgets placed directly on it render their last lines again, as
    they are, while unchanged (KeptLines): every frame renders them. Only those drawn
    Textual's general way (its own StylesCache and render_lines)."""
    for widget in (screen, *screen.children):
        if type(widget._styles_cache) is StylesCache \
                and type(widget).render_lines is Widget.render_lines:
            widget._styles_cache = KeptLines()


def frame_with(widget: Widget, cache: StylesCache) -> None:
    """The widget rendered through `cache` (a FramedLines) from now on."""
    widget._styles_cache = cache


Frame = tuple[int, int, tuple[Segment, ...], tuple[Segment, ...]]  # rows above, rows to the
# last content row, and a content row's segments to its left and right (border, padding)


class FramedLines(StylesCache):
    """A StylesCache for a widget whose content rows change often (a pane's charts, ten times
    a second): a content row is its frame's left and right segments, kept, around the
    widget's own segments for the row (`cells(y, width)`: exactly `width` cells), instead of
    Textual's general path (border, padding, hatch, tint and opacity worked out again for
    every row, and a Strip, seven caches each, made for the content on its way). Only for
    the simple case — no hatch, tint, outline nor opacity — which the pane's styles are;
    otherwise, and for the border rows, Textual's own rendering."""

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
        return super().render(styles, size, base_background, background,
                              render_content_line, () if self.recolour.active else filters,
                              *rest, **options)

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


class KeptLines(StylesCache):
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
        strips = super().render_widget(widget, crop)
        self._kept = (key, strips)
        return strips
