"""The phase table shows no row of `—` that no interval will ever fill: at a VM lab's start
(softirq-crypto on VM hosts, recorded) the plan's first flip opened a `tunnel=ipsec` phase
that the first run, under its own configuration (with its direction), overrode before any
interval came."""

from __future__ import annotations

import math
from pathlib import Path

import pytest
from textual.widgets import DataTable

from abtui.core.events import EventKind
from abtui.profile import parse_profile
from abtui.sessions.reader import load_events
from abtui.ui.app import AbtuiApp
from tests.ui.console_kit import FakeClock, SpyController, started, until

pytestmark = pytest.mark.ui

GOLDEN = Path(__file__).resolve().parents[1] / "golden" / "softirq-crypto-vm.abtui.jsonl.gz"
INTERVALS = 6  # the first run's first intervals, both pairs


@pytest.mark.parametrize("size", [(80, 24), (160, 48)])
async def test_no_row_for_a_phase_a_run_overrode_at_a_vm_lab_s_start(size: tuple[int, int]) -> None:
    events = load_events(GOLDEN)
    cut = [i for i, e in enumerate(events) if e.kind is EventKind.INTERVAL][INTERVALS - 1]
    profile = parse_profile(events[0].payload.profile_text, "softirq-crypto.toml")
    app = AbtuiApp(SpyController(profile, events[:cut + 1], speed=math.inf),
                   title="abtui — test — REPLAY")
    async with app.run_test(size=size) as pilot:
        await until(pilot, lambda: app.state.intervals_seen >= INTERVALS)
        await app.settled()
        table = app.query_one("#phases", DataTable)
        rows = [[str(c) for c in table.get_row_at(i)] for i in range(table.row_count)]
        assert [r[0] for r in rows] == ["direction=tx, tunnel=ipsec"], rows
        assert all(c != "—" for c in rows[0][1:]), rows


async def test_a_row_that_takes_another_s_place_shows_at_once() -> None:
    """The run's own phase replaced the flip's within one flush (as many rows as before,
    another key): the table is rebuilt in that flush, not half a second later (its throttle)
    or never (update_cell on a row that is gone raised CellDoesNotExist)."""
    events = load_events(GOLDEN)
    flip = next(i for i, e in enumerate(events) if e.kind is EventKind.KNOB)
    first = next(i for i, e in enumerate(events) if e.kind is EventKind.INTERVAL)
    profile = parse_profile(events[0].payload.profile_text, "softirq-crypto.toml")
    clock = FakeClock()
    app = AbtuiApp(SpyController(profile, [], speed=math.inf), autostart=False, clock=clock)
    async with app.run_test(size=(160, 48)) as pilot:
        await started(pilot)
        table = app.query_one("#phases", DataTable)

        def shown() -> list[str]:
            return [str(table.get_row_at(i)[0]) for i in range(table.row_count)]

        for ev in events[:flip + 1]:
            app.receive(ev)
        await until(pilot, lambda: shown() == ["tunnel=ipsec"])
        clock.now += 0.1  # inside the table's window: a plain repaint would wait for its end
        for ev in events[flip + 1:first + 1]:
            if ev.kind is not EventKind.TUNNEL:  # its state lays the screen out anew anyway
                app.receive(ev)
        await until(pilot, lambda: not app.feed.pending)
        assert [repr(k) for k in app.state.phases] == ["'direction=tx, tunnel=ipsec'"]
        assert shown() == ["direction=tx, tunnel=ipsec"]
