"""The live rule's panel, shared by an alternation (abtui.ui.flow.alternation) and a
bisection (abtui.ui.flow.bisection): lines of text (never markup), hidden until used."""

from __future__ import annotations

from collections.abc import Sequence

from textual.content import Content
from textual.message import Message
from textual.widgets import Static

from abtui.core.text import visible


class VerdictPanel(Static):
    """The live rule's panel: an alternation's (one line for it, one per pair and compared
    value) or a bisection's (abtui.ui.flow.bisection); hidden until used, and again once an ended
    one's panel is closed (escape)."""

    class Changed(Message):
        """Shown, hidden, or what it shows ended: the layout and the footer's keys may
        change."""

    ended = False  # what it shows has ended
    shown: tuple[str, ...] = ()  # its lines

    def show(self, lines: Sequence[str] | None, ended: bool = False) -> None:
        """`lines` shown (None: hidden); `ended`: what they tell has ended (escape closes
        it)."""
        on = lines is not None
        ended = on and ended
        width = self.app.size.width - 2  # less its padding
        rows = self.rows_for(width)
        changed = self.display != on or ended != self.ended
        self.display = on
        self.ended = ended
        if lines is not None:
            self.shown = tuple(visible(line) for line in lines)
            self.update("\n".join(self.shown))
        changed = changed or self.rows_for(width) != rows  # its lines wrap into more rows
        if changed:
            self.post_message(self.Changed())

    def rows_for(self, width: int) -> int:
        """The rows its lines take wrapped at `width` cells."""
        return sum(len(Content(line).wrap(max(width, 1))) for line in self.shown)
