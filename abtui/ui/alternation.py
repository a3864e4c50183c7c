"""The console's live verdict: a panel showing an auto-alternation's verdicts (Δ, interval,
verdict, stretches still needed), fed by abtui.measure.alternate.LiveAlternation. The rule, the
flips and the lines are the domain's; this only shows them."""

from __future__ import annotations

from typing import TYPE_CHECKING

from textual.widgets import Static

from abtui.core.text import visible

if TYPE_CHECKING:
    from abtui.measure.alternate import LiveAlternation


class VerdictPanel(Static):
    """One line for the alternation, one per pair and compared value; hidden until used."""

    def show(self, live: LiveAlternation | None) -> None:
        self.display = live is not None
        if live is not None:
            self.update("\n".join(visible(line) for line in live.lines()))
