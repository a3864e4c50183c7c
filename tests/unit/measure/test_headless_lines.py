"""`abtui run --headless`'s progress lines, one per kind worth a line, read from the typed
payloads (the same lines as when they were read from the records)."""

from __future__ import annotations

from abtui.core import events, numbers
from abtui.core.events import Error, Event, KnobError, Link, Mark, Restore
from abtui.measure.headless import LinkNews, RunRates, describe


def test_each_kind_worth_a_line_says_it() -> None:
    lines = {
        "error": Event.of(Error(message="iperf3 died"), host="a-snd"),
        "refused": Event.of(KnobError(knob="cc", value="x", message="no such algorithm"), pair="A"),
        "lost": Event.of(Link(state="lost", message="EOF"), host="a-rcv"),
        "back": Event.of(Link(state="connected", message=""), host="a-rcv"),
        "knob": Event.of(events.KnobChanged(knob="cc", value="bbr", pairs=["A", "B"],
                                            hosts=["a", "b"])),
        "restore": Event.of(Restore(knob="mtu", value="1500", ok=False, message="device gone"),
                            host="b"),
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
    quiet = [Event.of(Link(state="connecting", message=""), host="a"),
             Event.of(Restore(knob="mtu", value="1500", ok=True, message=""), host="a"),
             Event.of(Mark(text="x"))]
    assert [describe(e) for e in quiet] == [None, None, None]


def test_a_run_s_figure_is_its_own_intervals() -> None:
    rates = RunRates()
    for run, bps in (("A-1", 8e9), ("A-2", 2e9)):
        rates(Event.of(events.IntervalMeasured(
            run=run, phase=0, start=0.0, end=1.0, bytes=int(bps / 8), bits_per_second=bps,
            retransmits=0, cwnd_bytes=None, omitted=False, straddles=False), pair="A"))
    end = Event.of(events.RunEnd(run="A-1", status="ok", summary=None, ping=None,
                                 message=""), pair="A")
    got = rates(end)
    assert got is not None and got.rate == 8e9
    assert rates(end) is None  # its figure was taken


OLD, NEW = "4096 87380 6291456", "4096 131072 6291456"


def _interval(run: str, phase: int, t: float, bps: float, pair: str = "B",
              straddles: bool = False) -> Event:
    return Event.of(events.IntervalMeasured(
        run=run, phase=phase, start=t, end=t + 1.0, bytes=int(bps / 8), bits_per_second=bps,
        retransmits=0, cwnd_bytes=None, omitted=False, straddles=straddles), pair=pair)


def _start(run: str, config: dict[str, str], pair: str = "B", phase: int = 0,
           reverse: bool = False) -> Event:
    return Event.of(events.RunStart(run=run, config=config, phase=phase, host_clock=None,
                                    skew_ms=None, options={"reverse": reverse}), pair=pair)


def _lines(rates: RunRates, evs: list[Event]) -> list[str]:
    return [line for e in evs if (line := describe(e, rates(e)))]


def test_a_run_stopped_by_a_flip_names_the_value_it_ran_at() -> None:
    """Continuous mode: tcp_rmem flipped on A and B ends B's run (a setting only new
    connections see); the run's line comes after the flip's, and names the value the run
    ran at, never the one just set."""
    config = {"tcp_rmem": OLD, "tso": "on"}
    evs = [Event.of(events.Config(config=dict(config)), pair="B"), _start("B-3", config),
           *(_interval("B-3", 0, t, 0.77e9) for t in range(4)),
           Event.of(events.KnobChanged(knob="tcp_rmem", value=NEW, pairs=["A", "B"],
                                       hosts=["a-rcv", "b-rcv"])),
           _interval("B-3", 0, 4.0, 0.77e9, straddles=True),
           Event.of(events.Phase(phase=0, config=dict(config), start=0.0, end=5.0),
                    pair="B"),
           Event.of(events.RunEnd(run="B-3", status="stopped", summary=None, ping=None,
                                  message=""), pair="B")]
    lines = _lines(RunRates(), evs)
    assert lines == [f"tcp_rmem = {NEW} on A, B",
                     f"B: run B-3 (TX, tcp_rmem={OLD}) stopped, 770 Mbit/s"]


def test_a_run_through_a_flip_gives_each_value_its_figure() -> None:
    """tso flipped during a run that goes on (no restart): its intervals before and after
    are two configurations, each said with its own figure (the straddling one in neither),
    as well as the run's own."""
    evs = [_start("A-1", {"tso": "on"}, pair="A"),
           *(_interval("A-1", 0, t, 9e9, pair="A") for t in range(3)),
           Event.of(events.KnobChanged(knob="tso", value="off", pairs=["A"], hosts=["a"])),
           _interval("A-1", 0, 3.0, 6e9, pair="A", straddles=True),
           Event.of(events.Phase(phase=0, config={"tso": "on"}, start=0.0, end=3.5),
                    pair="A"),
           *(_interval("A-1", 1, t, 4e9, pair="A") for t in range(4, 7)),
           Event.of(events.RunEnd(run="A-1", status="ok", summary=None, ping=None,
                                  message=""), pair="A")]
    whole = numbers.rate((3 * 9e9 + 6e9 + 3 * 4e9) / 7)
    assert _lines(RunRates(), evs)[-1] == \
        f"A: run A-1 ok, {whole}: (TX, tso=on) 9.00 Gbit/s; (TX, tso=off) 4.00 Gbit/s"


def test_plan_progress_says_the_direction_and_the_values_of_its_step() -> None:
    """A plan step of tcp_rmem × direction: each run's line and the step's progress line say
    RX (-R) for a reverse run (the receiver sends) and the matrix's values."""
    config = {"tcp_rmem": NEW, "direction": "rx"}
    evs = [Event.of(events.Progress(done=0, total=4, eta_s=None))]
    for pair in "AB":
        evs += [_start(f"{pair}-2", config, pair=pair, phase=1, reverse=True),
                *(_interval(f"{pair}-2", 1, t, 2e9, pair=pair) for t in range(3)),
                Event.of(events.RunEnd(run=f"{pair}-2", status="ok", summary=None, ping=None,
                                       message=""), pair=pair)]
    evs.append(Event.of(events.Progress(done=1, total=4, eta_s=30.0)))
    assert _lines(RunRates(["tcp_rmem"]), evs) == [
        "plan: 0/4 steps done",
        f"A: run A-2 (RX (-R), tcp_rmem={NEW}) ok, 2.00 Gbit/s",
        f"B: run B-2 (RX (-R), tcp_rmem={NEW}) ok, 2.00 Gbit/s",
        f"plan: 1/4 steps done (RX (-R), tcp_rmem={NEW}), about 30 s left"]


def test_a_run_whose_every_interval_straddled_a_flip_says_so() -> None:
    """Its figure counts in no configuration: the line names where it started and says its
    figure lies across a flip."""
    evs = [_start("A-4", {"tso": "on"}, pair="A"),
           Event.of(events.KnobChanged(knob="tso", value="off", pairs=["A"], hosts=["a"])),
           _interval("A-4", 0, 0.0, 4e9, pair="A", straddles=True),
           Event.of(events.RunEnd(run="A-4", status="stopped", summary=None, ping=None,
                                  message=""), pair="A")]
    assert _lines(RunRates(), evs)[-1] == \
        "A: run A-4 (TX, tso=on) stopped, 4.00 Gbit/s across a flip (counted in no " \
        "configuration)"


def test_a_host_s_loss_is_said_once_and_not_at_all_while_it_boots_a_build() -> None:
    """Each failed reconnect attempt is a LINK lost event; the reader wants the first. A host
    that boots into another build loses its link on purpose: its switch lines say it."""
    def link(state: str, host: str = "a-snd") -> Event:
        return Event.of(events.Link(state=state, message="refused" if state == "lost" else ""),
                        host=host)

    def switch(stage: str) -> Event:
        return Event.of(events.BuildSwitch(knob="kernel", value="after", method="kexec",
                                           stage=stage), host="a-snd")

    news = LinkNews()
    said = [e for e in (link("lost"), link("reconnecting"), link("lost"), link("lost", "b"),
                        link("connected"), link("lost"),
                        switch("booting"), link("lost"), link("lost"), link("connected"),
                        switch("up"), link("lost"))
            if news(e) and describe(e)]
    assert [describe(e) for e in said] == [
        "a-snd: link lost: refused", "b: link lost: refused", "a-snd: link connected",
        "a-snd: link lost: refused", "a-snd: booting after (kexec)…", "a-snd: after up",
        "a-snd: link lost: refused"]
