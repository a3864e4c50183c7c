"""What the console drives: the engine on real hosts, or a replay of recorded events.

The UI depends only on this protocol and on abtui.core.model, never on how commands reach hosts.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import Any, Literal, Protocol

from abtui.core.events import AnyEvent, Payload
from abtui.core.model import Profile

Mode = Literal["continuous", "plan"]


class Controller(Protocol):
    profile: Profile
    session_path: Path | None

    def subscribe(self, callback: Callable[[AnyEvent], None]) -> None:
        """Call `callback` for every event, on the event loop's thread, in order."""

    async def connect(self) -> None:
        """Open links to every host (concurrently) and gather facts; emits LINK and FACTS."""

    async def start(self, mode: Mode = "continuous") -> None:
        """Start measuring all pairs together (returns once started)."""

    async def stop(self) -> None:
        """Stop measuring; runs end with status "stopped"."""

    async def set_knob(self, knob: str, value: str, pairs: Sequence[str] | None = None) -> None:
        """Apply a knob value to the given pairs (None: the knob's own pairs); all or nothing.

        Raises KnobRefused when any host refuses; emits KNOB (or KNOB_ERROR) and starts a
        new phase on every affected pair."""

    async def set_values(self, knob: str, values: Mapping[str, str],
                         again: bool = False) -> None:
        """Each pair its own value of `knob`, in one change (as set_knob; a bisection's and a
        crossover's boundaries); `again`: a build knob's hosts boot even an unchanged build."""

    async def mark(self, text: str, verdicts: list[dict[str, Any]] | None = None,
                   bisect: dict[str, Any] | None = None) -> None:
        """Annotate the timeline (`verdicts`: an alternation's, as rows; `bisect`: a
        bisection's step: events.Mark)."""

    def note(self, payload: Payload) -> None:
        """An event the controller did not make itself (a bisection's look), stamped by its
        clock, to every subscriber and the session's journal."""

    async def shutdown(self, reason: str = "shutdown") -> None:
        """Stop, restore every knob, remove tunnels, end remote processes; emits RESTORE,
        then SESSION_END saying `reason`."""
