"""What the console keeps of the events it is handed: a bounded window of them. Each event is
folded into abtui.ui.model.state (what the panes, the table and the live statistics need, all of
bounded size) and said in the event log; the events themselves are on disk, in the session's
journal (abtui.ui.flow.on_disk), where save, export and compare read them in a worker. So the
console's memory stays flat however long the session runs (`console_24h_rss_mb`)."""

from __future__ import annotations

from collections import deque
from collections.abc import Iterable

from abtui.core.events import Event, EventKind
from abtui.ui.model.state import ConsoleState
from abtui.ui.render.eventlog import EventLog

WINDOW = 1000  # the latest events kept in memory (a look back for scripts and tests)


class SessionRecord:
    """The events received, folded into `state` and written to `log` as they are shown; the
    latest `window` of them kept, with how many there were and whether a restore failed."""

    def __init__(self, state: ConsoleState, log: EventLog, window: int = WINDOW) -> None:
        self.state = state
        self.log = log
        self.recent: deque[Event] = deque(maxlen=window)  # the latest events, oldest first
        self.received = 0  # every event taken in
        self.restore_failed = False  # a RESTORE event said a host was not put back

    def keep(self, event: Event) -> None:
        """Count an event in and keep it in the window (the guard's, after the screen has
        gone, as well as the screen's)."""
        self.recent.append(event)
        self.received += 1
        if event.kind is EventKind.RESTORE and not event.payload.ok and \
                event.payload.left is None:  # a value left to its new owner is not a failure
            self.restore_failed = True

    def fold(self, batch: list[tuple[Event, float]]) -> list[tuple[str, float]]:
        """Fold a flush's events in; its intervals' pairs and arrival stamps (for the
        bench)."""
        stamps = []
        for event, stamp in batch:
            self.keep(event)
            self.log.event_line(event.t, self.state.apply(event))
            if event.kind is EventKind.INTERVAL and event.pair in self.state.pairs:
                stamps.append((event.pair, stamp))
        return stamps


def throughput_series(events: Iterable[Event], pairs: Iterable[str], t0: float | None
                      ) -> dict[str, list[tuple[float, float]]]:
    """Each pair's throughput over time, (seconds since `t0`, bit/s), the compare screen's
    lines; --bidir's way back a line of its own, `A rx`, as the report's chart has it. Built
    from the journal when the compare screen opens, never kept as the session runs."""
    labels = list(pairs)
    series: dict[str, list[tuple[float, float]]] = {lb: [] for lb in labels}
    for event in events:
        if event.kind is EventKind.INTERVAL and event.pair in labels:
            d = event.payload
            if isinstance(d.bits_per_second, int | float):
                key = f"{event.pair} rx" if d.direction == "rx" else event.pair
                series.setdefault(key, []).append(
                    (event.t - (t0 or 0.0), float(d.bits_per_second)))
    return series
