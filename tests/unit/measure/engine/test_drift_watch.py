"""The engine's drift watch (abtui.measure.engine.drift) on a fake knob layer: a setting
someone else changed is a DRIFT event with its window, its pairs' phases split there (the
next one named by the host's value), hosts that reconnect are left to the verifier, and the
watch reads back before every change and every few seconds while measuring. The lab test
(tests/lab/test_drift_lab.py) does the same on real hosts."""

from __future__ import annotations

import asyncio
from types import SimpleNamespace

from abtui.core.events import Event, EventKind
from abtui.core.model import KnobKind, LinkState, Scope, now
from abtui.hosts.readback import Changed
from abtui.measure.engine import drift
from abtui.measure.engine.front import Engine
from abtui.remote.os.dialect import Setting
from tests.profiles import profile, sysctl

RMEM = sysctl("rmem", "net.ipv4.tcp_rmem", ("4096 8192 16384", "4096 131072 6291456"),
              scope=Scope.RECEIVER)
SMALL, BIG = RMEM.values
FOREIGN = "4096 65536 1048576"


class Hosts:
    """A knob layer over a dict of host values: what abtui wrote, what the hosts have."""

    def __init__(self, values: dict[str, str]) -> None:
        self.values = dict(values)
        self.written = dict(values)
        self.reads: list[list[str]] = []

    async def current(self, knob, pairs):
        return {p.label: {str(r): self.values[p.host(r)] for r in knob.scope.roles}
                for p in pairs}

    async def apply(self, knob, value, pairs, again=False):
        for p in pairs:
            self.values[p.receiver] = self.written[p.receiver] = value
        return {}

    async def read_back(self, hosts):
        self.reads.append(sorted(hosts))
        out = [Changed(h, Setting(KnobKind.SYSCTL, RMEM.key), "rmem", self.written[h],
                       self.values[h]) for h in hosts
               if h in self.values and self.values[h] != self.written[h]]
        for c in out:  # found once: no longer abtui's
            self.written[c.host] = c.found
        return out

    async def tunnel_intact(self, label, host):
        return None

    async def restore(self):
        return []


def engine_on(values: dict[str, str]) -> tuple[Engine, Hosts, list[Event]]:
    prof = profile(RMEM, pairs=2)
    engine = Engine(prof, parser_factory=lambda _f: None,  # type: ignore[arg-type,return-value]
                    use_journal=False)
    fake = Hosts(values)
    engine.knobs.use(fake)
    engine.hosts.links = {a: SimpleNamespace(alias=a, state=LinkState.CONNECTED,  # type: ignore[misc]
                                             boot_id="b") for a in ("s", "r", "s2", "r2")}
    for label, rcv in (("A", "r"), ("B", "r2")):
        engine.book.phases[label].config = {"rmem": values[rcv]}
        engine.book.phases[label].open_at(now() - 10)
        engine.book.phases[label].running(True)  # as if a run had gone on
    seen: list[Event] = []
    engine.subscribe(seen.append)
    return engine, fake, seen


async def test_someone_elses_value_is_drift_and_splits_only_its_pairs_phase():
    engine, fake, seen = engine_on({"r": SMALL, "r2": SMALL})
    engine.drift._opened = now() - 10
    await engine.read_back()  # all as written: nothing said, the read is the last good one
    assert seen == []
    good = now()
    fake.values["r"] = FOREIGN  # a colleague's `sysctl -w`
    await asyncio.sleep(0.01)
    await engine.read_back()
    (d,) = [e for e in seen if e.kind is EventKind.DRIFT]
    assert d.host == "r" and d.payload.pairs == ["A"]
    assert (d.payload.key, d.payload.expected, d.payload.value) == \
        ("net.ipv4.tcp_rmem", SMALL, FOREIGN)
    assert d.payload.since is not None and d.payload.since <= good <= d.payload.until
    assert d.payload.action == drift.LEFT
    assert "changed out of band to '4096 65536 1048576' (abtui had set '4096 8192 16384'), " \
        "by someone else between" in d.payload.line("r")
    (closed,) = [e for e in seen if e.kind is EventKind.PHASE]
    assert closed.pair == "A" and closed.payload.config == {"rmem": SMALL}
    assert closed.payload.end == d.payload.since  # closed at the last read that was abtui's
    assert engine.book.phases["A"].config == {"rmem": FOREIGN}  # named by the host's value
    assert engine.book.phases["A"].start == d.payload.until
    assert engine.book.phases["B"].config == {"rmem": SMALL}  # its hosts untouched
    # an interval begun in the window counts in no phase
    assert engine.book.phases["A"].classify(d.payload.until + 0.5, 1.0)[1] is True
    await engine.read_back()  # said once
    assert len([e for e in seen if e.kind is EventKind.DRIFT]) == 1


async def test_a_host_that_reconnects_is_left_to_the_verifier():
    engine, fake, seen = engine_on({"r": SMALL, "r2": SMALL})
    engine.hosts.links["r"].state = LinkState.LOST  # type: ignore[misc]
    fake.values["r"] = FOREIGN
    await engine.read_back()
    assert fake.reads == [["r2", "s", "s2"]] and seen == []


async def test_a_change_reads_back_first(monkeypatch):
    """A flip (the console's, an alternation's) never writes over a value it did not see:
    the hosts are read back before it."""
    engine, fake, seen = engine_on({"r": SMALL, "r2": SMALL})
    fake.values["r"] = FOREIGN
    await engine.set_knob("rmem", BIG, ["B"])
    drift_at = next(i for i, e in enumerate(seen) if e.kind is EventKind.DRIFT)
    knob_at = next(i for i, e in enumerate(seen) if e.kind is EventKind.KNOB)
    assert drift_at < knob_at and fake.values == {"r": FOREIGN, "r2": BIG}


async def test_measuring_reads_back_every_few_seconds(monkeypatch):
    monkeypatch.setattr(drift, "READBACK_S", 0.01)
    engine, fake, _seen = engine_on({"r": SMALL, "r2": SMALL})
    engine.drift.start()
    try:
        for _ in range(200):
            if len(fake.reads) >= 3:
                break
            await asyncio.sleep(0.01)
    finally:
        await engine.drift.stop()
    assert len(fake.reads) >= 3
    n = len(fake.reads)
    await asyncio.sleep(0.05)
    assert len(fake.reads) == n  # stopped with the runs


async def test_a_knob_layer_that_cannot_read_back_is_not_asked():
    engine, _fake, seen = engine_on({"r": SMALL, "r2": SMALL})
    engine.knobs.use(SimpleNamespace())  # type: ignore[arg-type]
    assert await engine.drift.check() == [] and seen == []
