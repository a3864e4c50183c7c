"""The competing-traffic rule (abtui.measure.engine.traffic): a data link's counters set
against iperf3's own bytes; what is beyond them by more than a few percent is flagged, with
its rate and phase, and nothing else is."""

from __future__ import annotations

import pytest

from abtui.core import events
from abtui.core.events import AnyEvent, Event, EventKind
from abtui.core.model import Pair
from abtui.measure.engine.traffic import (
    FLOOR_BPS,
    FRACTION,
    HEADER_BYTES,
    TrafficJudge,
    judge_span,
)

PAIRS = [Pair(label="A", sender="a-snd", receiver="a-rcv", target="198.18.1.2"),
         Pair(label="B", sender="b-snd", receiver="b-rcv", target="198.18.2.2")]
T0 = 1_780_000_000.0
OURS = 1e9  # iperf3's rate, bits/s
PACKETS = 20_000  # packets a second on the link, both ways


def test_the_rule() -> None:
    second = int(OURS / 8)
    clean = judge_span(second + PACKETS * HEADER_BYTES, PACKETS, 1.0, OURS)
    assert clean is not None and abs(clean.excess_bps) < 1 and not clean.flagged
    under = judge_span(int(second * (1 + FRACTION * 0.8)) + PACKETS * HEADER_BYTES, PACKETS,
                       1.0, OURS)
    assert under is not None and not under.flagged  # a few percent: headers, timing
    over = judge_span(int(second * 1.31) + PACKETS * HEADER_BYTES, PACKETS, 1.0, OURS)
    assert over is not None and over.flagged
    assert over.excess_bps == pytest.approx(0.31 * OURS, rel=1e-6)
    # at a slow rate a little control traffic is no flag (the floor)
    slow = judge_span(int((1e5 + FLOOR_BPS * 0.5) / 8), 0, 1.0, 1e5)
    assert slow is not None and not slow.flagged
    # retransmitted segments are ours, on the wire though iperf3 counts them once
    retrans = judge_span(int(second * 1.10), 0, 1.0, OURS, retransmit_bps=0.1 * OURS)
    assert retrans is not None and not retrans.flagged
    assert judge_span(-1, 0, 1.0, OURS) is None  # counters went back: a device reset
    assert judge_span(10, 0, 0.0, OURS) is None


class Link:
    """pair A's sender's data link: iperf3's intervals and the device's counters, a second
    apart, with `extra` bits/s of somebody else's on it from `since` on."""

    def __init__(self) -> None:
        self.out: list[AnyEvent] = []
        self.judge = TrafficJudge(PAIRS, self.out.append)
        self.bytes = 0
        self.packets = 0

    def second(self, k: int, extra: float = 0.0, phase: int = 0, ours: float = OURS,
               interval: bool = True) -> None:
        t = T0 + k
        self.bytes += int((ours + extra) / 8) + PACKETS * HEADER_BYTES
        self.packets += PACKETS
        self.judge.feed(Event.of(events.LinkBytes(
            run="A-1", device="data0", clock=t - 0.001, tx_bytes=self.bytes, rx_bytes=0,
            tx_packets=self.packets, rx_packets=0), t=t, pair="A", host="a-snd"))
        if interval:
            self.judge.feed(Event.of(events.IntervalMeasured(
                run="A-1", phase=phase, start=k - 1.0, end=float(k), bytes=int(ours / 8),
                bits_per_second=ours, retransmits=0, cwnd_bytes=None, omitted=False,
                straddles=False), t=t + 0.02, pair="A"))

    def flagged(self) -> list[events.CompetingTraffic]:
        return [e.payload for e in self.out if e.kind is EventKind.COMPETING]  # type: ignore[misc]


def test_our_own_flow_alone_is_never_flagged() -> None:
    link = Link()
    for k in range(1, 30):
        link.second(k, ours=OURS * (1 + 0.2 * (k % 3)))  # a rate that moves
    assert link.judge.judged >= 25 and not link.flagged()


def test_a_competing_flow_is_flagged_in_its_phase_at_its_rate() -> None:
    link = Link()
    for k in range(1, 8):
        link.second(k, phase=0)
    for k in range(8, 16):
        link.second(k, extra=310e6, phase=1)
    got = link.flagged()
    assert len(got) >= 6
    assert all(f.start >= T0 + 6 for f in got)  # none before the flow
    full = [f for f in got if f.start >= T0 + 8]  # spans wholly within it
    assert full and all(f.excess_bps == pytest.approx(310e6, rel=0.02) for f in full)
    assert {f.phase for f in full} == {1} and all(f.device == "data0" for f in got)
    assert all(e.pair == "A" and e.host == "a-snd" for e in link.out)
    assert full[0].line("a-snd") == \
        "competing traffic: 310 Mbit/s not ours on data0 (a-snd)"


def test_a_span_iperf3_does_not_cover_is_not_judged() -> None:
    """Before the first interval and after the last (a run not measuring), bytes on the
    link are not judged: iperf3 has nothing to set against them."""
    link = Link()
    for k in range(1, 6):
        link.second(k, extra=500e6, interval=False)
    assert link.judge.judged == 0 and not link.flagged()


def test_a_span_across_a_knob_change_has_no_phase() -> None:
    link = Link()
    for k in range(1, 5):
        link.second(k, extra=300e6, phase=0)
    for k in range(5, 9):
        link.second(k, extra=300e6, phase=1)
    phases = [f.phase for f in link.flagged()]
    assert None in phases and 0 in phases and 1 in phases


def test_a_span_the_change_began_in_has_no_phase_though_its_intervals_share_one() -> None:
    """Intervals placed by when they came: under load the last one before a change comes
    just before it and none after it for a while, so a span reaching past the change holds
    only the old phase's intervals, while another flow begun after the change is in its
    bytes. The change's own time (its PHASE event) keeps that span out of the old phase."""
    def run(told: bool) -> set[int | None]:
        link = Link()
        for k in range(1, 6):
            link.second(k, phase=0)
        if told:  # phase 0 closed: its change began at T0 + 5.1
            link.judge.feed(Event.of(events.Phase(phase=0, config={}, start=T0,
                                                  end=T0 + 5.1), t=T0 + 5.15, pair="A"))
        link.second(6, extra=300e6, interval=False)  # the next interval comes late
        link.second(7, extra=300e6, interval=False)
        link.judge.feed(Event.of(events.IntervalMeasured(  # before the change, placed late
            run="A-1", phase=0, start=5.0, end=6.9, bytes=int(OURS / 8 * 1.9),
            bits_per_second=OURS, retransmits=0, cwnd_bytes=None, omitted=False,
            straddles=False), t=T0 + 7.02, pair="A"))
        for k in range(8, 11):
            link.second(k, extra=300e6, phase=1)
        return {f.phase for f in link.flagged() if f.start < T0 + 6.5}

    assert 0 in run(told=False)  # what the rule alone did: the flow read as phase 0's
    assert run(told=True) == {None}


def test_another_pair_through_the_same_host_is_ours() -> None:
    """Pair B's receiver is pair A's sender here: B's bytes on that link are abtui's own."""
    pairs = [PAIRS[0], Pair(label="B", sender="b-snd", receiver="a-snd", target="198.18.1.1")]
    out: list[AnyEvent] = []
    judge = TrafficJudge(pairs, out.append)
    total = 0
    for k in range(1, 10):
        t = T0 + k
        total += int(2 * OURS / 8)
        judge.feed(Event.of(events.LinkBytes(run="A-1", device="data0", clock=t,
                                             tx_bytes=total, rx_bytes=0, tx_packets=0,
                                             rx_packets=0), t=t, pair="A", host="a-snd"))
        for pair in ("A", "B"):
            judge.feed(Event.of(events.IntervalMeasured(
                run=f"{pair}-1", phase=0, start=k - 1.0, end=float(k), bytes=int(OURS / 8),
                bits_per_second=OURS, retransmits=0, cwnd_bytes=None, omitted=False,
                straddles=False), t=t + 0.01, pair=pair))
    assert judge.judged >= 6 and not out


def test_one_span_beyond_ours_whose_neighbours_are_not_is_no_flag() -> None:
    """An interval placed a little late (a busy controller) moves bytes from one second to
    the next: one span reads beyond ours, the next below, the spans around them as ours.
    A lone span is not flagged; the same excess held over three seconds is, in each span."""
    link = Link()
    for k in range(1, 20):
        shift = {8: 600e6, 9: -600e6}.get(k, 0.0)
        link.second(k, extra=shift, ours=OURS * (1 + 0.3 * (k % 2)))
    assert link.judge.judged >= 15 and not link.flagged()
    held = Link()
    for k in range(1, 20):
        held.second(k, extra=600e6 if 8 <= k <= 10 else 0.0)
    assert len(held.flagged()) >= 2
