"""The console's widgets: a sparkline on a shared scale with knob markers, a pane per pair,
the knob bar and the status line."""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import ClassVar

from rich.segment import Segment
from textual.containers import Vertical
from textual.reactive import reactive
from textual.strip import Strip
from textual.widgets import Sparkline, Static

from abtui.model import LinkState
from abtui.ui.state import PairState

BARS = " ▁▂▃▄▅▆▇█"


def human_bits(bps: float) -> str:
    if math.isnan(bps) or math.isinf(bps):
        return "–"
    return f"{bps / 1e9:.2f}"


def human_bytes(n: int | None) -> str:
    if n is None:
        return "–"
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

    def render_line(self, y: int) -> Strip:  # type: ignore[override]
        width, height = self.size.width, self.size.height
        data = list(self.data or [])[-width:] if width else []
        marks = list(self.markers)[-len(data):] if data else []
        marks = [False] * (len(data) - len(marks)) + marks
        ceiling = self.ceiling or 1.0
        base = self.rich_style
        lo = self.get_component_rich_style("sparkline--min-color")
        hi = self.get_component_rich_style("sparkline--max-color")
        mark_style = self.get_component_rich_style("sparkline--marker")
        levels = 8 * height
        row_from_bottom = height - 1 - y
        segments = [Segment(" " * (width - len(data)), base)]
        for value, marked in zip(data, marks, strict=True):
            filled = max(1, round(min(value / ceiling, 1.0) * levels)) if value > 0 else 0
            part = min(max(filled - 8 * row_from_bottom, 0), 8)
            char = BARS[part]
            if marked:
                style = base + mark_style
                char = char if part else "┆"
            else:
                style = base + (hi if value >= 0.66 * ceiling else lo)
            segments.append(Segment(char, style))
        return Strip(segments, width)


LINK_TEXT = {
    LinkState.CONNECTED: "[b $success]● connected[/]",
    LinkState.CONNECTING: "[b $warning]◌ connecting[/]",
    LinkState.RECONNECTING: "[b $warning]◌ reconnecting[/]",
    LinkState.LOST: "[b reverse $error] ✖ LOST [/]",
    LinkState.CLOSED: "[dim]○ closed[/]",
}


class PairPane(Vertical):
    """One pair: who, kernel, knobs, tunnel; throughput and RTT sparklines; numbers; link."""

    def __init__(self, state: PairState, **kwargs: object) -> None:
        super().__init__(id=f"pane-{state.label}", classes="pane", **kwargs)  # type: ignore[arg-type]
        self.state = state
        self.border_title = f"{state.label}  {state.sender} → {state.receiver}"

    def compose(self):  # type: ignore[no-untyped-def]
        yield Static(id="head", classes="head", markup=True)
        yield Static(id="config", classes="config")
        yield Static(id="bps-label", classes="metric")
        yield ScaledSparkline(id="bps", classes="spark")
        yield Static(id="rtt-label", classes="metric")
        yield ScaledSparkline(id="rtt", classes="spark rtt")
        yield Static(id="tcp", classes="metric")
        yield Static(id="error", classes="error")

    def on_mount(self) -> None:
        self.refresh_from_state((1.0, 1.0))

    def refresh_from_state(self, scale: tuple[float, float]) -> None:
        s = self.state
        link = s.link
        self.set_class(link == LinkState.LOST, "-lost")
        self.set_class(link in (LinkState.RECONNECTING, LinkState.CONNECTING), "-reconnecting")
        self.border_subtitle = LINK_TEXT.get(LinkState(link), link)
        kernels = sorted({k for k in s.kernels.values() if k})
        self.query_one("#head", Static).update(
            f"[dim]kernel[/] {' / '.join(kernels) or '?'}  [dim]tunnel[/] {s.tunnel}")
        knobs = "  ".join(f"{k}=[b]{v}[/]" for k, v in s.config.items() if k != "tunnel")
        self.query_one("#config", Static).update(knobs)
        p = s.phase
        now = s.bps[-1] if s.bps else math.nan
        self.query_one("#bps-label", Static).update(
            f"[b]{human_bits(now)}[/] Gbit/s  [dim]mean[/] {human_bits(p.mean)} "
            f"[dim]min[/] {human_bits(p.lo)} [dim]max[/] {human_bits(p.hi)}")
        bps = self.query_one("#bps", ScaledSparkline)
        bps.ceiling = scale[0]
        bps.markers = list(s.markers)
        bps.data = list(s.bps)
        r = s.rtt_phase
        rnow = f"{s.rtt[-1]:.3f}" if s.rtt else "–"
        self.query_one("#rtt-label", Static).update(
            f"[dim]RTT[/] [b]{rnow}[/] ms  [dim]mean[/] {r.mean:.3f} [dim]max[/] "
            f"{r.hi if r.n else math.nan:.3f}")
        rtt = self.query_one("#rtt", ScaledSparkline)
        rtt.ceiling = scale[1]
        rtt.data = list(s.rtt)
        retr = "–" if s.retransmits is None else str(s.retransmits)
        self.query_one("#tcp", Static).update(
            f"[dim]retr[/] {retr} [dim](Σ {s.retransmits_total})[/]  "
            f"[dim]cwnd[/] {human_bytes(s.cwnd)}  [dim]n[/] {s.intervals}")
        err = self.query_one("#error", Static)
        err.update(f"[b]⚠[/] {s.error}" if s.error else "")
        err.display = bool(s.error)
