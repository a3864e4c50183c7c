"""A pane's and the knob bar's lines as chips (runs of text or (text, style) parts) packed
side by side into a width, and the chips of a pane's figures that need more than a format."""

from __future__ import annotations

from collections.abc import Sequence

from textual.content import Content

from abtui.core.text import UNKNOWN
from abtui.ui.pair_state import PairState

DIM = "dim"
Part = str | tuple[str, str]  # text, or (text, style)


def human_bytes(n: int | None) -> str:
    if n is None:
        return UNKNOWN
    if n >= 1 << 20:
        return f"{n / (1 << 20):.1f} MiB"
    return f"{n / 1024:.0f} KiB"


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


def count_lines(chips: Sequence[Content], width: int) -> int:
    """The lines `chips` take at `width` cells."""
    return pack_chips(chips, width).plain.count("\n") + 1
