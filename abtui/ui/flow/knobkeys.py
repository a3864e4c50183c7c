"""What a knob's key and ctrl+t ask for on the pairs in scope: the knob's next value (cycling
back to the host's own), or the tunnel the switcher picks. The change itself is handed to
abtui.ui.flow.control (it runs there as a task); the knob is remembered for the alternation
(ctrl+a)."""

from __future__ import annotations

from collections.abc import Callable
from functools import partial

from abtui.core.configuration import cycle
from abtui.core.model import KnobKind, Profile
from abtui.ui.flow.alternation import ConsoleAlternation
from abtui.ui.flow.messages import Notice, Post, ShowScreen
from abtui.ui.model.state import ConsoleState

SetKnob = Callable[[str, str, list[str]], None]  # a knob's change on pairs, run as a task


class KnobKeys:
    """The knob keys of one console: the switcher and notices are posted (`post`)."""

    def __init__(self, post: Post, profile: Profile, state: ConsoleState,
                 alternation: ConsoleAlternation, set_knob: SetKnob) -> None:
        self.post = post
        self.profile = profile
        self.state = state
        self.alternation = alternation
        self.set_knob = set_knob

    def flip(self, name: str, pairs: list[str], value: str | None = None) -> None:
        """A knob's key: `value`, else its next value, on `pairs` (the first pair's value
        decides), handed straight to the change (an alternation of the knob ended first)."""
        if value is None:
            try:
                knob = self.profile.knob(name)
            except KeyError:
                return
            ps = self.state.pairs[pairs[0]]
            value = cycle(knob.values, ps.config.get(name), ps.original.get(name))
        self.alternation.last_knob = name  # what ctrl+a alternates
        if self.alternation.alternating(name):
            self.alternation.flipped_by_hand(partial(self.set_knob, name, value, pairs))
        else:
            self.set_knob(name, value, pairs)

    def tunnel(self, pairs: list[str]) -> None:
        """ctrl+t: the tunnel switcher for `pairs`, when the profile has a tunnel knob."""
        knob = next((k for k in self.profile.knobs if k.kind is KnobKind.TUNNEL), None)
        if knob is None:
            self.post(Notice("this profile has no tunnel knob", warning=True))
            return
        choices = self.state.tunnel_choices(list(knob.values), pairs)
        current = self.state.pairs[pairs[0]].tunnel

        def chosen(value: object) -> None:
            if isinstance(value, str):
                self.flip(knob.name, pairs, value)

        from abtui.ui.render.screens import (
            TunnelSwitcher,  # (its first use: not in the first frame)
        )

        self.post(ShowScreen(TunnelSwitcher(choices, current, ", ".join(pairs)), chosen))
