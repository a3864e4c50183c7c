"""`abtui run --headless`'s progress lines, one per kind worth a line, read from the typed
payloads (the same lines as when they were read from the records)."""

from __future__ import annotations

from abtui.core import events
from abtui.core.events import Event, EventKind
from abtui.measure.headless import RunRates, describe


def test_each_kind_worth_a_line_says_it() -> None:
    lines = {
        "error": Event(EventKind.ERROR, host="a-snd", data={"message": "iperf3 died"}),
        "refused": Event(EventKind.KNOB_ERROR, pair="A", data={
            "knob": "cc", "value": "x", "message": "no such algorithm"}),
        "lost": Event(EventKind.LINK, host="a-rcv", data={"state": "lost", "message": "EOF"}),
        "back": Event(EventKind.LINK, host="a-rcv", data={"state": "connected", "message": ""}),
        "knob": Event.of(events.KnobChanged(knob="cc", value="bbr", pairs=["A", "B"],
                                            hosts=["a", "b"])),
        "restore": Event(EventKind.RESTORE, host="b", data={
            "knob": "mtu", "value": "1500", "ok": False, "message": "device gone"}),
        "drift": Event.of(events.Drift(knob="cc", value="cubic", expected="bbr", pairs=["A"],
                                       action="re-applied"), host="a"),
    }
    assert {k: describe(e) for k, e in lines.items()} == {
        "error": "a-snd: error: iperf3 died",
        "refused": "A: error: no such algorithm",
        "lost": "a-rcv: link lost: EOF",
        "back": "a-rcv: link connected",
        "knob": "cc = bbr on A, B",
        "restore": "b: could not restore mtu: device gone",
        "drift": "cc on a is cubic after reconnect, was set to bbr: re-applied",
    }


def test_routine_events_and_what_went_well_say_nothing() -> None:
    quiet = [Event(EventKind.LINK, host="a", data={"state": "connecting", "message": ""}),
             Event(EventKind.RESTORE, host="a", data={"knob": "mtu", "value": "1500",
                                                       "ok": True, "message": ""}),
             Event(EventKind.MARK, data={"text": "x"})]
    assert [describe(e) for e in quiet] == [None, None, None]


def test_a_run_s_figure_is_its_own_intervals() -> None:
    rates = RunRates()
    for run, bps in (("A-1", 8e9), ("A-2", 2e9)):
        rates(Event.of(events.IntervalMeasured(
            run=run, phase=0, start=0.0, end=1.0, bytes=int(bps / 8), bits_per_second=bps,
            retransmits=0, cwnd_bytes=None, omitted=False, straddles=False), pair="A"))
    end = Event.of(events.RunEnd(run="A-1", status="ok", summary=None, ping=None,
                                 message=""), pair="A")
    assert rates(end) == 8e9
    assert rates(end) is None  # its figure was taken
