"""The console's state folding and the export fallback (no Textual involved)."""

from __future__ import annotations

from abtui.core.events import (
    Event,
    Facts,
    IntervalMeasured,
    KnobChanged,
    Link,
    Ping,
    Progress,
)
from abtui.core.model import LinkState
from abtui.measure.replay.synthetic import synthetic_events, synthetic_profile
from abtui.reports.throughput import Segment
from abtui.ui.model.phase_rows import significance
from abtui.ui.model.state import ConsoleState


def folded(intervals: int = 20, seed: int = 0) -> ConsoleState:
    profile = synthetic_profile(2)
    state = ConsoleState(profile)
    for e in synthetic_events(profile, intervals=intervals, seed=seed):
        state.apply(e)
    return state


def test_phases_deltas_and_markers() -> None:
    state = folded()
    assert len(state.phases) == 2
    rows = list(state.phases.values())
    assert rows[1].config["tcp_wmem"] == "4096 16384 65536"
    assert rows[0].per_pair["A"].n == 10 and rows[1].per_pair["B"].n == 10
    cells = state.phase_cells(rows[0])
    assert cells[0].endswith("n1") and "%" in cells[1]  # one stretch: one run-level value
    assert list(state.pairs["A"].markers).count(True) == 1
    assert list(state.pairs["A"].markers).index(True) == 10
    bmax, _ = state.scale()
    assert bmax == max(max(p.bps) for p in state.pairs.values())


def test_link_state_worst_host_wins_and_data_brings_it_back() -> None:
    state = folded(intervals=2)
    b = state.pairs["B"]
    assert b.link == LinkState.CONNECTED
    state.apply(Event.of(Link(state="lost", message="x"), host="b-rcv"))
    assert b.link == LinkState.LOST and state.pairs["A"].link == LinkState.CONNECTED
    state.apply(Event.of(Link.from_data({"state": "reconnecting"}), host="b-rcv"))
    assert b.link == LinkState.RECONNECTING
    state.apply(Event.of(IntervalMeasured.from_data({"bits_per_second": 1e9}), pair="B"))
    assert b.link == LinkState.CONNECTED


def test_garbage_events_never_raise() -> None:
    state = folded(intervals=1)
    for e in [Event.of(IntervalMeasured.from_data({"bits_per_second": "x"}), pair="B"),
              Event.of(IntervalMeasured.from_data({}), pair="Z"),
              Event.of(Ping.from_data({"rtt_ms": None}), pair="A"),
              Event.of(KnobChanged.from_data({"knob": "nope", "value": 1, "pairs": ["Q"]})),
              Event.of(Facts.from_data({}), host="unknown"),
              Event.of(Progress(done=1, total=3, eta_s=4))]:
        state.apply(e)
    assert state.pairs["B"].intervals == 1


def test_significance_uses_abtui_stats_on_segments() -> None:
    import abtui.reports.stats
    from abtui.ui.model import phase_rows as st

    def segs(*means: float) -> list[Segment]:
        out = []
        for m in means:
            r = Segment()
            for d in (-1, 0, 1):
                r.add(m + d, 1.0)
            out.append(r)
        return out

    st.LOADED.clear()
    try:
        assert significance(segs(100, 101, 102, 103), segs(110, 111, 112, 113)) == ""  # loading
        st.LOADED["stats"] = abtui.reports.stats
        assert significance(segs(100), segs(110, 111, 112)) == ""  # 1+3: too few runs
        # the verdict's t distribution is scipy's: asked for, '…' until it is there
        assert significance(segs(100, 101, 102), segs(110, 111, 112)) == "…"
        assert st.LOADED.pop("want_scipy") is True
        st.LOADED["scipy"] = True
        assert significance(segs(100, 101, 102), segs(110, 111, 112)) == "*"  # 3+3 judged
        assert significance(segs(100, 111, 102, 113), segs(110, 101, 112, 103)) == "~"
    finally:
        st.LOADED.clear()


def test_flipping_back_and_forth_makes_segments() -> None:
    profile = synthetic_profile(2)
    state = ConsoleState(profile)
    for e in synthetic_events(profile, intervals=4):
        state.apply(e)
    for value in ("4096 16384 4194304", "4096 16384 65536") * 2:
        state.apply(Event.of(KnobChanged.from_data({"knob": "tcp_wmem", "value": value,
                                                "pairs": ["A", "B"]})))
        for lb in "AB":
            state.apply(Event.of(IntervalMeasured.from_data({
                "bits_per_second": 2e9, "start": 0.0, "end": 1.0}), pair=lb))
    rows = list(state.phases.values())
    assert [len(r.segments["A"]) for r in rows] == [3, 3]
    assert [s.n for s in rows[0].segments["A"]] == [2, 1, 1]


def test_straddling_intervals_are_shown_but_counted_in_no_phase() -> None:
    profile = synthetic_profile(1)
    state = ConsoleState(profile)
    label = profile.pairs[0].label

    def interval(bps: float, straddles: bool = False) -> Event:
        return Event.of(IntervalMeasured.from_data({
            "run": "A-1", "phase": 0, "start": 0.0, "end": 1.0, "bytes": 1,
            "bits_per_second": bps, "straddles": straddles}), pair=label)

    for _ in range(3):
        state.apply(interval(8e9))
    state.apply(interval(5e9, straddles=True))  # half old setting, half new
    rows = list(state.phases.values())
    assert rows[0].per_pair[label].n == 3 and rows[0].per_pair[label].mean == 8e9
    assert list(state.pairs[label].bps)[-1] == 5e9  # still drawn in the sparkline


def test_a_flipped_phases_late_ping_replies_stay_out_of_the_new_phases_rtt() -> None:
    """Ping is gathered on the host, a second at a time: the replies of the phase a flip
    ended come after it. They are drawn, but the pane's RTT of the phase is the new one's."""
    profile = synthetic_profile(1)
    state = ConsoleState(profile)
    label = profile.pairs[0].label
    ps = state.pairs[label]

    def ping(phase: int, rtt: float) -> Event:
        return Event.of(Ping(run="A-1", phase=phase, seq=1, rtt_ms=rtt), pair=label)

    def interval(phase: int) -> Event:
        return Event.of(IntervalMeasured.from_data({
            "run": "A-1", "phase": phase, "start": 0.0, "end": 1.0, "bytes": 1,
            "bits_per_second": 1e9}), pair=label)

    state.apply(interval(0))
    state.apply(ping(0, 1.0))
    assert (ps.rtt_phase.n, ps.rtt_phase.mean) == (1, 1.0)
    state.apply(Event.of(KnobChanged.from_data({"knob": "tcp_wmem", "value": "x",
                                                "pairs": [label]})))
    state.apply(ping(0, 1.0))  # late: the phase the flip ended
    state.apply(ping(1, 5.0))  # the new phase's, before its first interval
    state.apply(interval(1))
    state.apply(ping(0, 1.0))  # later still
    state.apply(ping(1, 7.0))
    assert (ps.rtt_phase.n, ps.rtt_phase.mean) == (2, 6.0)
    assert list(ps.rtt)[-5:] == [1.0, 1.0, 5.0, 1.0, 7.0]  # every reply drawn


def test_competing_traffic_is_said_when_it_begins_and_counters_are_routine() -> None:
    from abtui.core.events import CompetingTraffic, HostStateRead, LinkBytes
    from abtui.ui.model.state import COMPETING_QUIET_S

    state = ConsoleState(synthetic_profile(2))
    t = 1_780_000_000.0
    assert state.apply(Event.of(LinkBytes(run="A-1", device="data0", clock=t, tx_bytes=1,
                                           rx_bytes=2, tx_packets=1, rx_packets=1), t,
                                pair="A", host="a-snd")) is None
    assert not state.take_dirty()  # nothing for a pane to repaint: they show no counters

    def span(at: float) -> str | None:
        return state.apply(Event.of(CompetingTraffic(
            run="A-1", phase=0, device="data0", start=at - 2, end=at, link_bps=7.1e8,
            iperf_bps=4e8, excess_bps=3.1e8), at, pair="A", host="a-snd"))

    assert span(t) == "pair A: competing traffic: 310 Mbit/s not ours on data0 (a-snd)"
    assert span(t + 1) is None and span(t + 2) is None  # it goes on: said once
    assert span(t + 2 + COMPETING_QUIET_S + 1) is not None  # it came back
    line = state.apply(Event.of(HostStateRead(moment="start", device="data0",
                                              items={"@dev mtu": "1500"},
                                              unavailable={"cpu governor": "no cpufreq"}),
                                t, host="a-snd"))
    assert line == "a-snd: host state at start: 1 settings read, 1 not readable"
