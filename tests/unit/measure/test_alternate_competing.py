"""Competing traffic during an alternation (abtui.measure.alternate): a flagged span on a
pair's data link (a COMPETING event, abtui.measure.engine.traffic) marks every stretch it
overlaps, closed already or in force; those stretches keep their samples (what the other
flow cost is the pair's own to judge) and the verdict's line says how many of the stretches
it stands on were flagged. The other pair's line says nothing."""

from __future__ import annotations

from abtui.core.events import CompetingTraffic, Event, IntervalMeasured
from abtui.measure.alternate.design import schedule
from abtui.measure.alternate.stretches import Stretches
from abtui.measure.alternate.verdicts import Verdicts
from abtui.reports.sequential import Family

BIG, SMALL = "4096 131072 6291456", "4096 8192 16384"


def interval(pair: str, t: float, bps: float = 1e9) -> Event:
    """A one-second interval that arrived at `t` (the controller's clock)."""
    return Event.of(IntervalMeasured.from_data({
        "run": "r", "phase": 0, "bits_per_second": bps, "start": 0.0, "end": 1.0,
        "omitted": False, "straddles": False}), t, pair=pair)


def competing(pair: str, start: float, end: float) -> Event:
    return Event.of(CompetingTraffic(run="r", phase=None, device="data0", start=start,
                                     end=end, link_bps=6e8, iperf_bps=4e8, excess_bps=2e8),
                    end + 1.0, pair=pair, host="a")


def test_a_flagged_span_marks_the_stretches_it_overlaps_and_keeps_their_samples():
    s = Stretches("rmem", (BIG, SMALL), ("A", "B"), min_seconds=0.0)
    for i, value in enumerate((BIG, SMALL, SMALL)):
        t0 = 100 + 10 * i
        s(interval("A", t0))
        s.begin(i, value)
        for k in range(2, 5):
            s(interval("A", t0 + k))
            s(interval("B", t0 + k))
        if i == 1:
            s(competing("A", 108.0, 112.0))  # flagged late: stretch 0 closed, 1 in force
    s.close(full=True)
    assert s.competing == {"A": {0, 1}, "B": set()}
    assert set(s.taken["A"]) == {0, 1, 2}  # flagged, not left out


def test_the_verdict_line_counts_the_flagged_stretches_it_stands_on():
    s = Stretches("rmem", (BIG, SMALL), ("A", "B"), min_seconds=0.0)
    order = schedule((BIG, SMALL), 3, 1)
    v = Verdicts(s, order, 2, Family(2, 3, arrangements=6), min_effect=1.0)
    for i in range(8):
        s(interval("A", 100 + 10 * i))
        s.begin(i, order[i])
        for pair in ("A", "B"):
            s(interval(pair, 100 + 10 * i + 3, 1e9 if order[i] == BIG else 5e8))
    s(competing("A", 121.0, 133.0))  # over stretches 2 and 3
    s.close(full=True)
    lines = dict(line.split(": ", 1) for line in v.summary())
    assert "⚠ competing traffic in 2 of 8 stretches" in lines["A"], lines["A"]
    assert "competing" not in lines["B"], lines["B"]
