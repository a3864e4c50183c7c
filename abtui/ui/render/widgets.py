"""A pane per pair, drawn as one widget: its frame (border, hosts as its title, link state
as its subtitle), then bands of rows — the kernel and tunnel, the knobs, the throughput
figures, its chart, the RTT figures, its chart, the TCP (or UDP) figures and the last error.

Each band is drawn into strips kept until its text or data changes, and only its rows are
repainted then (Widget.refresh with the band's region: Textual's StylesCache re-renders only
those lines and the compositor's dirty region is that band). A widget per line cost most of
a busy console's frame: the compositor cuts every screen line at every widget's edge and
styles every widget of the region that changed."""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import ClassVar, Literal

from rich.cells import cell_len
from rich.segment import Segment
from rich.style import Style
from textual.content import Content
from textual.geometry import Region, Size
from textual.message import Message
from textual.strip import Strip
from textual.style import Style as TextualStyle
from textual.widget import Widget

from abtui.core.dimensions import TUNNEL
from abtui.core.model import LinkState
from abtui.core.numbers import ms, rate_unit, sig
from abtui.core.text import UNKNOWN, visible
from abtui.ui.model.bench import BenchProbe
from abtui.ui.model.pair_state import PairState
from abtui.ui.render.chips import (
    DIM,
    Part,
    Row,
    Styled,
    cpu_chips,
    human_bytes,
    pack_rows,
    row_text,
    styled,
)
from abtui.ui.render.drawing import ChartDrawer, TextDrawer
from abtui.ui.render.textual_privates import FramedLines, frame_with

__all__ = ["LINK_TEXT", "PANE_INNER", "Chart", "Line", "PairPane", "Series"]

# a border title's frame: `╭─ ` before it, ` ─` and the corner after it
TITLE_FRAME = 6
PANE_INNER = 34  # a pane's text width before its first layout (40 columns less the frame)
Line = Literal["head", "config", "bps-label", "rtt-label", "tcp", "error"]
Chart = Literal["bps", "rtt"]
Band = Line | Chart
BANDS: tuple[Band, ...] = ("head", "config", "bps-label", "bps", "rtt-label", "rtt", "tcp",
                           "error")
CHART_ROWS: dict[str, int] = {"bps": 2, "rtt": 1}
LINE_CLASS: dict[str, tuple[str, ...]] = {"config": ("pane--config",),
                                          "error": ("pane--error",)}

LINK_TEXT: dict[str, str] = {
    LinkState.CONNECTED: "[b $success]● connected[/]",
    LinkState.CONNECTING: "[b $warning]◌ connecting[/]",
    LinkState.RECONNECTING: "[b $warning]◌ reconnecting[/]",
    LinkState.LOST: "[b reverse $error] ✖ LOST [/]",
    LinkState.FAILED: "[b reverse $error] ✖ could not connect [/]",
    LinkState.CLOSED: "[dim]○ closed[/]",
}


@dataclass
class Series:
    """A chart as drawn: its values, the columns where a knob changed, and its scale's top."""

    data: list[float] = field(default_factory=list)
    markers: list[bool] = field(default_factory=list)
    ceiling: float = 1.0


def repaint_rows(widget: Widget, spans: list[tuple[int, int]]) -> None:
    """Repaint content rows (each span: its first row and how many) over the widget's whole
    width, its frame's columns included (lines neither cropped nor cut at the content's
    edge): Textual's public `refresh` with those regions, relative to the content."""
    left = widget.content_offset.x
    width = widget.outer_size.width
    widget.refresh(*(Region(-left, y, width, rows) for y, rows in spans))


class PairPane(Widget):
    """One pair: who, kernel, knobs, tunnel; throughput and RTT charts; numbers; link.

    Tests and scripts read what it shows with `text(line)`, `rows(line)`, `series(chart)`,
    `shows(band)` and `band_region(band)`."""

    COMPONENT_CLASSES: ClassVar[set[str]] = {
        "pane--config", "pane--error", "pane--bps-low", "pane--bps-high", "pane--rtt-low",
        "pane--rtt-high", "pane--marker"}
    ALLOW_SELECT = False
    repaint_due = True  # (textual_privates.DrawnAtOnce) its every repaint is paced

    def drawn(self) -> None:
        """(textual_privates.DrawnAtOnce) nothing to note: all its repaints are paced."""

    class Grew(Message):
        """A line of the pane now takes more rows: the screen's layout may need to change."""

        def can_replace(self, message: Message) -> bool:
            return isinstance(message, PairPane.Grew)  # one layout for any number of them

    def __init__(self, state: PairState) -> None:
        super().__init__(id=f"pane-{state.label}", classes="pane")
        self.state = state
        self._texts: dict[str, str] = {}
        self._chips: dict[str, list[list[Styled]]] = {}  # each text line's chips
        self._packed: dict[str, list[Row]] = {}  # and its rows, as packed
        self._lines: dict[str, int] = {}  # how many rows it keeps (it only grows)
        self._width = 0  # the text width they were packed into
        self._charts: dict[str, Series] = {"bps": Series(), "rtt": Series()}
        self._chart_drawers = {"bps": ChartDrawer(), "rtt": ChartDrawer()}  # kept columns
        self._cells: dict[str, list[list[Segment]]] = {}  # each band's rows, drawn
        self._cells_width = 0  # at this width
        self._error_shown = False  # the error line takes rows (as last laid out)
        self._rows: list[tuple[str, int]] | None = None  # the pane's row → (band, its row)
        self._spans: dict[str, tuple[int, int]] = {}  # each band's first row and rows
        self._dirty: set[str] = set()  # bands to repaint (at the end of the update)
        # its content rows framed the quick way, drawn in the line filters' colours
        self._framed = FramedLines(self._row_cells, self._forget_drawn)
        frame_with(self, self._framed)
        self._recolour = self._framed.recolour
        self._drawer = TextDrawer(self._recolour)
        self._palettes: dict[str, tuple[Style, Style, Style, Style]] = {}
        self._bases: dict[str, TextualStyle] = {}  # each text line's style
        self._grew = False
        self.probe: BenchProbe | None = None  # the bench's, when it times the intervals
        self._covers: dict[str, int] = {}  # band → the pair's intervals its rows show
        self._hosts = visible(f"{state.sender} → {state.receiver}")
        self._title = ""
        self._fit_title(0)
        self.refresh_from_state((1.0, 1.0))  # its size is known at its first layout

    # ---- what it shows (tests and scripts read these) -----------------------------------
    def rows(self, line: Line) -> list[str]:
        """A text line's rows as shown (padding rows included)."""
        return [row_text(row) for row in self._packed.get(line, [])]

    def text(self, line: Line) -> str:
        """A text line as shown, its rows joined by newlines."""
        return "\n".join(self.rows(line))

    def series(self, chart: Chart) -> Series:
        return self._charts[chart]

    def shows(self, band: Band) -> bool:
        """Whether the band takes rows now (charts not when compact, the error only when
        there is one)."""
        return self._rows_of(band) > 0

    def band_region(self, band: Band) -> Region:
        """Where the band is on the screen (an empty region when it is not shown)."""
        top = sum(self._rows_of(b) for b in BANDS[:BANDS.index(band)])
        inner = self.content_region
        return Region(inner.x, inner.y + top, inner.width, self._rows_of(band))

    # ---- layout and drawing ---------------------------------------------------------------
    def _rows_of(self, band: str) -> int:
        if band in CHART_ROWS:
            return 0 if self.has_class("-compact") else CHART_ROWS[band]
        if band == "error" and not self._error_shown:
            return 0
        return self._lines.get(band, 0)

    def _row_map(self) -> list[tuple[str, int]]:
        if self._rows is None:
            self._rows = [(band, i) for band in BANDS for i in range(self._rows_of(band))]
            top, self._spans = 0, {}
            for band in BANDS:
                self._spans[band] = (top, self._rows_of(band))
                top += self._spans[band][1]
        return self._rows

    def get_content_width(self, container: Size, viewport: Size) -> int:
        return container.width

    def get_content_height(self, container: Size, viewport: Size, width: int) -> int:
        return len(self._row_map())

    def render_line(self, y: int) -> Strip:
        width = self.content_region.width
        cells = self._row_cells(y, width)
        if cells is None:
            return Strip.blank(width, self.visual_style.background_style.rich_style)
        return Strip(cells, width)

    def _row_cells(self, y: int, width: int) -> list[Segment] | None:
        """Row `y`'s segments at `width` cells (its band drawn if it changed)."""
        rows = self._row_map()
        if y >= len(rows):
            return None
        band, i = rows[y]
        if width != self._cells_width:  # (a resize's event may come after its frame)
            self._cells.clear()
            self._cells_width = width
        cells = self._cells.get(band)
        if cells is None:
            cells = self._cells[band] = self._draw(band, width)
            if self.probe is not None and band in self._covers:  # (benches only)
                self.probe.drawn(self.state.label, self._covers[band])
        return cells[i]

    def _draw(self, band: str, width: int) -> list[list[Segment]]:
        if band in CHART_ROWS:
            s = self._charts[band]
            return self._chart_drawers[band].rows(s.data, s.markers, s.ceiling, width,
                                                  CHART_ROWS[band], self._palette(band))
        base = self._bases.get(band)
        if base is None:  # (Textual's lookup works out the pseudo-classes each time)
            base = self._bases[band] = self.get_visual_style(*LINE_CLASS.get(band, ()))
        return [self._drawer.cells(row, base, width) for row in self._packed.get(band, [])]

    def _palette(self, chart: str) -> tuple[Style, Style, Style, Style]:
        """Base, low, high and marker styles; computing them walks the DOM, so keep them."""
        got = self._palettes.get(chart)
        if got is None:
            base = self.rich_style
            recolour = self._recolour
            got = self._palettes[chart] = (
                recolour(base),
                recolour(base + self.get_component_rich_style(f"pane--{chart}-low")),
                recolour(base + self.get_component_rich_style(f"pane--{chart}-high")),
                recolour(base + self.get_component_rich_style("pane--marker")))
        return got

    def notify_style_update(self) -> None:
        super().notify_style_update()
        self._forget_drawn()  # a theme change (or the pane's class) recolours its rows
        self._framed.clear()  # its frame too

    def _forget_drawn(self) -> None:
        """Every row drawn again, in styles worked out again."""
        self._palettes.clear()
        self._bases.clear()
        self._drawer.forget()
        self._cells.clear()

    def _repaint(self, band: str) -> None:
        """Only the band's rows repainted (the rest of the pane is kept as drawn), with the
        others changed in the same update (_flush)."""
        self._cells.pop(band, None)
        self._dirty.add(band)

    def _flush(self) -> None:
        """Repaint the bands that changed: one refresh, a region each, over the pane's whole
        width (its frame's too: lines neither cropped nor cut at the content's edge)."""
        dirty, self._dirty = self._dirty, set()
        if not dirty or not self.is_mounted or self._rows is None:
            return  # (a layout pass is due, or was never made: it paints the whole pane)
        spans = [span for span in (self._spans[band] for band in dirty) if span[1]]
        if spans:
            repaint_rows(self, spans)

    def _relayout(self, grew: bool) -> None:
        """Its bands' rows changed: a layout pass (and the screen told, once, if it grew)."""
        self._rows = None
        if self.is_mounted:  # (before, its first layout sizes it)
            self._grew = self._grew or grew
            # a height the screen's layout gave it (its grid row's tallest pane's): that
            # layout, told by Grew, sizes it again; a layout pass here would be one more
            self.refresh(layout=not self.styles.inline.has_rule("height"))

    def _announce(self) -> None:
        """Tell the screen once that the pane grew, however many of its lines did."""
        if self._grew:
            self._grew = False
            self.post_message(self.Grew())

    # ---- its lines ------------------------------------------------------------------------
    def _set(self, name: str, *chips: Sequence[Part]) -> None:
        """Show a line's chips (each a run of text or (text, style) parts) when its text
        changed: assembled without parsing markup (this runs per interval), whatever a host
        sent made visible, packed into the pane's width."""
        key = "|".join("".join(p if isinstance(p, str) else p[0] for p in c) for c in chips)
        if self._texts.get(name) != key:
            self._texts[name] = key
            self._chips[name] = [styled(c) for c in chips]
            self._show(name)

    def _show(self, name: str, width_changed: bool = False) -> None:
        """Pack a line's chips into the pane's width. Its height only grows while the width
        stays (a shorter text is padded): numbers changing length (9.99 → 10.00) near the
        edge would otherwise make the pane jump, and each jump costs a layout pass."""
        rows = pack_rows(self._chips[name], self.content_region.width or PANE_INNER)
        before = self._lines.get(name, 0)
        had = 0 if width_changed else before
        rows += [[] for _ in range(had - len(rows))]
        self._packed[name] = rows
        self._lines[name] = len(rows)
        self._cells.pop(name, None)
        if len(rows) != before:
            self._relayout(grew=len(rows) > before)
        else:
            self._repaint(name)

    def _config_chips(self, compact: bool) -> list[list[Part]]:
        """`knob=value` per knob (the tunnel's is in the head line, unless compact)."""
        return [[f"{k}=", (v, "bold")] for k, v in self.state.config.items()
                if compact or k != TUNNEL]

    def _hosts_inside(self, width: int) -> bool:
        """Whether the pair's hosts are a line of the pane's at `width` (frame included):
        they do not fit in its border's title whole, and a title is never cut."""
        title = f"{self.state.label}  {self._hosts}"
        return width > 0 and cell_len(title) + TITLE_FRAME > width

    def _title_at(self, width: int) -> str:
        return self.state.label if self._hosts_inside(width) else \
            f"{self.state.label}  {self._hosts}"

    def _fit_title(self, width: int) -> None:
        """The border's title: the label and the hosts, or the label alone when the hosts
        would be cut (they are the head line's first chip then)."""
        title = self._title_at(width)
        if title != self._title:
            self._title = title
            self.border_title = Content(title)  # type: ignore[assignment]

    def _head_chips(self, compact: bool, width: int | None = None) -> list[list[Part]]:
        """The kernel (both hosts' when they differ) and the tunnel (compact: in the knobs'
        line instead, so the kernel's keeps one line in a narrow pane); first the hosts when
        the title has no room for them."""
        s = self.state
        kernels = sorted({k for k in s.kernels.values() if k})
        kernel: list[Part] = [("kernel ", DIM), " / ".join(kernels) or "?"]
        hosts: list[list[Part]] = [[self._hosts]] if self._hosts_inside(
            self.size.width if width is None else width) else []
        return [*hosts, kernel] if compact else [*hosts, kernel, [("tunnel ", DIM), s.tunnel]]

    def height_for(self, width: int, compact: bool) -> int:
        """Rows this pane takes at `width` columns, frame included (compact: no charts)."""
        inner = width - 4
        rows = 2
        for chips in (self._config_chips(compact), self._head_chips(compact, width)):
            rows += len(pack_rows([styled(c) for c in chips], inner))
        for name in ("bps-label", "rtt-label", "tcp", "error"):
            if name != "error" or self.state.error:
                rows += len(pack_rows(self._chips.get(name, []), inner))
        return rows + (0 if compact else sum(CHART_ROWS.values()))

    def set_compact(self, compact: bool) -> None:
        """Charts dropped (or back): each line packed again from scratch, so a line that
        took two rows before keeps no padding row it no longer needs."""
        self.set_class(compact, "-compact")
        self._relayout(grew=False)
        self.refresh_text()
        for name in self._chips:
            self._show(name, width_changed=True)
        self._grew = False  # the layout made it so: no news for the screen

    def unpad(self) -> None:
        """The rows a line kept from a longer text (_show pads it, so the pane does not jump)
        dropped, as the screen's layout is about to size the pane by its texts now
        (height_for counts no padding). Kept, a layout made while a number was short left the
        pane a row shorter than its lines; the number long again filled the padding row, so
        nothing grew and nothing laid the screen out again: the pane's last row stayed cut."""
        width = self.content_region.width or PANE_INNER
        for name, chips in self._chips.items():
            if self._lines.get(name, 0) > len(pack_rows(chips, width)):
                self._show(name, width_changed=True)
        self._grew = False  # (only shrank)

    def on_resize(self) -> None:
        if self._title != self._title_at(self.size.width):
            self._fit_title(self.size.width)
            self.refresh_text()  # the hosts moved into the head line, or out of it
        width = self.content_region.width
        if width != self._width:
            self._width = width
            self._cells.clear()
            for name in self._chips:
                self._show(name, width_changed=True)
            self._flush()
            self._announce()

    def refresh_from_state(self, scale: tuple[float, float]) -> None:
        self.refresh_charts(scale)
        self.refresh_text()

    def refresh_charts(self, scale: tuple[float, float]) -> None:
        """Charts and link state: every interval, at once."""
        s = self.state
        link = s.link
        # before it is in the DOM (its first draw, in __init__) a class is only noted: styling
        # it then (its component classes too) was done again as it was mounted, before the
        # first frame (Textual styles a widget as it attaches it)
        attached = self.parent is not None
        self.set_class(link in (LinkState.LOST, LinkState.FAILED), "-lost", update=attached)
        self.set_class(link in (LinkState.RECONNECTING, LinkState.CONNECTING), "-reconnecting",
                       update=attached)
        subtitle = LINK_TEXT.get(link, link)  # (PairState.link is always one of them)
        if self._texts.get("subtitle") != subtitle:  # setting it repaints the whole pane
            self._texts["subtitle"] = subtitle
            self.border_subtitle = subtitle
        if self.probe is not None:  # (benches only) its chart shows the pair's intervals
            self._covers["bps"] = self.probe.folded(s.label)
        self._chart("bps", Series(list(s.bps), list(s.markers), scale[0]))
        self._chart("rtt", Series(list(s.rtt), [], scale[1]))
        self._flush()

    def _chart(self, name: str, series: Series) -> None:
        if series != self._charts[name]:
            self._charts[name] = series
            self._repaint(name)

    def refresh_text(self) -> None:
        """The numbers (the console throttles these: digits changing 10 times a second are
        unreadable, and each text line costs a repaint)."""
        s = self.state
        if self.probe is not None:  # (benches only) the rate and `n` show its intervals
            self._covers["bps-label"] = self._covers["tcp"] = self.probe.folded(s.label)
        compact = self.has_class("-compact")
        self._set("head", *self._head_chips(compact))
        self._set("config", *self._config_chips(compact))
        p = s.phase
        now = s.bps[-1] if s.bps else math.nan
        # one unit for the pane's rates, so they compare (abtui.core.numbers)
        unit = rate_unit([now, s.phase_rate, p.lo, p.hi, s.rx_bps], s.units)
        back: list[list[Part]] = [] if s.rx_bps is None else [
            [("⇄ rx ", DIM), unit.figure(s.rx_bps)]]
        self._set("bps-label", [(unit.figure(now), "bold"), f" {unit.name}"],
                  [("mean ", DIM), unit.figure(s.phase_rate)],
                  [("min ", DIM), unit.figure(p.lo)], [("max ", DIM), unit.figure(p.hi)], *back)
        r = s.rtt_phase
        rr = s.rr_phase  # sockperf's round trips in the phase, as its runs end
        rr_chips: list[list[Part]] = [] if not rr.n else [
            [("rr p50 ", DIM), ms(rr.percentile(50))], [("p99 ", DIM), ms(rr.percentile(99))]]
        self._set("rtt-label", [("RTT ", DIM), (ms(s.rtt[-1]) if s.rtt else UNKNOWN, "bold"),
                                " ms"], [("mean ", DIM), ms(r.mean)], [("max ", DIM), ms(r.hi)],
                  *rr_chips)
        retr = UNKNOWN if s.retransmits is None else str(s.retransmits)
        total = UNKNOWN if s.retransmits_total is None else str(s.retransmits_total)
        if s.loss_pct is not None:  # UDP: what arrived of what was sent, not TCP's figures
            jitter = ms(s.jitter_ms)
            self._set("tcp", [("n ", DIM), str(s.intervals)],
                      [("lost ", DIM), f"{sig(s.loss_pct)}%"],
                      [("jitter ", DIM), jitter, " ms"], *cpu_chips(s))
        else:  # the count first: where the line wraps past a short grid, it stays in view
            self._set("tcp", [("n ", DIM), str(s.intervals)],
                      [("retr ", DIM), retr, (f" (Σ {total})", DIM)],
                      [("cwnd ", DIM), human_bytes(s.cwnd)], *cpu_chips(s))
        self._set("error", *([("⚠ ", "bold"), s.error],) if s.error else ())
        if self._error_shown != bool(s.error):  # the error line shown or gone
            self._error_shown = bool(s.error)
            self._relayout(grew=False)
        self._flush()
        self._announce()
