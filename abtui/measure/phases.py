"""Phases of a pair's series: which phase an interval belongs to, and whether it straddles.

A knob change takes a little time to apply (from `begin` to `end`, controller clock). An
interval that was being measured at any moment of that window straddles the change: it is
stamped with the new phase, marked `straddles`, and counts in neither phase's statistics.
An interval's span on the controller's clock is taken as the `duration` before it arrived,
widened by SLACK for delivery, so the estimate errs towards marking a straddle.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from abtui.core import events
from abtui.core.events import SLACK_S, AnyEvent, Event


@dataclass(slots=True)
class _Change:
    begin: float
    end: float
    phase: int


@dataclass(slots=True)
class PairPhases:
    """The phase history of one pair."""

    pair: str
    phase: int = 0
    config: dict[str, str] = field(default_factory=dict)
    start: float = 0.0
    changes: list[_Change] = field(default_factory=list)
    pending: float | None = None  # a change being applied since this time
    measured: bool = False  # a run went on in the current phase

    def open_at(self, t: float) -> None:
        """Measuring starts (or starts again) at `t`: the phase in force begins then."""
        self.start = t

    def configured(self, config: dict[str, str]) -> None:
        """The configuration its hosts were read to have (on connect)."""
        self.config = config

    def running(self, measuring: bool) -> None:
        """Whether a run goes on in the current phase (one released, or one carried over
        a change): a phase nothing was measured in is never closed."""
        self.measured = measuring

    def begin_change(self, t: float) -> None:
        self.pending = t

    def abort_change(self) -> None:
        self.pending = None

    def commit_change(self, begin: float, end: float,
                      updates: dict[str, str]) -> AnyEvent | None:
        """Close the current phase and open the next; returns the PHASE event of the old one.

        A phase in which nothing was measured is not closed: the change becomes part of it,
        and it starts again when the change is done (its configuration holds from then on,
        not before: a phase never spans a time its pair ran another value)."""
        if not self.measured:
            self.config = {**self.config, **updates}
            self.start = max(self.start, end)
            self.pending = None
            return None
        self.measured = False
        closed = Event.of(events.Phase(phase=self.phase, config=dict(self.config),
                                       start=self.start, end=begin), t=end, pair=self.pair)
        self.phase += 1
        self.config = {**self.config, **updates}
        self.start = end
        self.changes.append(_Change(begin, end, self.phase))
        del self.changes[:-8]  # only recent changes can touch an arriving interval
        self.pending = None
        return closed

    def close(self, t: float) -> AnyEvent | None:
        """At stop: the PHASE event for the phase in force (None when nothing was measured in
        it); a later start opens the next phase with the same configuration."""
        if not self.measured:
            return None
        closed = Event.of(events.Phase(phase=self.phase, config=dict(self.config),
                                       start=self.start, end=t), t=t, pair=self.pair)
        self.phase += 1
        self.start = t
        self.measured = False
        return closed

    def classify(self, received: float, duration: float) -> tuple[int, bool]:
        """(phase, straddles) for an interval of `duration` s that arrived at `received`."""
        began = received - duration - SLACK_S
        phase = self.phase
        straddles = self.pending is not None and received > self.pending
        for change in reversed(self.changes):
            if began < change.end and received > change.begin:
                straddles = True
            if began < change.begin:
                phase = change.phase - 1
        if straddles:
            phase = self.phase
        return phase, straddles
