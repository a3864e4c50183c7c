"""A pair with a request/response load (sockperf): its pane's RTT line adds the phase's p50
and p99 of the round trips, read from the RR events' bins; a pair without one shows none."""

from __future__ import annotations

import pytest

from abtui.core import events as ev
from abtui.core.events import Event, EventKind
from abtui.measure.replay.synthetic import synthetic_events, synthetic_profile
from abtui.reports import latency
from abtui.ui.render.widgets import PairPane
from tests.ui.console_kit import make_app, replayed

pytestmark = pytest.mark.ui


async def test_a_pane_shows_the_phases_round_trip_percentiles() -> None:
    events = synthetic_events(synthetic_profile(2), intervals=4, seed=7)
    last = max(i for i, x in enumerate(events) if x.kind is EventKind.INTERVAL and x.pair == "A")
    interval = events[last]
    # 200 round trips: 100 at 0.05 ms, 97 at 0.08 ms, 3 at 3.1 ms → p50 0.05, p99 3.10 (the
    # 198th), as abtui.reports.latency reads them
    rr = ev.RequestResponse(run=interval.payload.run, phase=interval.payload.phase, start=0.0,
                            end=1.0, n=200, avg_ms=None, p50_ms=None, p90_ms=None, p99_ms=None,
                            p999_ms=None, max_ms=3.1,
                            bins=[[0.05, 100], [0.08, 97], [3.1, 3]])
    events.insert(last + 1, Event.of(rr, interval.t, pair="A"))
    app = make_app(events=events)
    async with app.run_test() as pilot:
        await replayed(pilot, 4)
        a = app.query_one("#pane-A", PairPane).text("rtt-label")
        b = app.query_one("#pane-B", PairPane).text("rtt-label")
    assert "rr p50 0.050" in a and "p99 3.10" in a
    values = [0.05] * 100 + [0.08] * 97 + [3.1] * 3
    assert (latency.percentile(values, 50), latency.percentile(values, 99)) == (0.05, 3.1)
    assert "rr p50" not in b
