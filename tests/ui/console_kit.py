"""Helpers for the console's tests: an app on a fixed, deterministic replay, and a way to wait
until what it replayed is on screen (no clocks: the replay's timestamps are fixed)."""

from __future__ import annotations

import math
from collections.abc import Callable

from textual.pilot import Pilot

from abtui.core.events import Event
from abtui.measure.replay.controller import ReplayController
from abtui.measure.replay.synthetic import synthetic_events, synthetic_profile
from abtui.ui.app import AbtuiApp
from abtui.ui.model.pacing import Clock


class SpyController(ReplayController):
    """A ReplayController that also records the console's calls."""

    def __init__(self, *args, **kwargs) -> None:  # type: ignore[no-untyped-def]
        super().__init__(*args, **kwargs)
        self.calls: list[tuple] = []

    async def set_knob(self, knob, value, pairs=None):  # type: ignore[no-untyped-def]
        self.calls.append(("set_knob", knob, value, list(pairs or [])))
        await super().set_knob(knob, value, pairs)

    async def shutdown(self, reason: str = "shutdown") -> None:
        self.calls.append(("shutdown",))
        await super().shutdown(reason)


class FakeClock:
    """The console's clock (its scheduler's: flushes and throttles), moved by the test
    (asyncio's and Textual's clocks run on)."""

    def __init__(self) -> None:
        self.now = 1000.0

    def __call__(self) -> float:
        return self.now


def make_app(pairs: int = 2, intervals: int = 20, events: list[Event] | None = None,
             clock: Clock | None = None, **kwargs) -> AbtuiApp:  # type: ignore[no-untyped-def]
    profile = synthetic_profile(pairs)
    if events is None:
        events = synthetic_events(profile, intervals=intervals, seed=7)
    ctl = SpyController(profile, events, speed=math.inf, **kwargs)
    return AbtuiApp(ctl, title="abtui — test — REPLAY", clock=clock)


async def until(pilot: Pilot, cond: Callable[[], bool], timeout: float = 10.0) -> None:
    steps = int(timeout / 0.02)
    for _ in range(steps):
        if cond():
            break
        await pilot.pause(0.02)
    assert cond(), "condition not reached in time"
    app: AbtuiApp = pilot.app  # type: ignore[assignment]
    await app.caught_up()  # what the controller said so far is on screen (it may go on)
    await pilot.pause()


async def started(pilot: Pilot) -> None:
    """Wait until start-up is over: the significance marks' import (numpy, in a thread,
    holding the GIL for a second or more) is done and the screen has settled."""
    from abtui.ui.model.phase_rows import LOADED

    await until(pilot, lambda: "stats" in LOADED)
    await settle(pilot)


async def settle(pilot: Pilot) -> None:
    """Wait until every event received is on screen, no repaint is waiting and the
    messages that posted are handled (the app's public hook; no fixed sleep)."""
    app: AbtuiApp = pilot.app  # type: ignore[assignment]
    await app.settled()
    await pilot.pause()


async def replayed(pilot: Pilot, intervals: int) -> None:
    """Wait until every interval of the recording is folded in, the controller is idle and
    the screen has settled (the app's public hook)."""
    app: AbtuiApp = pilot.app  # type: ignore[assignment]
    n = intervals * len(app.state.pairs)
    await until(pilot, lambda: app.state.intervals_seen >= n
                and not app.controller.running)  # type: ignore[attr-defined]
    await settle(pilot)


async def alternating(pilot: Pilot, every: float) -> None:
    """On a live synthetic stream: tcp_wmem flipped to 64 KiB by its key (the knob ctrl+a
    alternates, its base now), then ctrl+a, alternating every `every` seconds."""
    app: AbtuiApp = pilot.app  # type: ignore[assignment]
    await until(pilot, lambda: app.state.running)
    app.alternation.every = every
    await pilot.press("w")
    await until(pilot, lambda: app.state.pairs["A"].config.get("tcp_wmem") ==
                "4096 16384 65536")
    await pilot.press("ctrl+a")
    await until(pilot, lambda: app.alternation.live is not None)
