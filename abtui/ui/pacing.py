"""Rate limits for the console's repaints that cannot lose their last call.

Textual's one-shot `set_timer` is not used here: its timer task reads the clock twice before
sleeping, and when more than `delay` passes between the two readings (a tiny delay, or the
process descheduled on a busy machine, or another thread holding the GIL) it counts the tick
as skipped and never calls back. A flag saying "a call is scheduled" then stays set for good
and the screen stops following the controller. asyncio's own `call_later` always fires; the
callback is handed to the app's message queue like any other.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Callable
from typing import Any

from textual.app import App

STALE_S = 1.0  # a scheduled call this overdue is taken as lost and scheduled again


class Throttle:
    """Run `action` at most `hz` times a second; a call inside the window runs it once at the
    window's end, so the last values always show.

    With `defer`, a call that is already due runs after the messages queued now (the rest of
    a burst of events is folded in by the same run) instead of at once."""

    def __init__(self, app: App[Any], hz: float, action: Callable[[], object], *,
                 defer: bool = False) -> None:
        self.app, self.period, self.action, self.defer = app, 1 / hz, action, defer
        self.at = -1e9  # when it last ran (perf_counter)
        self.pending = False  # a run is scheduled
        self.due = 0.0  # when the scheduled run should happen
        self._handle: asyncio.TimerHandle | None = None

    def __call__(self, force: bool = False) -> None:
        now = time.perf_counter()
        if self.pending and now - self.due > STALE_S:
            self._cancel()  # its wake-up was lost (the app was busy or closing): again
        if force:
            self._run(now)
            return
        if self.pending:
            return
        delay = self.at + self.period - now
        if delay <= 0 and not self.defer:
            self._run(now)
            return
        self.pending, self.due = True, now + max(delay, 0.0)
        if delay <= 0:
            self._post()
        else:
            self._handle = asyncio.get_running_loop().call_later(delay, self._post)

    def _post(self) -> None:
        self._handle = None
        if not self.app.call_later(self._late):
            self.pending = False  # the app is closing: nothing to show any more

    def _late(self) -> None:
        if self.pending:
            self._run(time.perf_counter())

    def _cancel(self) -> None:
        if self._handle is not None:
            self._handle.cancel()
            self._handle = None
        self.pending = False

    def _run(self, now: float) -> None:
        self._cancel()
        self.at = now
        self.action()
