"""What the console built to go live is frozen out of the garbage collector's passes once
its first interval is folded in (abtui.ui.flow.collector): the first full pass went over it all,
40 ms of CPU on an interval's way to the screen. Only once: later intervals freeze nothing."""

from __future__ import annotations

import gc
import math
from collections.abc import Iterator

import pytest

from abtui.core.events import EventKind
from abtui.measure.replay.synthetic import synthetic_events, synthetic_profile
from abtui.ui.app import AbtuiApp
from tests.ui.console_kit import SpyController, settle, started


@pytest.fixture
def unfrozen() -> Iterator[None]:
    yield
    gc.unfreeze()  # the test process's objects back in the collector's care


def _tracked(obj: object) -> bool:
    """Whether the collector's passes still look at `obj` (frozen objects are in none)."""
    return any(o is obj for o in gc.get_objects())


async def test_the_first_interval_freezes_what_going_live_built(unfrozen: None) -> None:
    profile = synthetic_profile(1)
    events = synthetic_events(profile, intervals=5, seed=3)
    intervals = [e for e in events if e.kind is EventKind.INTERVAL]
    app = AbtuiApp(SpyController(profile, [], speed=math.inf), autostart=False)
    async with app.run_test() as pilot:
        await started(pilot)
        built = [object()]  # made after the first frame, as the links' imports are
        assert _tracked(built)
        for e in events:  # the preamble: no interval yet, nothing frozen
            if e.kind is EventKind.INTERVAL:
                break
            app.receive(e)
        await settle(pilot)
        assert _tracked(built)
        app.receive(intervals[0])
        await settle(pilot)
        assert not _tracked(built)
        later = [object()]
        app.receive(intervals[1])
        await settle(pilot)
        assert _tracked(later)  # frozen once, not at every interval
