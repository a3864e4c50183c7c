"""A pane's rows drawn straight into strips: packed text lines from their spans, and bar
charts on a shared scale with knob markers.

Textual's general rendering (a Static's wrapping, a style per cell run carrying its offset
for mouse selection; a widget per line) was most of a busy console's frame: the pane draws
its rows itself with these, keeps them, and redraws only the rows that changed."""

from __future__ import annotations

from collections.abc import Sequence
from functools import lru_cache

from rich.cells import cell_len
from rich.segment import Segment
from rich.style import Style
from textual.color import Color
from textual.content import Content
from textual.filter import ANSIToTruecolor, LineFilter
from textual.strip import Strip
from textual.style import Style as TextualStyle

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


class ChartDrawer:
    """A pane's bar chart: a bar per value (the latest `width`), scaled 0..`ceiling` (shared
    by every pane so heights compare) over `height` rows; a marked column (a knob changed) in
    the marker style, `┆` where its bar is empty. Each value's column and style are kept, and
    a drawing works out only the values that came since the last one (at 8 pairs at 0.1 s a
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
        """The chart's rows as segments, `width` cells each (runs of one style are one
        segment: cheap to compose). `palette`: base, low, high and marker styles."""
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
