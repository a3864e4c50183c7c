"""The console's widgets: a sparkline on a shared scale with knob markers, a pane per pair,
the knob bar and the status line."""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Any, ClassVar

from rich.segment import Segment
from rich.style import Style
from textual.containers import Vertical
from textual.content import Content
from textual.message import Message
from textual.reactive import reactive
from textual.strip import Strip
from textual.style import Style as TextualStyle
from textual.visual import VisualType
from textual.widgets import Sparkline, Static

from abtui.core.model import LinkState
from abtui.core.numbers import ms, rate_unit, sig
from abtui.core.text import UNKNOWN, visible
from abtui.ui.pair_state import PairState

BARS = " ▁▂▃▄▅▆▇█"
DIM = "dim"
PANE_INNER = 34  # a pane's text width before its first layout (40 columns less the frame)
Part = str | tuple[str, str]  # text, or (text, style)


def human_bytes(n: int | None) -> str:
    if n is None:
        return UNKNOWN
    if n >= 1 << 20:
        return f"{n / (1 << 20):.1f} MiB"
    return f"{n / 1024:.0f} KiB"


class ScaledSparkline(Sparkline):
    """A Sparkline whose scale is 0..`ceiling` (shared by every pane so heights compare), with
    the columns where a knob changed drawn in the marker colour.

    As with Sparkline, assign a new list to `data` (and to `markers`) to update it."""

    COMPONENT_CLASSES: ClassVar[set[str]] = {*Sparkline.COMPONENT_CLASSES, "sparkline--marker"}
    DEFAULT_CSS = """
    ScaledSparkline > .sparkline--marker { color: $warning; background: $warning 30%; }
    """

    ceiling: reactive[float] = reactive(1.0)
    markers: reactive[Sequence[bool]] = reactive(list)

    _cache_key: tuple[int, int] | None = None
    _cache: tuple[Strip, ...] = ()

    def _invalidate(self) -> None:
        self._cache_key = None

    watch_data = watch_markers = watch_ceiling = _invalidate

    _palette: tuple[Style, Style, Style, Style] | None = None

    def notify_style_update(self) -> None:
        super().notify_style_update()
        self._palette = None  # a theme change recolours the bars
        self._invalidate()

    def _styles(self) -> tuple[Style, Style, Style, Style]:
        """Base, low, high and marker styles; computing them walks the DOM, so keep them."""
        if self._palette is None:
            base = self.rich_style
            self._palette = (
                base, base + self.get_component_rich_style("sparkline--min-color"),
                base + self.get_component_rich_style("sparkline--max-color"),
                base + self.get_component_rich_style("sparkline--marker"))
        return self._palette

    def render_line(self, y: int) -> Strip:  # type: ignore[override]
        width, height = self.size.width, self.size.height
        if self._cache_key != (width, height):
            self._cache_key = (width, height)
            self._cache = tuple(self._render_all(width, height))
        return self._cache[y] if y < len(self._cache) else Strip.blank(width, self._styles()[0])

    def _render_all(self, width: int, height: int) -> list[Strip]:
        """Every row at once, runs of one style as one segment (cheap to compose)."""
        data = list(self.data or [])[-width:] if width else []
        marks = list(self.markers)[-len(data):] if data else []
        marks = [False] * (len(data) - len(marks)) + marks
        ceiling = self.ceiling or 1.0
        base, low, high, mark = self._styles()
        levels = 8 * height
        filled = [max(1, round(min(v / ceiling, 1.0) * levels)) if v > 0 else 0 for v in data]
        styles = [mark if m else high if v >= 0.66 * ceiling else low
                  for v, m in zip(data, marks, strict=True)]
        strips = []
        for y in range(height):
            floor = 8 * (height - 1 - y)
            segments = [Segment(" " * (width - len(data)), base)]
            run: list[str] = []
            run_style: Style | None = None
            for f, style, m in zip(filled, styles, marks, strict=True):
                part = min(max(f - floor, 0), 8)
                char = BARS[part] if part or not m else "┆"
                if style is not run_style and run:
                    segments.append(Segment("".join(run), run_style))
                    run = []
                run_style = style
                run.append(char)
            if run:
                segments.append(Segment("".join(run), run_style))
            strips.append(Strip(segments, width))
        return strips


class PackedText(Static):
    """A pane's packed lines (abtui.ui.widgets.pack_chips: the pane fits them to its width,
    so nothing wraps), drawn straight from each line's spans and kept until the next update.
    Textual's general rendering of a Static (wrapping, a style per cell run carrying its
    offset for mouse selection) was most of a busy console's frame: each pane repaints its
    numbers up to TEXT_HZ times a second. Mouse selection of these lines is left out."""

    ALLOW_SELECT = False
    _strips: list[Strip] | None = None
    _strips_width = -1

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self._styles: dict[tuple[str | TextualStyle, TextualStyle], Style] = {}

    def update(self, content: VisualType = "", *, layout: bool = True) -> None:
        self._packed = content if isinstance(content, Content) else Content(str(content))
        self._strips = None
        super().update(content, layout=layout)

    def notify_style_update(self) -> None:
        super().notify_style_update()
        self._strips = None  # a theme change recolours the text
        self._styles.clear()

    def render_line(self, y: int) -> Strip:  # type: ignore[override]
        width = self.content_region.width
        if self._strips is None or self._strips_width != width:
            base = self.visual_style
            packed: Content = getattr(self, "_packed", Content(""))
            self._strips = [Strip(self._segments(line, base), line.cell_length)
                            .adjust_cell_length(width, base.background_style.rich_style)
                            for line in packed.split("\n", allow_blank=True)]
            self._strips_width = width
        if y < len(self._strips):
            return self._strips[y]
        return Strip.blank(width, self.visual_style.background_style.rich_style)

    def _segments(self, line: Content, base: TextualStyle) -> list[Segment]:
        """A line's segments: its text between spans in the base style, each span's in the
        base style plus its own (kept per style); Textual's rendering where spans overlap."""
        plain, at, out = line.plain, 0, []
        base_rich = base.rich_style
        for span in sorted(line.spans, key=lambda sp: sp.start):
            if span.start < at:
                return line.render_segments(base)
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


LINK_TEXT: dict[str, str] = {
    LinkState.CONNECTED: "[b $success]● connected[/]",
    LinkState.CONNECTING: "[b $warning]◌ connecting[/]",
    LinkState.RECONNECTING: "[b $warning]◌ reconnecting[/]",
    LinkState.LOST: "[b reverse $error] ✖ LOST [/]",
    LinkState.FAILED: "[b reverse $error] ✖ could not connect [/]",
    LinkState.CLOSED: "[dim]○ closed[/]",
}


class PairPane(Vertical):
    """One pair: who, kernel, knobs, tunnel; throughput and RTT sparklines; numbers; link."""

    class Grew(Message):
        """A line of the pane now takes more rows: the screen's layout may need to change."""

    def __init__(self, state: PairState, **kwargs: object) -> None:
        super().__init__(id=f"pane-{state.label}", classes="pane", **kwargs)  # type: ignore[arg-type]
        self.state = state
        self._texts: dict[str, str] = {}
        self._chips: dict[str, list[Content]] = {}  # each text line's chips
        self._lines: dict[str, int] = {}  # and how many lines they take
        self._width = 0  # the text width they were packed into
        self._w: dict[str, Static | ScaledSparkline] = {}
        self.border_title = Content(  # type: ignore[assignment]
            visible(f"{state.label}  {state.sender} → {state.receiver}"))

    def compose(self):  # type: ignore[no-untyped-def]
        yield PackedText(id="head", classes="head", markup=True)
        yield PackedText(id="config", classes="config")
        yield PackedText(id="bps-label", classes="metric")
        yield ScaledSparkline(id="bps", classes="spark")
        yield PackedText(id="rtt-label", classes="metric")
        yield ScaledSparkline(id="rtt", classes="spark rtt")
        yield PackedText(id="tcp", classes="metric")
        yield Static(id="error", classes="error")

    def on_mount(self) -> None:
        self._w = {w.id: w for w in self.query(Static) if w.id}
        self._w.update((w.id, w) for w in self.query(ScaledSparkline) if w.id)
        self.refresh_from_state((1.0, 1.0))

    def _set(self, name: str, *chips: Sequence[Part]) -> None:
        """Show a line's chips (each a run of text or (text, style) parts) when its text
        changed: assembled without parsing markup (this runs per interval), whatever a host
        sent made visible, packed into the pane's width. A layout pass only when the
        number of lines changes."""
        key = "|".join("".join(p if isinstance(p, str) else p[0] for p in c) for c in chips)
        if self._texts.get(name) != key:
            self._texts[name] = key
            self._chips[name] = [Content.assemble(*(
                visible(p) if isinstance(p, str) else (visible(p[0]), p[1]) for p in c))
                for c in chips]
            self._show(name)

    def _show(self, name: str, width_changed: bool = False) -> None:
        """Pack a line's chips into the pane's width. Its height only grows while the width
        stays (a shorter text is padded): numbers changing length (9.99 → 10.00) near the
        edge would otherwise make the pane jump, and each jump costs a layout pass."""
        content = pack_chips(self._chips[name], self.content_region.width or PANE_INNER)
        lines = content.plain.count("\n") + 1
        had = 0 if width_changed else self._lines.get(name, 0)
        if lines < had:
            content = content + "\n" * (had - lines)
        widget = self._w[name]
        if lines > had:  # an explicit height: the layout pass it needs surely happens
            widget.styles.height = lines
            self.post_message(self.Grew())
        self._lines[name] = max(lines, had)
        widget.update(content, layout=False)  # type: ignore[union-attr]

    def _config_chips(self, compact: bool) -> list[list[Part]]:
        """`knob=value` per knob (the tunnel's is in the head line, unless compact)."""
        return [[f"{k}=", (v, "bold")] for k, v in self.state.config.items()
                if compact or k != "tunnel"]

    def _head_chips(self, compact: bool) -> list[list[Part]]:
        """The kernel (both hosts' when they differ) and the tunnel (compact: in the knobs'
        line instead, so the kernel's keeps one line in a narrow pane)."""
        s = self.state
        kernels = sorted({k for k in s.kernels.values() if k})
        kernel: list[Part] = [("kernel ", DIM), " / ".join(kernels) or "?"]
        return [kernel] if compact else [kernel, [("tunnel ", DIM), s.tunnel]]

    def height_for(self, width: int, compact: bool) -> int:
        """Rows this pane takes at `width` columns, frame included (compact: no
        sparklines)."""
        inner = width - 4
        rows = 2
        for chips in (self._config_chips(compact), self._head_chips(compact)):
            rows += _lines([Content.assemble(*c) for c in chips], inner)
        for name in ("bps-label", "rtt-label", "tcp", "error"):
            if name != "error" or self.state.error:
                rows += _lines(self._chips.get(name, []), inner)
        return rows + (0 if compact else 3)

    def set_compact(self, compact: bool) -> None:
        """Sparklines dropped (or back): each line packed again from scratch, so a line that
        took two rows before keeps no padding row it no longer needs."""
        self.set_class(compact, "-compact")
        self._lines.clear()
        if self.is_mounted:
            self.refresh_text()

    def on_resize(self) -> None:
        width = self.content_region.width
        if width != self._width:
            self._width = width
            for name in self._chips:
                self._show(name, width_changed=True)

    def refresh_from_state(self, scale: tuple[float, float]) -> None:
        self.refresh_charts(scale)
        self.refresh_text()

    def refresh_charts(self, scale: tuple[float, float]) -> None:
        """Sparklines and link state: every interval, at once."""
        s = self.state
        link = s.link
        self.set_class(link in (LinkState.LOST, LinkState.FAILED), "-lost")
        self.set_class(link in (LinkState.RECONNECTING, LinkState.CONNECTING), "-reconnecting")
        subtitle = LINK_TEXT.get(link, link)  # (PairState.link is always one of them)
        if self._texts.get("subtitle") != subtitle:  # setting it repaints the whole pane
            self._texts["subtitle"] = subtitle
            self.border_subtitle = subtitle
        bps: ScaledSparkline = self._w["bps"]  # type: ignore[assignment]
        bps.ceiling = scale[0]
        bps.markers = list(s.markers)
        bps.data = list(s.bps)
        rtt: ScaledSparkline = self._w["rtt"]  # type: ignore[assignment]
        rtt.ceiling = scale[1]
        rtt.data = list(s.rtt)

    def refresh_text(self) -> None:
        """The numbers (the console throttles these: digits changing 10 times a second are
        unreadable, and each text line costs a repaint)."""
        s = self.state
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
        self._set("rtt-label", [("RTT ", DIM), (ms(s.rtt[-1]) if s.rtt else UNKNOWN, "bold"),
                                " ms"], [("mean ", DIM), ms(r.mean)], [("max ", DIM), ms(r.hi)])
        retr = UNKNOWN if s.retransmits is None else str(s.retransmits)
        total = UNKNOWN if s.retransmits_total is None else str(s.retransmits_total)
        if s.loss_pct is not None:  # UDP: what arrived of what was sent, not TCP's figures
            jitter = ms(s.jitter_ms)
            self._set("tcp", [("lost ", DIM), f"{sig(s.loss_pct)}%"],
                      [("jitter ", DIM), jitter, " ms"], [("n ", DIM), str(s.intervals)],
                      *cpu_chips(s))
        else:
            self._set("tcp", [("retr ", DIM), retr, (f" (Σ {total})", DIM)],
                      [("cwnd ", DIM), human_bytes(s.cwnd)], [("n ", DIM), str(s.intervals)],
                      *cpu_chips(s))
        self._set("error", *([("⚠ ", "bold"), s.error],) if s.error else ())
        err = self._w["error"]
        if err.display != bool(s.error):
            err.display = bool(s.error)


def cpu_chips(s: PairState) -> list[list[Part]]:
    """Each side's host CPU (% of one core) and softirq share; `machine` where the host's
    figures are the whole machine's (a namespace host), not its own."""
    out: list[list[Part]] = []
    for side, short in (("sender", "snd"), ("receiver", "rcv")):
        if side in s.cpu:
            busy, soft = s.cpu[side]
            shared = s.sender if side == "sender" else s.receiver
            where = " machine" if shared in s.cpu_shared else ""
            out.append([(f"cpu {short}{where} ", DIM), f"{busy:.0f}%", (f" si {soft:.0f}%", DIM)])
    return out


def pack_chips(chips: Sequence[Content], width: int, gap: int = 2) -> Content:
    """Chips side by side, `gap` cells apart, in as many lines of `width` cells as they need;
    a chip moves to the next line whole, and one wider than a line (a long error) is wrapped
    at its words into lines of its own, so the lines counted are the lines shown."""
    lines: list[list[Content]] = [[]]
    used = 0
    for chip in chips:
        w = chip.cell_length
        if w > width > 0:
            parts = chip.wrap(width)
            lines[-1:] = [*([lines[-1]] if lines[-1] else []), *([p] for p in parts)]
            used = parts[-1].cell_length if parts else 0
            continue
        if lines[-1] and used + gap + w > width:
            lines.append([])
            used = 0
        used += (gap if lines[-1] else 0) + w
        lines[-1].append(chip)
    return Content("\n").join(Content(" " * gap).join(line) for line in lines)


def _lines(chips: Sequence[Content], width: int) -> int:
    return pack_chips(chips, width).plain.count("\n") + 1
