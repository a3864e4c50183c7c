"""What a knob's key and ctrl+t ask for on the pairs in scope: the knob's next value (cycling
back to the host's own), or the tunnel the switcher picks. The change itself goes through
abtui.ui.control; the knob is remembered for the alternation (ctrl+a)."""

from __future__ import annotations

from typing import TYPE_CHECKING

from abtui.core.configuration import cycle
from abtui.core.model import KnobKind
from abtui.ui.screens import TunnelSwitcher

if TYPE_CHECKING:
    from abtui.ui.app import AbtuiApp


class KnobKeys:
    """The knob keys of one app."""

    def __init__(self, app: AbtuiApp) -> None:
        self.app = app

    def flip(self, name: str, pairs: list[str]) -> None:
        """A knob's key: its next value on `pairs` (the first pair's value decides)."""
        try:
            knob = self.app.profile.knob(name)
        except KeyError:
            return
        ps = self.app.state.pairs[pairs[0]]
        self.apply(name, cycle(knob.values, ps.config.get(name), ps.original.get(name)), pairs)

    def apply(self, name: str, value: str, pairs: list[str]) -> None:
        app = self.app
        app.alternation.flipped_by_hand(name, lambda: app.set_knob(name, value, pairs))

    def tunnel(self, pairs: list[str]) -> None:
        """ctrl+t: the tunnel switcher for `pairs`, when the profile has a tunnel knob."""
        app = self.app
        knob = next((k for k in app.profile.knobs if k.kind is KnobKind.TUNNEL), None)
        if knob is None:
            app.notify("this profile has no tunnel knob", severity="warning")
            return
        choices = app.state.tunnel_choices(list(knob.values), pairs)
        current = app.state.pairs[pairs[0]].tunnel

        def chosen(value: object) -> None:
            if isinstance(value, str):
                self.apply(knob.name, value, pairs)

        app.push_screen(TunnelSwitcher(choices, current, ", ".join(pairs)), chosen)
