"""The screen as plain text, laid out as a screenshot shows it (for scripts and the tests that
check what is in sight): Textual has no public "screen as text", so it is read out of its
public SVG screenshot, each run of text at its column.

Its private way (the screen's compositor rendered to a plain console) was given up for this
public one: 13.7 ms of CPU a call at 160×48 against 2.3 ms, on no path of the live console
(docs/performance.md, "Textual's privates, each against its public path").
"""

from __future__ import annotations

import html
import re
from typing import Any

from rich.cells import cell_len, set_cell_size
from textual.app import App

# a run of text in rich's SVG: its x, its line's clip path, its characters
_SVG_TEXT = re.compile(r'<text [^>]*?x="([\d.]+)"[^>]*clip-path="url\(#[^"]*-line-(\d+)\)"'
                       r'[^>]*>(.*?)</text>')
SVG_CELL = 20 * 0.61  # a cell's width in rich's SVG (its char height times its aspect ratio)


def screen_text(app: App[Any]) -> str:
    """The app's screen (with the screens showing through it), one line per row of the
    terminal, each `app.size.width` cells wide."""
    width, height = app.size
    lines: dict[int, str] = {}
    for x, y, text in _SVG_TEXT.findall(app.export_screenshot()):
        line = lines.get(int(y), "")  # each run at its column (runs of spaces are left out)
        line += " " * max(0, round(float(x) / SVG_CELL) - cell_len(line))
        lines[int(y)] = line + html.unescape(text).replace("\xa0", " ")
    return "\n".join(set_cell_size(lines.get(y, ""), width) for y in range(height))
