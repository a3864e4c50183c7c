"""A differential flame graph as SVG: the value's merged stacks drawn as a flame graph (root
at the bottom, each frame as wide as its share of the value's samples), each frame coloured
by its function's change of share against the base (the `children` rows of
abtui.reports.why): red where it grew, blue where it shrank, the stronger the larger; grey
where the interval includes zero (only a change that holds over the blocks is coloured).
Each frame's tooltip gives both shares and the interval. Plain SVG, no script, no font
fetched: it opens in any browser and pastes into an HTML report.
"""

from __future__ import annotations

import html
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

WIDTH = 1200
ROW = 16
MIN_PX = 0.5  # narrower frames are not drawn
GREY = "#c8c8c8"


@dataclass(slots=True)
class _Node:
    count: int = 0
    children: dict[str, _Node] = field(default_factory=dict)


def _tree(stacks: Mapping[str, int]) -> _Node:
    root = _Node()
    for stack, count in stacks.items():
        root.count += count
        node = root
        for frame in stack.split(";"):
            node = node.children.setdefault(frame, _Node())
            node.count += count
    return root


def _colour(row: Mapping[str, Any] | None) -> str:
    if row is None or not row.get("moved"):
        return GREY
    delta = row.get("delta")
    if not isinstance(delta, int | float):
        return GREY
    strength = min(1.0, abs(delta) / 10.0)  # 10 points or more: full colour
    fade = int(220 - 170 * strength)
    return f"rgb(230,{fade},{fade})" if delta > 0 else f"rgb({fade},{fade},230)"


def _tip(frame: str, row: Mapping[str, Any] | None, own: float) -> str:
    if row is None:
        return f"{frame}: {own:.2f}% of samples (not tested: under the share tested)"
    low, high = row.get("low"), row.get("high")
    interval = f" [{low:+.2f}, {high:+.2f}]" if isinstance(low, int | float) and \
        isinstance(high, int | float) else " (no interval)"
    said = "moved" if row.get("moved") else "not moved"
    return (f"{frame}: {row.get('base_share', 0):.2f}% → {row.get('share', 0):.2f}% of "
            f"samples, Δ {row.get('delta', 0):+.2f} pp{interval}, {said}")


def svg(stacks: Mapping[str, int], rows: Sequence[Mapping[str, Any]], title: str) -> str:
    """The graph of `stacks` coloured by `rows` (a comparison's why rows)."""
    by_frame = {str(r.get("frame")): r for r in rows if r.get("kind") == "children"}
    by_thread = {str(r.get("frame")): r for r in rows if r.get("kind") == "thread"}
    root = _tree(stacks)
    total = root.count or 1
    boxes: list[tuple[float, int, float, str, Mapping[str, Any] | None]] = []

    def place(node: _Node, x: float, depth: int) -> None:
        for name, child in sorted(node.children.items()):
            width = WIDTH * child.count / total
            if width >= MIN_PX:
                row = (by_thread if depth == 0 else by_frame).get(name)
                boxes.append((x, depth, width, name, row))
                place(child, x, depth + 1)
            x += width

    place(root, 0.0, 0)
    depth_max = max((b[1] for b in boxes), default=0)
    height = (depth_max + 4) * ROW
    rects = []
    for x, depth, width, name, row in boxes:
        y = height - (depth + 2) * ROW  # the root row at the bottom
        tip = html.escape(_tip(name, row, 100.0 * width / WIDTH))
        label = html.escape(name[: max(0, int(width / 7))])
        text = f'<text x="{x + 2:.1f}" y="{y + ROW - 4}">{label}</text>' if label else ""
        rects.append(f'<g><title>{tip}</title><rect x="{x:.1f}" y="{y}" '
                     f'width="{max(width - 0.5, 0.1):.1f}" height="{ROW - 1}" '
                     f'fill="{_colour(row)}"/>{text}</g>')
    body = "\n".join(rects)
    head = html.escape(title)
    return (f'<svg xmlns="http://www.w3.org/2000/svg" width="{WIDTH}" height="{height}" '
            f'viewBox="0 0 {WIDTH} {height}" font-family="monospace" font-size="11">\n'
            f'<text x="4" y="{ROW}" font-size="13">{head}</text>\n'
            f'<text x="4" y="{2 * ROW}">red: a larger share, blue: a smaller one, grey: no '
            f'change beyond the interval (hover a frame for its shares and interval)</text>\n'
            f"{body}\n</svg>\n")
