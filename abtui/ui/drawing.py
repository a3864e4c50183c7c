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
from textual.content import Content
from textual.strip import Strip
from textual.style import Style as TextualStyle

BARS = " ▁▂▃▄▅▆▇█"


class TextDrawer:
    """Packed text lines as strips; the rich style of each span's style over a base is kept
    (forget() after a theme change)."""

    def __init__(self) -> None:
        self._styles: dict[tuple[str | TextualStyle, TextualStyle], Style] = {}

    def forget(self) -> None:
        self._styles.clear()

    def strip(self, line: Content | Sequence[tuple[str, str | None]], base: TextualStyle,
              width: int) -> Strip:
        """`line` in `base` (its spans' or runs' styles over it), padded or cut to `width`
        cells."""
        if isinstance(line, Content):
            segments, length = self._segments(line, base), line.cell_length
        else:
            base_rich = base.rich_style
            segments = [Segment(text, base_rich if style is None else self._rich(style, base))
                        for text, style in line]
            length = sum(cell_len(text) for text, _ in line)
        return Strip(segments, length).adjust_cell_length(
            width, base.background_style.rich_style)

    def _segments(self, line: Content, base: TextualStyle) -> list[Segment]:
        """A line's segments: its text between spans in the base style, each span's in the
        base style plus its own; Textual's rendering where spans overlap."""
        plain, at, out = line.plain, 0, []
        base_rich = base.rich_style
        for span in sorted(line.spans, key=lambda sp: sp.start):
            if span.start < at:
                return list(line.render_segments(base))
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
            got = self._styles[key] = (base + extra).rich_style
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


def chart_strips(data: Sequence[float], markers: Sequence[bool], ceiling: float, width: int,
                 height: int, palette: tuple[Style, Style, Style, Style]) -> list[Strip]:
    """A bar per value (the latest `width`), scaled 0..`ceiling` (shared by every pane so
    heights compare) over `height` rows; a marked column (a knob changed) in the marker
    style, `┆` where its bar is empty. `palette`: base, low, high and marker styles. Runs of
    one style are one segment (cheap to compose)."""
    values = list(data)[-width:] if width else []
    marks = list(markers)[-len(values):] if values else []
    marks = [False] * (len(values) - len(marks)) + marks
    ceiling = ceiling or 1.0
    base, low, high, mark = palette
    levels = 8 * height
    columns = _columns(height)
    cells = [columns[max(1, round(min(v / ceiling, 1.0) * levels)) if v > 0 else 0, m]
             for v, m in zip(values, marks, strict=True)]
    runs: list[tuple[int, int, Style]] = []  # (start, end, style): the same in every row
    for i, (v, m) in enumerate(zip(values, marks, strict=True)):
        style = mark if m else high if v >= 0.66 * ceiling else low
        if runs and runs[-1][2] is style:
            runs[-1] = (runs[-1][0], i + 1, style)
        else:
            runs.append((i, i + 1, style))
    blank = Segment(" " * (width - len(values)), base)
    strips = []
    for y in range(height):
        row = "".join(cell[y] for cell in cells)
        strips.append(Strip([blank, *(Segment(row[a:b], style) for a, b, style in runs)],
                            width))
    return strips
