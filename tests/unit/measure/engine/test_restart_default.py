"""A label means the traffic ran under it: a knob not declared live restarts the pairs' runs
at a change (what the old run measures after it began counts nowhere), a live one does not;
a new stretch (`again`) restarts every pair alike, the value kept or changed, and no run is
released before the hosts cleared the TCP metrics cache (said once where a host refuses)."""

from __future__ import annotations

import asyncio
from types import SimpleNamespace
from typing import Any

from abtui.core.events import Event, EventKind
from abtui.core.model import Knob, KnobKind, LinkState, Pair, TestOptions
from abtui.measure.engine.front import Engine
from abtui.measure.run.context import RunSpec
from abtui.remote.control_shell import CommandResult
from abtui.remote.os.freebsd.knobs import FreeBSD
from abtui.remote.os.linux.knobs import Linux
from tests.profiles import pair, profile, sysctl

A, B = pair(1), pair(2)


class Knobs:
    """A knob layer that records what it was asked, changes nothing, refuses "bad"."""

    def __init__(self) -> None:
        self.asked: list[tuple[str, str, list[str]]] = []

    async def apply(self, knob: Knob, value: str, pairs: list[Pair],
                    again: bool = False) -> dict[str, str]:
        from abtui.core.errors import KnobRefused

        if value == "bad":
            raise KnobRefused(f"r: knob {knob.name}={value!r} refused: invalid value")
        self.asked.append((knob.name, value, [p.label for p in pairs]))
        return {}

    async def current(self, knob: Knob, pairs: list[Pair]) -> dict[str, Any]:
        return {}

    async def tunnel_intact(self, label: str, host: str) -> bool | None:
        return None

    async def restore(self) -> list[str]:
        return []


class Run:
    """A pair's run as the scheduler holds it: released, retired, stopped."""

    def __init__(self, pair: Pair, log: list[tuple[str, str]]) -> None:
        self.spec = RunSpec(run_id=f"{pair.label}-x", pair=pair, options=TestOptions(),
                            target=pair.target, seconds=10, port=5201)
        self.label = pair.label
        self.log = log
        self.retired_at: float | None = None
        self.processes = SimpleNamespace(client_argv=["iperf3", "-c", pair.target])

    def release(self) -> None:
        self.log.append(("release", self.label))

    def release_sock(self) -> None:
        return None

    def release_ping(self) -> None:
        pass

    async def read_clock(self) -> None:
        return None

    async def cleanup(self) -> None:
        pass

    def retire(self, since: float) -> None:
        self.retired_at = since

    async def stop(self) -> None:
        self.log.append(("stop", self.label))


class Link:
    """A connected host's control shell: records each command, answers `answer`, and waits
    for `gate` (when given) before it does."""

    def __init__(self, alias: str, log: list[tuple[str, str]],
                 answer: CommandResult | None = None,
                 gate: asyncio.Event | None = None) -> None:
        self.alias, self.log, self.gate = alias, log, gate
        self.answer = answer or CommandResult(0, "", "")
        self.state = LinkState.CONNECTED

    async def run(self, command: str, timeout: float = 10.0,
                  isolate: bool = True) -> CommandResult:
        self.log.append(("clear", self.alias))
        assert "ip tcp_metrics flush all" in command, command
        if self.gate is not None:
            await self.gate.wait()
        return self.answer


def engine(*knobs: Knob, pairs: tuple[Pair, ...] = (A,)) -> Engine:
    prof = profile(*knobs, pairs=pairs)
    e = Engine(prof, parser_factory=lambda _f: None, ping_parser_factory=lambda: None,
               use_journal=False)  # type: ignore[arg-type,return-value]
    e.knobs.use(Knobs())
    return e


def hosts(e: Engine, log: list[tuple[str, str]], **links: Link) -> None:
    """Every host of the profile connected, a Linux host, its link `links[alias]` or one
    that clears."""
    for p in e.profile.pairs:
        for alias in (p.sender, p.receiver):
            e.hosts.links[alias] = links.get(alias) or Link(alias, log)  # type: ignore[assignment]
            e.hosts.dialects[alias] = Linux()


RMEM = sysctl("rmem", "net.ipv4.tcp_rmem", ("4096 131072 6291456", "4096 8192 16384"))
GRO = Knob(name="gro", kind=KnobKind.ETHTOOL_FEATURE, key="gro", values=("on", "off"))


async def test_a_knob_not_declared_live_restarts_the_runs_a_live_one_does_not() -> None:
    e = engine(RMEM, GRO)
    log: list[tuple[str, str]] = []
    hosts(e, log)
    (run,) = await e.runs.release([Run(A, log)])  # type: ignore[list-item]
    await e.set_knob("gro", "off")  # offloads act on open connections: the run goes on
    assert run.retired_at is None and ("stop", "A") not in log
    await e.set_knob("rmem", "4096 8192 16384")  # read when a connection opens: restarted
    assert run.retired_at is not None and ("stop", "A") in log
    assert not [x for x in log if x[0] == "clear"]  # a plain change clears nothing


async def test_a_new_stretch_restarts_kept_pairs_and_clears_before_the_next_release() -> None:
    """`again` with the value each pair has: no change, no new phase, but the run ends
    (retired: its later intervals count nowhere), every host of the pair clears its TCP
    metrics cache after the run stopped, and a run released meanwhile waits for that."""
    e = engine(GRO)
    log: list[tuple[str, str]] = []
    gate = asyncio.Event()
    hosts(e, log, s=Link("s", log, gate=gate))
    e.book.phases["A"].config["gro"] = "on"
    e.book.phases["A"].running(True)
    events: list[Event] = []
    e.subscribe(events.append)
    (run,) = await e.runs.release([Run(A, log)])  # type: ignore[list-item]
    settings = e.book.settings["A"]
    boundary = asyncio.ensure_future(e.set_values("gro", {"A": "on"}, again=True))
    while ("clear", "s") not in log:
        await asyncio.sleep(0)
    nxt = Run(A, log)
    nxt.spec.settings = e.book.settings["A"]
    release = asyncio.ensure_future(e.runs.release([nxt]))  # type: ignore[list-item]
    for _ in range(20):
        await asyncio.sleep(0)
    assert ("release", "A") not in log[2:], log  # held until the hosts cleared
    gate.set()
    await boundary
    released = await release
    assert run.retired_at is not None
    assert log[:2] == [("release", "A"), ("stop", "A")] and {x for x in log[2:4]} == {
        ("clear", "s"), ("clear", "r")}
    assert log[-1] == ("release", "A") and released  # a fresh run, after the clearing
    assert e.book.settings["A"] > settings  # a run prepared before it is prepared again
    assert not [ev for ev in events if ev.kind in (EventKind.KNOB, EventKind.PHASE)]
    assert e.runs.carryover.cleared == 2


async def test_a_new_stretch_restarts_a_live_knob_s_changed_pair_too() -> None:
    e = engine(GRO, pairs=(A, B))
    log: list[tuple[str, str]] = []
    hosts(e, log)
    for label in "AB":
        e.book.phases[label].config["gro"] = "on"
    runs = await e.runs.release([Run(A, log), Run(B, log)])  # type: ignore[list-item]
    await e.set_values("gro", {"A": "off", "B": "on"}, again=True)  # a crossover's boundary
    assert all(r.retired_at is not None for r in runs)
    assert {x for x in log if x[0] == "stop"} == {("stop", "A"), ("stop", "B")}
    assert {x[1] for x in log if x[0] == "clear"} == {"s", "r", "s2", "r2"}
    assert e.knobs.applier.asked == [("gro", "off", ["A"])]  # type: ignore[attr-defined]


async def test_a_host_that_cannot_clear_is_said_once_and_the_stretch_goes_on() -> None:
    e = engine(GRO)
    log: list[tuple[str, str]] = []
    refused = CommandResult(2, "RTNETLINK answers: Operation not permitted\n", "")
    hosts(e, log, r=Link("r", log, answer=refused))
    events: list[Event] = []
    e.subscribe(events.append)
    for _ in range(3):
        await e.set_values("gro", {"A": "on"}, again=True)
    errors = [ev for ev in events if ev.kind is EventKind.ERROR]
    assert len(errors) == 1 and errors[0].host == "r"
    message = str(errors[0].payload.message)  # type: ignore[attr-defined]
    assert "Operation not permitted" in message and "TCP metrics cache" in message
    assert [x for x in log if x == ("clear", "r")] == [("clear", "r")]  # not asked again
    assert [x for x in log if x == ("clear", "s")] == [("clear", "s")] * 3


def test_each_dialect_clears_its_tcp_cache_with_one_quoted_command() -> None:
    assert "ip tcp_metrics flush all" in Linux().carryover_command
    assert "net.inet.tcp.hostcache.purgenow=1" in FreeBSD().carryover_command


def test_a_run_prepared_before_a_restarting_change_counts_nowhere_after_it() -> None:
    """The run's own classification (PhaseBook.classifier): once a restarting change began
    on its pair, whatever it measures straddles, even a run nobody retired; a live knob's
    change leaves it counting in the new phase."""
    from abtui.measure.phase_book import PhaseBook

    book = PhaseBook(profile(RMEM, GRO, pairs=(A, B)))
    a, b = book.settings["A"], book.settings["B"]  # the runs' settings counts when prepared

    def run_a(label: str, t: float, d: float) -> tuple[int, bool]:
        return book.phase_for(label, t, d, a)

    def run_b(label: str, t: float, d: float) -> tuple[int, bool]:
        return book.phase_for(label, t, d, b)

    assert run_a("A", 100.0, 0.5) == (0, False)
    book.phases["A"].running(True)
    book.phases["A"].begin_change(100.2)
    book.phases["A"].commit_change(100.2, 100.3, {"gro": "off"})  # a live knob: goes on
    assert run_a("A", 101.0, 0.5) == (1, False)
    book.settings_changed(["A"])  # a restarting change began on A
    assert run_a("A", 103.0, 0.5) == (1, True)
    assert run_b("B", 103.0, 0.5) == (0, False)  # the other pair's run is not concerned
    # a run prepared after it counts
    assert book.phase_for("A", 103.0, 0.5, book.settings["A"]) == (1, False)


async def test_in_continuous_mode_a_new_stretch_begins_once_its_runs_do() -> None:
    """The boundary returns when the pair's next run is released (the continuous loop's
    job), so an alternation's window after it covers the new run's set-up and ramp."""
    e = engine(GRO)
    log: list[tuple[str, str]] = []
    hosts(e, log)
    e.runs.begin("continuous")
    await e.runs.release([Run(A, log)])  # type: ignore[list-item]
    boundary = asyncio.ensure_future(e.set_values("gro", {"A": "on"}, again=True))
    while ("clear", "r") not in log:
        await asyncio.sleep(0)
    for _ in range(20):
        await asyncio.sleep(0)
    assert not boundary.done()  # no run yet: the stretch has not begun
    nxt = Run(A, log)
    nxt.spec.settings = e.book.settings["A"]
    await e.runs.release([nxt])  # type: ignore[list-item]
    await asyncio.wait_for(boundary, 1)
    assert e.runs.running("A") is nxt  # type: ignore[comparison-overlap]


async def test_a_refused_change_keeps_the_phase_and_restarts_the_run_under_the_same_value(
        ) -> None:
    """The run retired when the change began would count nowhere from then on: the pair's
    phase stays, and its run is restarted, so what follows counts again."""
    import pytest

    from abtui.core.errors import KnobRefused

    bad = Knob(name="rmem", kind=KnobKind.SYSCTL, key="net.ipv4.tcp_rmem",
               values=("4096 131072 6291456", "bad"))
    e = engine(bad)
    log: list[tuple[str, str]] = []
    hosts(e, log)
    e.book.phases["A"].config["rmem"] = bad.values[0]
    e.book.phases["A"].running(True)
    (run,) = await e.runs.release([Run(A, log)])  # type: ignore[list-item]
    with pytest.raises(KnobRefused):
        await e.set_knob("rmem", "bad")
    assert e.book.phases["A"].phase == 0 and e.book.phases["A"].config["rmem"] == bad.values[0]
    assert run.retired_at is not None and ("stop", "A") in log
    # the run that follows counts
    assert e.book.phase_for("A", 1e12, 0.5, e.book.settings["A"]) == (0, False)
