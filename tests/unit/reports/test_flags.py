"""Flags beside the numbers (abtui.reports.flags): a phase whose iperf3 saturated its core is
harness-bound, one where a core spent ≥ 95 % of its time in softirq is softirq-bound on that
core (the machine's core on namespace hosts, said so), one with competing traffic says how
much; the cells carry ⚠ and so does every Δ and verdict made of them."""

from __future__ import annotations

from collections.abc import Iterator

from abtui.core import events
from abtui.core.events import Event, EventKind
from abtui.reports import compare, flags, report
from abtui.sessions.session import Session
from tests import synth


def _cpu_row(soft: float) -> list[int]:
    """One CPU's ticks over a sample: `soft` of its time in softirq, the rest idle."""
    return [0, 0, 0, int(soft * 100), int((1 - soft) * 100), 0]


def _with(evs: Iterator[Event], cpu_shared: bool = False, soft: tuple[float, ...] = (),
          iperf_cpu: float | None = None, competing: float | None = None) -> list[Event]:
    """A plan session of two configurations (runs 1, 2: k=1; 3, 4: k=2), with, during k=2:
    pair A's receiver's core 1 at `soft` softirq per sample (one an interval, in turn), A's
    sender iperf3 at `iperf_cpu` %, `competing` bits/s not ours on A's link."""
    out = []
    for e in evs:
        out.append(e)
        if e.kind is EventKind.SESSION_START and cpu_shared:  # a namespace host's facts
            out.append(Event.of(events.Facts(facts={"alias": "lab-a-rcv", "os": "Linux",
                                                    "cpu_scope": "shared"}), e.t,
                                host="lab-a-rcv"))
        if e.kind is EventKind.INTERVAL and e.pair == "A" and \
                e.payload.run in (3, 4):  # type: ignore[attr-defined]
            p = e.payload
            for s in soft[int(p.end) % len(soft):][:1] if soft else ():  # type: ignore[attr-defined]
                out.append(Event.of(events.Cpu(
                    run=p.run, role="receiver", phase=p.phase,  # type: ignore[attr-defined]
                    straddles=False, total=_cpu_row(s / 2), cpus=[_cpu_row(0.0), _cpu_row(s)]),
                    e.t, pair="A", host="lab-a-rcv"))
            if competing is not None:
                out.append(Event.of(events.CompetingTraffic(
                    run=p.run, phase=p.phase, device="data0",  # type: ignore[attr-defined]
                    start=e.t - 2, end=e.t, link_bps=1.3e9 + competing, iperf_bps=1.3e9,
                    excess_bps=competing), e.t, pair="A", host="lab-a-snd"))
        if e.kind is EventKind.RUN_END and e.pair == "A" and iperf_cpu is not None and \
                e.payload.run in (3, 4):  # type: ignore[attr-defined]
            p = e.payload
            out[-1] = Event.of(events.RunEnd(
                run=p.run, status="ok", message="", ping=None,  # type: ignore[attr-defined]
                summary={**p.summary, "sender_cpu": {  # type: ignore[attr-defined]
                    "total": iperf_cpu, "user": 1.0, "system": iperf_cpu - 1}}), e.t, pair="A")
    return out


def _plan() -> Iterator[Event]:
    return synth.plan([{"k": "1"}, {"k": "2"}], {"A": [[5e9, 5.1e9], [5.2e9, 5.0e9]],
                                                 "B": [[6e9, 6.1e9], [6.2e9, 6.0e9]]},
                      seconds=4)


def _phases(session: Session, pair: str, value: str) -> list[int]:
    return [ph.index for ph in session.phases_of(pair) if ph.config.get("k") == value]


def test_harness_bound_at_95_percent_of_a_core_only() -> None:
    s = Session.from_events(_with(_plan(), iperf_cpu=97.0))
    got = flags.of(s, "A", _phases(s, "A", "2"))
    assert got.words == ["harness-bound"]
    assert got.lines == ["harness-bound (sender iperf3 97 % of a core)"]
    assert not flags.of(s, "A", _phases(s, "A", "1"))
    assert not flags.of(s, "B", _phases(s, "B", "2"))
    busy = Session.from_events(_with(_plan(), iperf_cpu=90.0))
    assert not flags.of(busy, "A", _phases(busy, "A", "2"))


def test_softirq_bound_names_the_core_and_the_machine_on_namespace_hosts() -> None:
    s = Session.from_events(_with(_plan(), soft=(0.97, 0.99, 0.96)))
    lines = flags.of(s, "A", _phases(s, "A", "2")).lines
    assert len(lines) == 1 and lines[0].startswith("softirq-bound on rcv core 1 (≥ 95 %")
    assert "machine" not in lines[0]
    shared = Session.from_events(_with(_plan(), cpu_shared=True, soft=(0.97, 0.99, 0.96)))
    (line,) = flags.of(shared, "A", _phases(shared, "A", "2")).lines
    assert "softirq-bound on rcv core 1 (the machine's: namespace hosts share its CPUs)" in line
    # busy but under the mark in most samples: no flag
    low = Session.from_events(_with(_plan(), soft=(0.97, 0.80, 0.90)))
    assert not flags.of(low, "A", _phases(low, "A", "2"))


def test_competing_traffic_and_the_marks_in_the_tables() -> None:
    s = Session.from_events(_with(_plan(), competing=310e6))
    got = flags.of(s, "A", _phases(s, "A", "2"))
    assert got.words == ["competing traffic"]
    assert got.lines[0].startswith("competing traffic: 310 Mbit/s not ours on data0 (")
    text = report.markdown(s, chart=False)
    table = text.split("## Throughput per configuration")[1].split("##")[0]
    row_2 = next(line for line in table.splitlines() if line.startswith("| k=2"))
    row_1 = next(line for line in table.splitlines() if line.startswith("| k=1"))
    assert row_2.count("⚠ competing traffic") == 1  # A's cell
    assert "⚠ on competing traffic" in row_2  # B vs A's Δ and its verdict
    assert "⚠" not in row_1
    assert "## Flagged measurements" in text
    clean = Session.from_events(_with(_plan()))
    both = compare.markdown(clean, s)
    row = next(line for line in both.splitlines() if line.startswith("| A | k=2"))
    assert "⚠ competing traffic" in row and "⚠ on competing traffic" in row
    assert compare.flagged(clean, s) and compare.flagged(clean, clean) == []
    assert compare.to_json(clean, s)["rows"][1]["flags"]["right"] == got.lines


def test_an_alternations_verdicts_say_the_flagged_stretches_they_stand_on() -> None:
    evs = _with(_plan(), competing=310e6)
    mark = Event.of(events.Mark(text="alternation done", verdicts=[{"pair": "A"}]),
                    evs[-1].t, pair=None)
    s = Session.from_events([*evs[:-1], mark, evs[-1]])
    note = flags.verdict_note(s)
    assert note and "pair A: competing traffic in 2 of 4 stretches" in note[0]
    assert "pair B" not in note[0]
    assert note[0] in report.markdown(s, chart=False)
    plain = Session.from_events([*_with(_plan())[:-1], mark])
    assert flags.verdict_note(plain) == []  # nothing flagged: nothing said
    assert flags.verdict_note(Session.from_events(evs)) == []  # no verdict recorded
