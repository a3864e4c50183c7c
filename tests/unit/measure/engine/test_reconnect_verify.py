"""A reconnected host is read again before its pairs measure (abtui.measure.engine.verify),
on a fake knob layer: what differs ends the phase, is recorded, and is re-applied (a value abtui
set) or relabelled (the host's own value, or a refused re-apply). The lab test
(tests/lab/test_reconnect_reread.py) does the same on real hosts."""

from __future__ import annotations

from types import SimpleNamespace
from typing import Any

from abtui.core.configuration import pair_value, role_value
from abtui.core.errors import KnobRefused
from abtui.core.events import Event, EventKind
from abtui.core.model import Knob, KnobKind, LinkState, Pair, Profile, Scope
from abtui.measure.engine.front import Engine
from tests.profiles import profile, sysctl

RMEM = sysctl("rmem", "net.ipv4.tcp_rmem", ("4096 131072 16384", "4096 131072 6291456"),
              scope=Scope.BOTH)


class HostValues:
    """A knob layer over a dict: host -> value, per knob; `refuse` makes writes fail."""

    def __init__(self, values: dict[str, str], engine: Engine) -> None:
        self.values = values
        self.engine = engine
        self.refuse = False
        self.applied: list[tuple[str, list[str]]] = []
        self.drop_while_reading: str | None = None

    async def current(self, knob: Knob, pairs: list[Pair]) -> dict[str, dict[str, str]]:
        if self.drop_while_reading:
            self.engine.hosts.links[self.drop_while_reading].state = LinkState.LOST
        return {p.label: {str(r): self.values[p.host(r)] for r in knob.scope.roles}
                for p in pairs}

    async def apply(self, knob: Knob, value: str, pairs: list[Pair]) -> dict[str, str]:
        if self.refuse:
            raise KnobRefused(f"r: knob {knob.name}={value!r} refused: read-only file system")
        for p in pairs:
            for r in knob.scope.roles:
                self.values[p.host(r)] = value
        self.applied.append((value, [p.label for p in pairs]))
        return {}

    async def tunnel_intact(self, label: str, host: str) -> bool | None:
        return None

    async def restore(self) -> list[str]:
        return []


def engine_on(values: dict[str, str]) -> tuple[Engine, HostValues, list[Event]]:
    prof = profile(RMEM, pairs=2)
    engine = Engine(prof, parser_factory=lambda _f: None,  # type: ignore[arg-type,return-value]
                    use_journal=False)
    fake = HostValues(values, engine)
    engine.knobs.use(fake)
    engine.hosts.links = {a: SimpleNamespace(alias=a, state=LinkState.CONNECTED,  # type: ignore[misc]
                                       boot_id="boot-1") for a in values}
    for label in ("A", "B"):
        pair = prof.pair(label)
        engine.book.phases[label].config = {"rmem": pair_value(
            {"sender": values[pair.sender], "receiver": values[pair.receiver]})}
        engine.book.phases[label].running(True)  # as if a run had gone on
    seen: list[Event] = []
    engine.subscribe(seen.append)
    return engine, fake, seen


async def reconnect(engine: Engine, alias: str, change: dict[str, str] | None = None,
                    fake: HostValues | None = None, boot: str | None = None) -> None:
    link: Any = engine.hosts.links[alias]
    link.state = LinkState.LOST
    engine._on_link_state(link, LinkState.LOST, "connection closed")
    if change and fake:
        fake.values.update(change)
    link.boot_id = boot or link.boot_id
    link.state = LinkState.CONNECTED
    engine._on_link_state(link, LinkState.CONNECTED, "reconnected")
    await engine.wait()


def of(seen: list[Event], kind: EventKind) -> list[Event]:
    return [e for e in seen if e.kind is kind]


async def test_a_value_abtui_set_is_re_applied_and_the_phase_ends():
    low, high = RMEM.values
    engine, fake, seen = engine_on({"s": high, "r": high, "s2": high, "r2": high})
    await engine.set_knob("rmem", low, ["A"])
    engine.book.phases["A"].running(True)
    seen.clear()
    await reconnect(engine, "r", {"r": "4096 87380 6291456"}, fake)
    (drift,) = of(seen, EventKind.DRIFT)
    assert drift.host == "r" and drift.payload.action == "re-applied"
    assert drift.payload.value == "4096 87380 6291456" and drift.payload.expected == low
    assert drift.payload.line("r") == ("rmem on r is 4096 87380 6291456 after reconnect, "
                                       f"was set to {low}: re-applied")
    assert fake.applied[-1] == (low, ["A"]) and fake.values["r"] == low
    (phase,) = of(seen, EventKind.PHASE)
    assert phase.pair == "A" and phase.payload.config == {"rmem": low}
    assert engine.book.phases["A"].phase == 2 and engine.book.phases["A"].config == {"rmem": low}
    assert engine.book.phases["A"].pending is None and not engine.gate
    assert engine.book.phases["B"].phase == 0  # the other pair's hosts did not drop


async def test_the_host_s_own_value_is_relabelled_for_its_role_only():
    low, high = RMEM.values
    engine, fake, seen = engine_on({"s": low, "r": high, "s2": high, "r2": high})
    assert engine.book.phases["A"].config == {"rmem": f"{low}/{high}"}
    await reconnect(engine, "r", {"r": "4096 87380 6291456"}, fake, boot="boot-2")
    (drift,) = of(seen, EventKind.DRIFT)
    assert drift.payload.action == "relabelled" and drift.payload.expected == high
    assert drift.payload.message.startswith("the host rebooted; abtui never set it")
    assert not fake.applied  # abtui does not overrule what it never set
    assert engine.book.phases["A"].config == {"rmem": f"{low}/4096 87380 6291456"}
    assert [e.payload.config for e in of(seen, EventKind.PHASE)] == [{"rmem": f"{low}/{high}"}]


async def test_a_refused_re_apply_is_relabelled_with_the_reason():
    low, high = RMEM.values
    engine, fake, seen = engine_on({"s": high, "r": high, "s2": high, "r2": high})
    await engine.set_knob("rmem", low)
    fake.refuse = True
    await reconnect(engine, "s2", {"s2": high}, fake)
    (drift,) = of(seen, EventKind.DRIFT)
    assert drift.payload.action == "relabelled" and drift.payload.pairs == ["B"]
    assert "re-apply refused" in drift.payload.message and "read-only" in drift.payload.message
    assert engine.book.phases["B"].config == {"rmem": f"{high}/{low}"}
    assert engine.book.phases["A"].config == {"rmem": low}


async def test_nothing_changed_the_phase_goes_on_and_nothing_counted_meanwhile():
    high = RMEM.values[1]
    engine, _fake, seen = engine_on({"s": high, "r": high, "s2": high, "r2": high})
    link: Any = engine.hosts.links["r"]
    link.state = LinkState.LOST
    engine._on_link_state(link, LinkState.LOST, "")
    held = engine.gate.get("r")
    assert held is not None
    lost = held.since
    # an interval arriving while the host is unverified is counted in no phase
    assert engine.book.phases["A"].classify(lost + 1.0, 0.5) == (0, True)
    assert engine.book.phases["B"].classify(lost + 1.0, 0.5) == (0, False)
    link.state = LinkState.CONNECTED
    engine._on_link_state(link, LinkState.CONNECTED, "reconnected")
    await engine.wait()
    assert not of(seen, EventKind.DRIFT) and not of(seen, EventKind.PHASE)
    assert engine.book.phases["A"].pending is None and engine.book.phases["A"].phase == 0
    assert not engine.gate


async def test_a_link_lost_again_while_reading_is_read_on_the_next_reconnect():
    low, high = RMEM.values
    engine, fake, seen = engine_on({"s": high, "r": high, "s2": high, "r2": high})
    fake.drop_while_reading = "r"
    await reconnect(engine, "r", {"r": low}, fake)
    assert not of(seen, EventKind.DRIFT) and "r" in engine.gate
    fake.drop_while_reading = None
    await reconnect(engine, "r")
    (drift,) = of(seen, EventKind.DRIFT)
    assert drift.payload.value == low and not engine.gate


def test_role_value_undoes_pair_value():
    for by_role in ({"sender": "a", "receiver": "b"}, {"sender": "a", "receiver": "a"},
                    {"receiver": "b"}):
        joined = pair_value(by_role)
        assert {r: role_value(joined, r, list(by_role)) for r in by_role} == by_role


def test_a_recorded_drift_is_kept_reported_and_logged():
    from pathlib import Path

    from abtui.measure.headless import describe
    from abtui.reports.report import markdown
    from abtui.sessions.reader import load_events
    from abtui.sessions.session import Session
    from abtui.ui.model.state import ConsoleState

    path = Path(__file__).parents[3] / "fixtures" / "sessions" / "reconnect.abtui.jsonl.gz"
    said = ("tcp_wmem on htlab-a-snd is 4096 16384 1048576 after reconnect, was set to "
            "4096 16384 65536: re-applied")
    session = Session.load(path)
    assert [(d["host"], d["action"]) for d in session.drifts] == [("htlab-a-snd", "re-applied")]
    assert f"⚠ {said}" in markdown(session)
    state = ConsoleState(Profile(name="p", pairs=[
        Pair(label="A", sender="htlab-a-snd", receiver="htlab-a-rcv", target="198.19.1.2")]))
    (drift,) = [e for e in load_events(path) if e.kind is EventKind.DRIFT]
    assert state.apply(drift) == said
    assert describe(drift) == said  # `abtui run`'s line on stderr


class Group:
    """A link that records the process groups it is asked to end."""

    def __init__(self, boot: str) -> None:
        self.alias, self.boot_id, self.state = "r", boot, LinkState.LOST
        self.killed: list[int] = []

    async def kill_group(self, pgid: int) -> None:
        self.killed.append(pgid)


async def test_orphans_of_a_host_that_rebooted_are_forgotten_not_killed(tmp_path):
    from abtui.hosts.restore import Orphans
    from abtui.hosts.undo import UndoJournal, read_journal

    journal = UndoJournal(tmp_path)
    orphans = Orphans()
    same, again = Group("boot-1"), Group("boot-1")
    for link, pgid in ((same, 101), (again, 202)):
        journal.record_pgid("r", pgid, "iperf3 server")
        orphans.add(link, pgid)  # type: ignore[arg-type]
    assert orphans.on(same) and orphans.links == [same, again]  # type: ignore[arg-type]
    again.boot_id = "boot-2"  # it rebooted while its link was down: 202 is not ours now
    await orphans.end(same, journal)  # type: ignore[arg-type]
    await orphans.end(again, journal)  # type: ignore[arg-type]
    assert same.killed == [101] and again.killed == []
    assert not orphans and not orphans.on(same)  # type: ignore[arg-type]
    assert not read_journal(journal.path).pgids  # neither is left for `recover`


async def test_the_engine_ends_a_hosts_orphans_when_its_link_is_back(tmp_path):
    """The engine hands what a dropped link left to its Orphans, ended on reconnect."""
    engine, _fake, _seen = engine_on({"s": "1", "r": "1", "s2": "1", "r2": "1"})
    link = Group("boot-1")
    engine.hosts.orphans.add(link, 303)  # type: ignore[arg-type]
    engine.hosts.links["r"] = link  # type: ignore[assignment]
    link.state = LinkState.CONNECTED
    engine._on_link_state(link, LinkState.CONNECTED, "reconnected")  # type: ignore[arg-type]
    await engine.wait()
    assert link.killed == [303] and not engine.hosts.orphans


class Tunnels(HostValues):
    """The fake knob layer with tunnels: which pairs' tunnels still have both ends."""

    def __init__(self, values: dict[str, str], engine: Engine) -> None:
        super().__init__(values, engine)
        self.gone: set[tuple[str, str]] = set()  # (pair, host)
        self.made = 0

    async def tunnel_intact(self, label: str, host: str) -> bool | None:
        return (label, host) not in self.gone

    async def apply(self, knob: Knob, value: str, pairs: list[Pair]) -> dict[str, str]:
        if knob.kind is not KnobKind.TUNNEL:
            return await super().apply(knob, value, pairs)
        if self.refuse and value != "none":
            raise KnobRefused("r: vxlan tunnel of pair A is up but 10.99.1.2 does not answer")
        self.made += 1
        self.gone.clear()
        return {p.label: p.target if value == "none" else f"10.99.{self.made}.2"
                for p in pairs}


async def test_a_tunnel_whose_end_is_gone_is_made_again_or_dropped():
    high = RMEM.values[1]
    for refuse in (False, True):
        engine, _fake, seen = engine_on({"s": high, "r": high, "s2": high, "r2": high})
        engine.profile.knobs.append(Knob(name="tunnel", kind=KnobKind.TUNNEL,
                                         values=("none", "vxlan")))
        fake = Tunnels(dict(_fake.values), engine)
        engine.knobs.use(fake)
        await engine.set_knob("tunnel", "vxlan", ["A"])
        engine.book.phases["A"].running(True)
        first = engine.book.targets["A"]
        fake.gone.add(("A", "r"))  # the receiver was reset: its end is gone
        fake.refuse = refuse
        seen.clear()
        await reconnect(engine, "r")
        (drift,) = of(seen, EventKind.DRIFT)
        assert (drift.payload.knob, drift.payload.value, drift.payload.expected) == \
            ("tunnel", "none", "vxlan")
        (tunnel,) = of(seen, EventKind.TUNNEL)
        if not refuse:  # made again: a new target, the pair still labelled vxlan
            assert drift.payload.action == "re-applied"
            assert engine.book.targets["A"] == tunnel.payload.target == "10.99.2.2" != first
            assert engine.book.phases["A"].config["tunnel"] == "vxlan"
        else:  # could not: what is left removed, the pair measured direct and labelled so
            assert drift.payload.action == "relabelled" and "does not answer" in \
                drift.payload.message
            assert engine.book.targets["A"] == tunnel.payload.target == "198.18.1.2"
            assert engine.book.phases["A"].config["tunnel"] == "none"
        assert of(seen, EventKind.PHASE)[0].payload.config["tunnel"] == "vxlan"


async def test_the_gate_holds_a_dropped_host_until_it_is_read_again():
    """HostGate: a run waits on a held, connected host until its hold is released (not by
    another hold's reading); a host not connected is not waited for."""
    import asyncio

    from abtui.measure.engine.verify import HostGate, Unverified

    connected = {"r": True, "s": False}
    pool = SimpleNamespace(connected=lambda alias: connected[alias])
    gate = HostGate(pool)  # type: ignore[arg-type]
    held = gate.hold("r", 1.0, "boot-1")
    gate.hold("s", 1.0, None)
    assert "r" in gate and gate.get("r") is held
    waiting = asyncio.get_running_loop().create_task(gate.wait(["r", "s"]))
    await asyncio.sleep(0)
    gate.release("r", Unverified(0.5))  # an earlier hold's reading: not this one
    await asyncio.sleep(0)
    assert "r" in gate and not waiting.done()
    gate.release("r", held)
    await asyncio.wait_for(waiting, 5)  # "s" is down: nothing waits for it
    assert "r" not in gate and held.done.is_set() and "s" in gate


async def test_what_a_build_switch_s_boot_reset_is_re_applied_without_a_drift():
    """A host held for a build switch (`hold_switch`) comes back with the session's other
    settings reset by its boot: they are re-applied as the switch's own work, with no drift
    event (a planned boot is not drift); a refusal is still told."""
    low, high = RMEM.values
    engine, fake, seen = engine_on({"s": high, "r": high, "s2": high, "r2": high})
    await engine.set_knob("rmem", low, ["A"])
    seen.clear()
    engine.verifier.hold_switch(["r"], 1.0, 60.0)
    await reconnect(engine, "r", {"r": high}, fake, boot="boot-2")
    assert not of(seen, EventKind.DRIFT) and fake.values["r"] == low
    engine.verifier.hold_switch(["r"], 2.0, 60.0)
    fake.refuse = True
    await reconnect(engine, "r", {"r": high}, fake, boot="boot-3")
    (drift,) = of(seen, EventKind.DRIFT)
    assert drift.payload.action == "relabelled"
