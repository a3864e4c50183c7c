"""What the console keeps of the events it is handed: every event (what save and export
write), each pair's throughput over time (the compare screen's series; --bidir's way back a
series of its own, `A rx`, as the report's chart has it), each folded into abtui.ui.state and
said in the event log."""

from __future__ import annotations

from abtui.core.events import Event, EventKind
from abtui.ui.eventlog import EventLog
from abtui.ui.state import ConsoleState


class SessionRecord:
    """The events received, folded into `state` and written to `log` as they are shown."""

    def __init__(self, state: ConsoleState, log: EventLog) -> None:
        self.state = state
        self.log = log
        self.events: list[Event] = []  # everything received
        self.series: dict[str, list[tuple[float, float]]] = {lb: [] for lb in state.pairs}

    def fold(self, batch: list[tuple[Event, float]]) -> list[float]:
        """Fold a flush's events in; the arrival stamps of its intervals (for the bench)."""
        stamps = []
        for event, stamp in batch:
            self.events.append(event)
            self.log.event_line(event.t, self.state.apply(event))
            if event.kind is EventKind.INTERVAL and event.pair in self.state.pairs:
                d = event.payload
                if isinstance(d.bits_per_second, int | float):
                    key = f"{event.pair} rx" if d.direction == "rx" else event.pair
                    self.series.setdefault(key, []).append(
                        (event.t - (self.log.t0 or 0.0), float(d.bits_per_second)))
                stamps.append(stamp)
        return stamps
