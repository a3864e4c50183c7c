"""How the controller's events reach the screen: queued as they arrive and handed over in
flushes. An interval goes at once while the refresh budget allows (`flush_hz` flushes a second,
bursts of FLUSH_BURST), ping replies, watch and CPU samples with the next flush or within LAZY_S, so
a fast stream costs a bounded number of refreshes and an idle console none. The flush is a
wake-up of the console's one scheduler (abtui.ui.model.pacing), calling what the console gave
the feed when it made it: the feed is the controller's subscriber, so an event goes from the
engine's bus to the feed and on to the screen, never back through the app first."""

from __future__ import annotations

from collections.abc import Callable

from abtui.core.events import Event, EventKind
from abtui.ui.model.pacing import Scheduler, TokenBucket

FLUSH_HZ = 10  # flushes a second at most when events never pause (see wait)
FLUSH_BURST = 3  # flushes at once after a pause: a lone interval is shown at once
LAZY_S = 1.0  # ping replies and watch samples wait this long at most to be shown
# (a data link's counters show nothing themselves, what they find comes as COMPETING: each
# run's reading a second flushed at once was 2 flushes and up to 2 frames a second more)
LAZY_KINDS = frozenset({EventKind.PING, EventKind.WATCH, EventKind.CPU, EventKind.PROFILE,
                        EventKind.COUNTERS, EventKind.LINK_BYTES})


class EventFeed:
    """The queue between the controller and the screen; `flush` is called by the scheduler
    when the refresh budget allows, while `live()` says the screen runs (until then the
    events wait for the screen's first flush)."""

    def __init__(self, scheduler: Scheduler, flush: Callable[[], None],
                 flush_hz: int = FLUSH_HZ, *, live: Callable[[], bool] = lambda: True) -> None:
        self.clock = scheduler.clock
        self.flush_hz = flush_hz
        self.pending: list[tuple[Event, float]] = []  # (event, clock time when it arrived)
        self._live = live
        self._wakeup = scheduler.wakeup(flush)
        self._budget = TokenBucket(flush_hz, FLUSH_BURST)  # see wait
        self.queued = 0  # events queued so far
        self.taken = 0  # ... and handed to the screen

    @property
    def due(self) -> float | None:
        """When the next flush is scheduled, if one is."""
        return self._wakeup.due

    def receive(self, event: Event) -> None:
        """The controller's subscriber: the event queued, and shown as soon as the refresh
        budget allows (at most `flush_hz` flushes a second, none when idle)."""
        now = self.queue(event)
        if not self._live():  # the screen's first flush takes it (or the console closed)
            return
        wait = self._budget.wait(now)  # the flush as soon as the refresh budget allows
        self._wakeup.at(now + (max(wait, LAZY_S) if event.kind in LAZY_KINDS else wait))

    def queue(self, event: Event) -> float:
        """Queue an event; its arrival time (an interval is timed from its line's arrival
        on the SSH channel when the engine stamped it, a replay's from here)."""
        now = self.clock()
        self.pending.append((event, now if event.arrived is None else event.arrived))
        self.queued += 1
        return now

    def wait(self, now: float) -> float:
        """Seconds until the refresh budget allows a flush: a token bucket of FLUSH_BURST
        flushes refilled at `flush_hz` a second (a lone interval never waits; a stream that
        never pauses gets `flush_hz` flushes a second)."""
        return self._budget.wait(now)

    def take(self, ready: bool = True) -> list[tuple[Event, float]]:
        """A flush happens now: the budget spent, and what was queued (kept while the screen
        is not `ready`: not mounted yet, or being taken down)."""
        self._budget.take(self.clock())
        self._wakeup.cancel()
        if not ready:
            return []
        batch, self.pending = self.pending, []
        self.taken += len(batch)
        return batch
