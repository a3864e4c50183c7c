"""A pane shows each side's host CPU live (busy % of one core and the softirq share), and says
`shared`, with no figure, where the host's CPU figures are the whole machine's (a namespace
host), as the reports' CPU cells do."""

from __future__ import annotations

import pytest

from abtui.core.events import Cpu, Event, EventKind, Facts
from abtui.measure.replay.synthetic import synthetic_events, synthetic_profile
from abtui.ui.render.widgets import PairPane
from tests.ui.console_kit import make_app, replayed

pytestmark = pytest.mark.ui


async def test_panes_show_host_cpu_and_the_shared_machine() -> None:
    profile = synthetic_profile(2)
    events = synthetic_events(profile, intervals=4, seed=7)
    a, b = profile.pairs
    out: list[Event] = []
    for e in events:
        if e.kind is EventKind.FACTS and e.host in (a.sender, a.receiver):
            e = Event.of(Facts(facts={**e.payload.facts, "cpu_scope": "shared"}), e.t,
                         host=e.host)
        out.append(e)
        if e.kind is EventKind.INTERVAL:
            pair = a if e.pair == a.label else b
            for host, row in ((pair.sender, [30, 40, 0, 20, 110, 0]),
                              (pair.receiver, [10, 10, 5, 25, 150, 0])):
                out.append(Event.of(Cpu(run=0, role="", phase=0, straddles=False, total=row,
                                        cpus=[row, row]), e.t, pair=pair.label, host=host))
    app = make_app(events=out)
    async with app.run_test() as pilot:
        await replayed(pilot, 4)
        text_a = app.query_one(f"#pane-{a.label}", PairPane).text("tcp")
        text_b = app.query_one(f"#pane-{b.label}", PairPane).text("tcp")
    # sender: 90 of 200 ticks busy on 2 CPUs = 90 % of one core, softirq 20/200 = 10 %
    assert "cpu snd shared" in text_a and "cpu rcv shared" in text_a
    assert "%" not in text_a.split("cpu snd")[1]  # no figure of the whole machine's
    assert "cpu snd 90% si 10%" in text_b and "shared" not in text_b


def test_a_pair_on_one_host_says_shared_as_the_reports_do() -> None:
    """Sender and receiver one host: each side's figure is that host's, both sides' work."""
    from abtui.ui.model.pair_state import PairState
    from abtui.ui.render.chips import cpu_chips

    one = PairState("A", "h", "h", {}, cpu={"sender": (150.0, 5.0), "receiver": (150.0, 5.0)})
    two = PairState("B", "s", "r", {}, cpu={"sender": (150.0, 5.0)})
    text = ["".join(p if isinstance(p, str) else p[0] for p in chip) for chip in cpu_chips(one)]
    assert text == ["cpu snd shared", "cpu rcv shared"]
    assert ["".join(p if isinstance(p, str) else p[0] for p in chip)
            for chip in cpu_chips(two)] == ["cpu snd 150% si 5%"]
