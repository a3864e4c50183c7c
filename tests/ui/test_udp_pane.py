"""A UDP pair's pane says what was lost and the jitter, in place of TCP's retransmits/cwnd."""

from __future__ import annotations

import dataclasses

import pytest

from abtui.core.events import Event, EventKind
from abtui.measure.replay.synthetic import synthetic_events, synthetic_profile
from abtui.ui.render.widgets import PairPane
from tests.ui.console_kit import make_app, replayed

pytestmark = pytest.mark.ui


async def test_a_udp_pane_shows_loss_and_jitter() -> None:
    events = synthetic_events(synthetic_profile(2), intervals=4, seed=7)
    udp = [i for i, x in enumerate(events) if x.kind is EventKind.INTERVAL and x.pair == "A"]
    for n, i in enumerate(udp):  # the same events, as a UDP pair's records
        ev = events[i]
        events[i] = Event.of(dataclasses.replace(
            ev.payload, retransmits=None, cwnd_bytes=None, jitter_ms=0.01 * (n + 1),
            lost_packets=10 * n, packets=1000), ev.t, ev.pair, ev.host)
    app = make_app(events=events)
    async with app.run_test() as pilot:
        await replayed(pilot, 4)
        a = app.query_one("#pane-A", PairPane).text("tcp")
        b = app.query_one("#pane-B", PairPane).text("tcp")
    assert "lost 3.00%" in a and "jitter 0.040 ms" in a and "retr" not in a
    assert "retr" in b and "lost" not in b
