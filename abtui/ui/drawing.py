"""A pane's rows drawn straight into strips: packed text lines from their spans, and bar
charts on a shared scale with knob markers.

Textual's general rendering (a Static's wrapping, a style per cell run carrying its offset
for mouse selection; a widget per line) was most of a busy console's frame: the pane draws
its rows itself with these, keeps them, and redraws only the rows that changed."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from functools import lru_cache
from typing import TYPE_CHECKING, Any

from rich.cells import cell_len
from rich.segment import Segment
from rich.style import Style
from textual._styles_cache import StylesCache
from textual.color import Color
from textual.content import Content
from textual.filter import ANSIToTruecolor, LineFilter
from textual.geometry import Size, Spacing
from textual.strip import Strip
from textual.style import Style as TextualStyle

if TYPE_CHECKING:
    from textual.css.styles import StylesBase

BARS = " ▁▂▃▄▅▆▇█"


class Recolour:
    """What the app's line filters do to a style, worked out once per style. Textual filters
    every new row of a widget (StylesCache.render: each segment's style looked up again, a
    new list of segments and a second Strip), which was a tenth of a busy console's frames;
    a widget drawn in styles recoloured here needs none of that. Only where every filter is
    Textual's ANSI-to-truecolour conversion (its default), which maps each style on its own
    and leaves a converted style as it is: a row filtered again (a row Textual draws around
    the widget's own content) is unchanged. Otherwise `active` is False and the rows are
    filtered Textual's way."""

    def __init__(self) -> None:
        self.filters: tuple[LineFilter, ...] = ()
        self.background: Color | None = None
        self.active = False
        self._styles: dict[Style, Style] = {}

    def update(self, filters: Sequence[LineFilter], background: Color) -> bool:
        """The app's filters and the widget's background for this render: whether they
        changed (what was drawn in the former styles is then to be drawn again)."""
        if background == self.background and len(filters) == len(self.filters) and all(
                a is b for a, b in zip(filters, self.filters, strict=True)):
            return False
        self.filters, self.background = tuple(filters), background
        self.active = all(type(f) is ANSIToTruecolor for f in self.filters)
        self._styles.clear()
        return True

    def __call__(self, style: Style) -> Style:
        """`style` as the filters would leave it."""
        if not self.active or self.background is None:
            return style
        got = self._styles.get(style)
        if got is None:
            got = self._styles[style] = self.segments([Segment(" ", style)])[0].style or style
        return got

    def segments(self, segments: list[Segment]) -> list[Segment]:
        """Segments as the filters leave them (each filter's own way)."""
        if self.active and self.background is not None:
            for f in self.filters:
                segments = f.apply(segments, self.background)
        return segments

    def strip(self, strip: Strip) -> Strip:
        """A row Textual drew, filtered as Textual would (a no-op where it was not active)."""
        if self.active and self.background is not None:
            for f in self.filters:
                strip = strip.apply_filter(f, self.background)
        return strip


NO_RECOLOUR = Recolour()  # never updated: styles as they are


class TextDrawer:
    """Packed text lines as strips; the rich style of each span's style over a base is kept
    (forget() after a theme change), recoloured by `recolour` (Recolour)."""

    def __init__(self, recolour: Recolour = NO_RECOLOUR) -> None:
        self._styles: dict[tuple[str | TextualStyle, TextualStyle], Style] = {}
        self._bases: dict[TextualStyle, tuple[Style, Style]] = {}  # base: its own, its padding
        self.recolour = recolour

    def forget(self) -> None:
        self._styles.clear()
        self._bases.clear()

    def _base(self, base: TextualStyle) -> tuple[Style, Style]:
        got = self._bases.get(base)
        if got is None:
            got = self._bases[base] = (self.recolour(base.rich_style),
                                       self.recolour(base.background_style.rich_style))
        return got

    def cells(self, line: Content | Sequence[tuple[str, str | None]], base: TextualStyle,
              width: int) -> list[Segment]:
        """`line` in `base` (its spans' or runs' styles over it), padded or cut to `width`
        cells, as segments (a Strip costs seven caches: made once, by the frame)."""
        base_rich, padding = self._base(base)
        if isinstance(line, Content):
            segments, length = self._segments(line, base), line.cell_length
        else:
            segments = [Segment(text, base_rich if style is None else self._rich(style, base))
                        for text, style in line]
            length = sum(cell_len(text) for text, _ in line)
        if length < width:
            segments.append(Segment(" " * (width - length), padding))
        elif length > width:
            segments = list(Strip(segments, length).crop(0, width))
        return segments

    def _segments(self, line: Content, base: TextualStyle) -> list[Segment]:
        """A line's segments: its text between spans in the base style, each span's in the
        base style plus its own; Textual's rendering where spans overlap."""
        plain, at, out = line.plain, 0, []
        base_rich = self._base(base)[0]
        for span in sorted(line.spans, key=lambda sp: sp.start):
            if span.start < at:
                return self.recolour.segments(list(line.render_segments(base)))
            if span.start > at:
                out.append(Segment(plain[at:span.start], base_rich))
            out.append(Segment(plain[span.start:span.end], self._rich(span.style, base)))
            at = span.end
        if at < len(plain):
            out.append(Segment(plain[at:], base_rich))
        return out

    def _rich(self, style: str | TextualStyle, base: TextualStyle) -> Style:
        key = (style, base)
        got = self._styles.get(key)
        if got is None:
            extra = TextualStyle.parse(style) if isinstance(style, str) else style
            got = self._styles[key] = self.recolour((base + extra).rich_style)
        return got


@lru_cache(maxsize=8)
def _columns(height: int) -> dict[tuple[int, bool], tuple[str, ...]]:
    """A column's character per row (top first), by its filled eighths and whether a knob
    changed there (`┆` where its bar leaves the row empty)."""
    out = {}
    for filled in range(8 * height + 1):
        for marked in (False, True):
            parts = [min(max(filled - 8 * (height - 1 - y), 0), 8) for y in range(height)]
            out[filled, marked] = tuple(BARS[p] if p or not marked else "┆" for p in parts)
    return out


def chart_rows(data: Sequence[float], markers: Sequence[bool], ceiling: float, width: int,
               height: int, palette: tuple[Style, Style, Style, Style]) -> list[list[Segment]]:
    """A bar per value (the latest `width`), scaled 0..`ceiling` (shared by every pane so
    heights compare) over `height` rows; a marked column (a knob changed) in the marker
    style, `┆` where its bar is empty. `palette`: base, low, high and marker styles. Runs of
    one style are one segment (cheap to compose); each row as segments, `width` cells."""
    return ChartDrawer().rows(data, markers, ceiling, width, height, palette)


class ChartDrawer:
    """chart_rows for a chart that scrolls: each value's column and style are kept, and a
    drawing works out only the values that came since the last one (at 8 pairs at 0.1 s a
    pane's two charts were drawn 10 times a second each, every column again)."""

    def __init__(self) -> None:
        self._key: tuple[float, int] | None = None  # (ceiling, height) the columns are for
        self._values: list[float] = []
        self._marks: list[bool] = []
        self._columns: list[tuple[str, ...]] = []  # each value's characters, top row first
        self._kinds: list[int] = []  # and its style: 1 low, 2 high, 3 marker (palette index)

    def rows(self, data: Sequence[float], markers: Sequence[bool], ceiling: float,
             width: int, height: int,
             palette: tuple[Style, Style, Style, Style]) -> list[list[Segment]]:
        """chart_rows(data, markers, ceiling, width, height, palette)."""
        values = list(data)[-width:] if width else []
        if not values:
            return [[Segment(" " * width, palette[0])] for _ in range(height)]
        marks = list(markers)[-len(values):]
        if len(marks) < len(values):
            marks = [False] * (len(values) - len(marks)) + marks
        ceiling = ceiling or 1.0
        if self._key != (ceiling, height):
            self._key, self._values, self._marks = (ceiling, height), [], []
        kept = self._kept(values, marks)
        columns, kinds = _columns_of(values[kept[1]:], marks[kept[1]:], ceiling, height)
        shift, n = kept
        self._values, self._marks = values, marks
        columns = self._columns = self._columns[shift:shift + n] + columns
        kinds = self._kinds = self._kinds[shift:shift + n] + kinds
        runs: list[list[int]] = []  # [start, end, kind]: the same in every row
        last = 0
        for i, kind in enumerate(kinds):
            if kind == last:
                runs[-1][1] = i + 1
            else:
                runs.append([i, i + 1, kind])
                last = kind
        blank = Segment(" " * (width - len(values)), palette[0])
        # each row's text: the columns' characters for that row, side by side
        return [[blank, *(Segment(row[a:b], palette[kind]) for a, b, kind in runs)]
                for row in map("".join, zip(*columns, strict=True))]

    def _kept(self, values: list[float], marks: list[bool]) -> tuple[int, int]:
        """(how many of the kept values left at the front, how many of the rest are the
        new values' first): a chart that scrolled by a value or two, or grew."""
        old_v, old_m = self._values, self._marks
        for shift in (1, 0, 2, 3):
            n = len(old_v) - shift
            if 0 < n <= len(values) and values[:n] == old_v[shift:] \
                    and marks[:n] == old_m[shift:]:
                return shift, n
        return 0, 0


def _columns_of(values: Sequence[float], marks: Sequence[bool], ceiling: float,
                height: int) -> tuple[list[tuple[str, ...]], list[int]]:
    """Each value's column of characters and its style's palette index (1 low, 2 high from
    66 % of the ceiling, 3 a knob's marker)."""
    levels = 8 * height
    columns = _columns(height)
    top = 0.66 * ceiling
    # a column's filled eighths: at least one for any rate above 0, all of them at the top
    cells = [columns[(levels if (x := v / ceiling) >= 1.0 else (round(x * levels) or 1))
                     if v > 0 else 0, m] for v, m in zip(values, marks, strict=True)]
    return cells, [3 if m else 2 if v >= top else 1 for v, m in zip(values, marks, strict=True)]


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
