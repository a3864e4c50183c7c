"""A pane shows each side's host CPU live (busy % of one core and the softirq share), and says
`machine` where the host's CPU figures are the whole machine's (a namespace host)."""

from __future__ import annotations

import pytest

from abtui.core.events import Event, EventKind
from abtui.measure.synthetic import synthetic_events, synthetic_profile
from abtui.ui.widgets import PairPane
from tests.ui.console_kit import make_app, replayed

pytestmark = pytest.mark.ui


async def test_panes_show_host_cpu_and_the_shared_machine() -> None:
    profile = synthetic_profile(2)
    events = synthetic_events(profile, intervals=4, seed=7)
    a, b = profile.pairs
    out: list[Event] = []
    for e in events:
        if e.kind is EventKind.FACTS and e.host in (a.sender, a.receiver):
            e.data["facts"]["cpu_scope"] = "shared"
        out.append(e)
        if e.kind is EventKind.INTERVAL:
            pair = a if e.pair == a.label else b
            for host, row in ((pair.sender, [30, 40, 0, 20, 110, 0]),
                              (pair.receiver, [10, 10, 5, 25, 150, 0])):
                out.append(Event(EventKind.CPU, e.t, pair=pair.label, host=host, data={
                    "run": 0, "role": "", "phase": 0, "straddles": False,
                    "total": row, "cpus": [row, row]}))
    app = make_app(events=out)
    async with app.run_test() as pilot:
        await replayed(pilot, 4)
        text_a = app.query_one(f"#pane-{a.label}", PairPane).text("tcp")
        text_b = app.query_one(f"#pane-{b.label}", PairPane).text("tcp")
    # sender: 90 of 200 ticks busy on 2 CPUs = 90 % of one core, softirq 20/200 = 10 %
    assert "cpu snd machine 90% si 10%" in text_a and "cpu rcv machine 50% si 12%" in text_a
    assert "cpu snd 90% si 10%" in text_b and "machine" not in text_b
