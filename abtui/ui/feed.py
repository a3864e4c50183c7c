"""How the controller's events reach the screen: queued as they arrive and handed over in
flushes. An interval goes at once while the refresh budget allows (`flush_hz` flushes a second,
bursts of FLUSH_BURST), ping replies, watch and CPU samples with the next flush or within LAZY_S, so
a fast stream costs a bounded number of refreshes and an idle console none."""

from __future__ import annotations

import asyncio
import time
from collections.abc import Callable

from abtui.core.events import Event, EventKind
from abtui.ui.pacing import STALE_S, Throttle

FLUSH_HZ = 5  # flushes a second at most when events never pause (see wait)
FLUSH_BURST = 3  # flushes at once after a pause: a lone interval is shown at once
LAZY_S = 0.5  # ping replies and watch samples wait this long at most to be shown
LAZY_KINDS = frozenset({EventKind.PING, EventKind.WATCH, EventKind.CPU})


class EventFeed:
    """The queue between the controller and the screen. `schedule(delay, flush)` runs
    `flush` after `delay` seconds (0: after the rest of this burst is queued); the app gives
    it its own call_later."""

    def __init__(self, schedule_now: Callable[[Callable[[], None]], object],
                 flush_hz: int = FLUSH_HZ) -> None:
        self.schedule_now = schedule_now
        self.flush_hz = flush_hz
        self.pending: list[tuple[Event, float]] = []  # (event, perf_counter when it arrived)
        self.due: float | None = None  # when the next flush is scheduled, if one is
        self.flush: Callable[[], None] = lambda: None  # set by the app
        self._handle: asyncio.TimerHandle | None = None
        self._tokens, self._filled = float(FLUSH_BURST), 0.0  # see wait

    def queue(self, event: Event) -> float:
        """Queue an event; its arrival time (an interval is timed from its line's arrival
        on the SSH channel when the engine stamped it, a replay's from here)."""
        now = time.perf_counter()
        self.pending.append((event, now if event.arrived is None else event.arrived))
        return now

    def schedule(self, event: Event, now: float) -> None:
        """Have the queue flushed as soon as the refresh budget allows."""
        wait = self.wait(now)
        if event.kind in LAZY_KINDS:
            wait = max(wait, LAZY_S)
        due = now + wait
        if self.due is not None and self.due <= due and now - self.due < STALE_S:
            return  # a flush soon enough is on its way (and not lost: see abtui.ui.pacing)
        self.cancel()
        self.due = due
        if wait > 0:  # asyncio's timer, never Textual's one-shot set_timer (abtui.ui.pacing)
            self._handle = asyncio.get_running_loop().call_later(wait, self._timer_fired)
        else:
            self.schedule_now(self.flush)  # after the rest of this burst is queued

    def _timer_fired(self) -> None:
        self._handle = None
        self.schedule_now(self.flush)

    def wait(self, now: float) -> float:
        """Seconds until the refresh budget allows a flush: a token bucket of FLUSH_BURST
        flushes refilled at `flush_hz` a second (a lone interval never waits; a stream that
        never pauses gets `flush_hz` flushes a second)."""
        tokens = min(FLUSH_BURST, self._tokens + (now - self._filled) * self.flush_hz)
        return 0.0 if tokens >= 1 else (1 - tokens) / self.flush_hz

    def cancel(self) -> None:
        if self._handle is not None:
            self._handle.cancel()
            self._handle = None

    async def settled(self, *throttles: Throttle) -> None:
        """Return once nothing is queued and none of `throttles` has a repaint waiting."""
        while self.pending or any(t.pending for t in throttles):
            await asyncio.sleep(0.02)
        await asyncio.sleep(0)

    def take(self, ready: bool = True) -> list[tuple[Event, float]]:
        """A flush happens now: the budget spent, and what was queued (kept while the screen
        is not `ready`: not mounted yet, or being taken down)."""
        now = time.perf_counter()
        self._tokens = max(0.0, min(FLUSH_BURST, self._tokens + (now - self._filled)
                                    * self.flush_hz) - 1)
        self._filled = now
        self.due = None
        self.cancel()
        if not ready:
            return []
        batch, self.pending = self.pending, []
        return batch
