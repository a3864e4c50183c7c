"""A pane's and the knob bar's lines as chips (runs of text or (text, style) parts) packed
side by side into a width, and the chips of a pane's figures that need more than a format."""

from __future__ import annotations

from collections.abc import Sequence

from rich.cells import cell_len
from textual.content import Content

from abtui.core.text import UNKNOWN, visible
from abtui.ui.model.pair_state import PairState

DIM = "dim"
SHARED = "shared"  # a CPU figure that is the whole machine's (the reports' cells say so too)
Part = str | tuple[str, str]  # text, or (text, style)


def human_bytes(n: int | None) -> str:
    if n is None:
        return UNKNOWN
    if n >= 1 << 20:
        return f"{n / (1 << 20):.1f} MiB"
    return f"{n / 1024:.0f} KiB"


def cpu_chips(s: PairState) -> list[list[Part]]:
    """Each side's host CPU (% of one core) and softirq share; `shared`, and no figure, where
    the host's figures are the whole machine's (a namespace host) or both sides are one host,
    as the reports' CPU cells say (abtui.reports.cpu): a whole machine's 199 % says nothing
    about the pair."""
    out: list[list[Part]] = []
    for side, short in (("sender", "snd"), ("receiver", "rcv")):
        if side in s.cpu:
            busy, soft = s.cpu[side]
            host = s.sender if side == "sender" else s.receiver
            if host in s.cpu_shared or s.sender == s.receiver:
                out.append([(f"cpu {short} ", DIM), SHARED])
            else:
                out.append([(f"cpu {short} ", DIM), f"{busy:.0f}%", (f" si {soft:.0f}%", DIM)])
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



Styled = tuple[str, str | None]  # a run of text, in its style or the line's own
Row = Content | list[Styled]  # a packed line: runs (the quick way), or Content (wrapped)


def styled(chip: Sequence[Part]) -> list[Styled]:
    """A chip's parts as (text, style) runs, what a host sent made visible."""
    return [(visible(p), None) if isinstance(p, str) else (visible(p[0]), p[1])
            for p in chip if (p if isinstance(p, str) else p[0])]


def pack_rows(chips: Sequence[Sequence[Styled]], width: int, gap: int = 2) -> list[Row]:
    """`pack_chips` for chips as runs, the rows as runs too: no Content built for what is
    repacked several times a second. A chip wider than a line is wrapped at its words (by
    pack_chips: those rows are Content)."""
    widths = [sum(cell_len(text) for text, _ in chip) for chip in chips]
    if any(w > width > 0 for w in widths):
        packed = pack_chips([Content.assemble(*(t if st is None else (t, st) for t, st in chip))
                            for chip in chips], width, gap)
        return list(packed.split("\n", allow_blank=True))
    rows: list[list[Styled]] = [[]]
    used = 0
    for chip, w in zip(chips, widths, strict=True):
        if rows[-1] and used + gap + w > width:
            rows.append([])
            used = 0
        if rows[-1]:
            rows[-1].append((" " * gap, None))
            used += gap
        used += w
        rows[-1].extend(chip)
    return list(rows)


def row_text(row: Row) -> str:
    return row.plain if isinstance(row, Content) else "".join(text for text, _ in row)
