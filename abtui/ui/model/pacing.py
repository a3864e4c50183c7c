"""The console's one scheduler: every deferred repaint and flush is a `Wakeup` of one
`Scheduler`, which reads one (injectable) clock and says when nothing is left to do.

Textual's one-shot `set_timer` is not used here: its timer task reads the clock twice before
sleeping, and when more than `delay` passes between the two readings (a tiny delay, or the
process descheduled on a busy machine, or another thread holding the GIL) it counts the tick
as skipped and never calls back. A flag saying "a call is scheduled" then stays set for good
and the screen stops following the controller. asyncio's own `call_later` always fires; the
callback is handed to the app's message queue (`post`) like any other, and a wake-up overdue
by STALE_S is taken as lost and scheduled again.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Callable
from functools import partial

STALE_S = 1.0  # a scheduled call this overdue is taken as lost and scheduled again

Clock = Callable[[], float]
Post = Callable[[Callable[[], None]], object]  # the app's call_later: False once closing


class Scheduler:
    """Owns the console's wake-ups, its clock, and the signal that one ran or was dropped
    (what `until` waits on: no polling)."""

    def __init__(self, post: Post, clock: Clock = time.perf_counter) -> None:
        self.post = post
        self.clock = clock
        self._wakeups: list[Wakeup] = []
        self._changed = asyncio.Event()

    def wakeup(self, action: Callable[[], object]) -> Wakeup:
        """A new wake-up that runs `action`."""
        w = Wakeup(self, action)
        self._wakeups.append(w)
        return w

    @property
    def busy(self) -> bool:
        """A wake-up is scheduled."""
        return any(w.pending for w in self._wakeups)

    def changed(self) -> None:
        """A wake-up ran or was dropped: whoever waits in `until` looks again."""
        self._changed.set()

    async def until(self, done: Callable[[], bool]) -> None:
        """Return once `done()` holds, looking again each time a wake-up runs or is dropped."""
        while not done():
            self._changed.clear()
            await self._changed.wait()


class Wakeup:
    """One deferred call: at most one scheduled at a time, the earliest asked for wins."""

    def __init__(self, scheduler: Scheduler, action: Callable[[], object]) -> None:
        self.scheduler = scheduler
        self.action = action
        self.due: float | None = None  # when the scheduled call should run, if one is
        self._handle: asyncio.TimerHandle | None = None
        self._token = 0  # the scheduled call's; a call posted before a cancel does nothing

    @property
    def pending(self) -> bool:
        return self.due is not None

    def at(self, due: float) -> None:
        """Run the action at `due` (clock time), unless a call no later is already on its
        way (one overdue by STALE_S is taken as lost and replaced)."""
        now = self.scheduler.clock()
        if self.due is not None and self.due <= due and now - self.due < STALE_S:
            return
        self.cancel(notify=False)
        self.due = due
        self._token += 1
        token = self._token
        if due > now:
            self._handle = asyncio.get_running_loop().call_later(due - now, self._post, token)
        elif not self.scheduler.post(partial(self._fire, token)):  # after the messages
            self.cancel()  # queued now (the rest of a burst); the app closing: nothing to show

    def cancel(self, *, notify: bool = True) -> None:
        """No call scheduled any more (one already posted does nothing)."""
        if self._handle is not None:
            self._handle.cancel()
            self._handle = None
        if self.due is not None:
            self.due = None
            self._token += 1
            if notify:
                self.scheduler.changed()

    def _post(self, token: int) -> None:
        self._handle = None
        if not self.scheduler.post(partial(self._fire, token)):
            self.cancel()  # the app is closing: nothing to show any more

    def _fire(self, token: int) -> None:
        if token != self._token:
            return  # cancelled, or replaced by a later call
        self.due = None
        self._token += 1
        try:
            self.action()
        finally:
            self.scheduler.changed()


class TokenBucket:
    """`burst` runs refilled at `hz` a second: a lone call never waits, a stream of calls
    gets `hz` a second. What paces the flushes (abtui.ui.flow.feed) and the throttled repaints
    (Throttle)."""

    def __init__(self, hz: float, burst: int) -> None:
        self.hz = hz
        self.burst = burst
        self._tokens, self._filled = float(burst), -1e9  # the bucket, and when

    def _available(self, now: float) -> float:
        return min(self.burst, self._tokens + (now - self._filled) * self.hz)

    def wait(self, now: float) -> float:
        """Seconds from `now` until a run is available (0 while one is)."""
        return max(0.0, (1 - self._available(now)) / self.hz)

    def take(self, now: float) -> None:
        """A run happens `now`: one spent (none owed when there was none)."""
        self._tokens, self._filled = max(0.0, self._available(now) - 1), now


class Throttle:
    """Run `action` at most `hz` times a second over time; a call that finds no run left
    runs it once when one is, so the last values always show.

    The runs are a token bucket of `burst` refilled at `hz`: a lone call never waits, a
    stream of calls runs `hz` times a second. With `slack` (the period of the console's
    flushes), a call less than `slack / 2` before a run is available runs it at once, and
    the deferred run waits `lazy` (default `slack`) past that moment: while flushes keep
    coming, the throttled repaint rides on one of them and shares its frame instead of
    costing a frame of its own (Textual renders everything a frame's dirty rectangle
    covers). With a `burst` over 1, a call less than `slack / 2` after a run runs too: it
    belongs to the same burst of events, whose flushes make a frame anyway.

    With `slack`, `burst` is 2 unless given: the pairs' intervals at 1 s come tens of ms
    apart (20-55 ms measured on the lab: each iperf3 keeps the beat its connection started
    on), a flush and a frame each; with one run a period, the second pair's numbers waited
    for a frame of their own a period later (a 2-pair console made 0.6-1.1 frames a second for
    its numbers and table alone)."""

    def __init__(self, scheduler: Scheduler, hz: float, action: Callable[[], object], *,
                 slack: float = 0.0, burst: int | None = None,
                 lazy: float | None = None) -> None:
        self.clock = scheduler.clock
        self.hz = hz
        self.slack = slack
        self.burst = burst if burst is not None else (2 if slack else 1)
        self.lazy = slack if lazy is None else lazy
        self.action = action
        self.at = -1e9  # when it last ran (clock time)
        self._runs = TokenBucket(hz, self.burst)
        self._wakeup = scheduler.wakeup(self._run)

    @property
    def pending(self) -> bool:
        """A run is scheduled."""
        return self._wakeup.pending

    @property
    def due(self) -> float | None:
        """When the scheduled run comes (clock time), if one is."""
        return self._wakeup.due

    def __call__(self, force: bool = False) -> None:
        now = self.clock()
        ready = now + self._runs.wait(now)  # when a run is available
        if force or ready - self.slack / 2 <= now or (
                self.burst > 1 and now - self.at < self.slack / 2):
            self._run()
        else:
            self._wakeup.at(ready + self.lazy)

    def _run(self) -> None:
        self._wakeup.cancel()
        self.at = now = self.clock()
        self._runs.take(now)
        self.action()
