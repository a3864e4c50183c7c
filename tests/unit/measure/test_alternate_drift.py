"""A setting changed out of band during an alternation (abtui.measure.alternate): every
stretch that overlaps the time it changed in is left out, with the reason in the verdict's
line, even one closed already; `drive` reads back before each stretch closes; and the session
reader puts what was measured in that time in no phase (abtui.sessions.session)."""

from __future__ import annotations

from abtui.core.events import Drift, Event, IntervalMeasured
from abtui.measure.alternate.design import Alternation, schedule
from abtui.measure.alternate.drive import drive
from abtui.measure.alternate.stretches import Stretches
from abtui.measure.alternate.verdicts import Verdicts
from abtui.reports.sequential import Family
from abtui.sessions.records import NO_PHASE
from abtui.sessions.session import Session

BIG, SMALL = "4096 131072 6291456", "4096 8192 16384"


def interval(pair: str, t: float, bps: float = 1e9, phase: int = 0) -> Event:
    """A one-second interval that arrived at `t` (the controller's clock)."""
    return Event.of(IntervalMeasured.from_data({
        "run": "r", "phase": phase, "bits_per_second": bps, "start": 0.0, "end": 1.0,
        "omitted": False, "straddles": False}), t, pair=pair)


def drifted(since: float, until: float, pairs: list[str]) -> Event:
    return Event.of(Drift(knob="rmem", value="7", expected=SMALL, pairs=pairs,
                          action="left as found", key="net.ipv4.tcp_rmem", since=since,
                          until=until), until, host="b")


def _stretches() -> Stretches:
    return Stretches("rmem", (BIG, SMALL), ("A", "B"), min_seconds=0.0)


def _run(s: Stretches, index: int, value: str, t0: float) -> None:
    """Stretch `index` from `t0`: three intervals on each pair."""
    s(interval("A", t0))
    s.begin(index, value)
    for k in range(2, 5):
        s(interval("A", t0 + k))
        s(interval("B", t0 + k))


def test_a_stretch_the_change_falls_in_is_left_out_even_once_closed():
    s = _stretches()
    _run(s, 0, BIG, 100)
    _run(s, 1, SMALL, 110)
    _run(s, 2, SMALL, 120)
    s.close(full=True)
    assert set(s.taken["A"]) == {0, 1, 2}
    s(drifted(112.0, 113.0, ["A"]))  # between two reads, within stretch 1
    assert set(s.taken["A"]) == {0, 2} and s.drifted["A"] == {1}
    assert s.samples["A"][SMALL] == [s.taken["A"][2]]  # its sample withdrawn
    assert set(s.taken["B"]) == {0, 1, 2} and s.drifted["B"] == set()  # other pairs kept


def test_the_stretch_in_force_is_left_out_when_it_closes():
    s = _stretches()
    _run(s, 0, BIG, 100)
    s(drifted(101.5, 103.5, ["A", "B"]))
    s.close(full=True)
    assert s.taken == {"A": {}, "B": {}} and s.drifted == {"A": {0}, "B": {0}}
    assert s.lost == {"A": set(), "B": set()}  # left out for the drift, not a lost link


def test_the_verdicts_line_says_why_stretches_were_left_out():
    s = Stretches("rmem", (BIG, SMALL), ("A",), min_seconds=0.0)
    order = schedule((BIG, SMALL), 3, 1)
    v = Verdicts(s, order, 1, Family(1, 3, arrangements=6), min_effect=1.0)
    for i in range(8):
        s(interval("A", 100 + 10 * i))
        s.begin(i, order[i])
        s(interval("A", 100 + 10 * i + 3, 1e9 if order[i] == BIG else 5e8))
    s.close(full=True)
    s(drifted(131.0, 132.0, ["A"]))
    (line,) = v.summary()
    assert "1 stretch left out: a setting was changed out of band (drift)" in line, line


async def test_drive_reads_back_before_each_stretch_closes():
    s = Stretches("rmem", (BIG, SMALL), ("A",), min_seconds=0.0)
    order = schedule((BIG, SMALL), 2, 1)
    v = Verdicts(s, order, 1, Family(1, 2, arrangements=6), min_effect=1.0)
    seen: list[tuple[str, int]] = []

    async def check() -> None:
        seen.append(("read", s.closed))

    s.begin(0, v.values_at(0))
    await drive(lambda _k, _v: seen.append(("flip", s.closed)),
                Alternation("rmem", (BIG, SMALL), 0.0, 4), v, lambda _l: None, check=check)
    reads = [n for what, n in seen if what == "read"]
    assert reads == list(range(len(reads))) and len(reads) == s.closed  # each before its close
    assert all(n >= 1 for what, n in seen if what == "flip")


def test_the_session_puts_what_ran_in_the_window_in_no_phase():
    events = [interval("A", t) for t in (100.0, 101.0, 102.0, 103.0)] + \
        [interval("B", t) for t in (101.0, 102.5)] + [drifted(101.5, 102.6, ["A"])]
    session = Session.from_events(events)
    phases = list(session.intervals["A"]["phase"])
    assert phases[:2] != [NO_PHASE, NO_PHASE] and phases[2:] == [NO_PHASE, NO_PHASE]
    assert NO_PHASE not in list(session.intervals["B"]["phase"])
    assert [(d["host"], d["key"]) for d in session.drifts] == [("b", "net.ipv4.tcp_rmem")]


def test_the_run_line_names_the_hosts_value_after_a_drift():
    """`abtui run`'s line for a run through a drift gives each value its figure: abtui's before,
    the host's after (never the host's traffic under abtui's value)."""
    from abtui.core.events import Config, RunEnd, RunStart
    from abtui.measure.headless import RunRates

    rates = RunRates(["rmem"])
    rates(Event.of(Config(config={"rmem": SMALL}), 90.0, pair="A"))
    rates(Event.of(RunStart.from_data({"run": "r", "config": {"rmem": SMALL}, "phase": 0,
                                       "options": {}}), 99.0, pair="A"))
    rates(interval("A", 101.0, 1e9, phase=0))
    rates(drifted(101.5, 102.5, ["A"]))
    rates(interval("A", 104.0, 3e9, phase=1))
    got = rates(Event.of(RunEnd.from_data({"run": "r", "status": "ok"}), 105.0, pair="A"))
    assert got is not None
    assert [what for what, _r in got.parts] == [f"TX, rmem={SMALL}", "TX, rmem=7"]


def test_after_the_alternated_knob_is_taken_over_no_later_stretch_counts():
    """Someone else set the alternated knob itself: the stretches after the drift run their
    value, not the schedule's, and are left out too (another knob's drift leaves them in)."""
    s = _stretches()
    _run(s, 0, BIG, 100)
    s(Event.of(Drift(knob="rmem", value="7", expected=BIG, pairs=["A"], action="left",
                     since=103.5, until=104.5), 104.5, host="b"))
    _run(s, 1, BIG, 110)
    _run(s, 2, SMALL, 120)
    s.close(full=True)
    assert s.taken["A"] == {} and s.drifted["A"] == {0, 1, 2}
    assert set(s.taken["B"]) == {0, 1, 2}
    other = _stretches()
    _run(other, 0, BIG, 100)
    other(Event.of(Drift(knob="wmem", value="7", expected="1", pairs=["A"], action="left",
                         since=103.5, until=104.5), 104.5, host="a"))
    _run(other, 1, BIG, 110)
    other.close(full=True)
    assert set(other.taken["A"]) == {1} and other.drifted["A"] == {0}
