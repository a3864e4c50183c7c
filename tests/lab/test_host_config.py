"""A phase's configuration is what the hosts have: read on connect, changed only by applied
flips, labelled by one rule in the console and the export (real sshd and sysctls)."""

from __future__ import annotations

import asyncio

import pytest

from abtui.core.configuration import INITIAL, cycle
from abtui.core.events import EventKind
from abtui.lab.netns import Lab
from abtui.reports.exports import to_json
from abtui.sessions.session import Session
from abtui.ui.model.state import ConsoleState
from tests.lab.engine_kit import WMEM, Recorder, lab_profile, make_engine, until
from tests.lab.namespaces import ns_exec

pytestmark = pytest.mark.lab

HOSTS_OWN = "4096 20480 3145728"  # a value the profile does not list


def _senders(lab: Lab) -> list[str]:
    return [h.alias for h in lab.hosts(2) if h.role == "sender"]


def _wmem(lab: Lab, alias: str) -> str:
    return " ".join(ns_exec(lab, alias, "sysctl", "-n", "net.ipv4.tcp_wmem").split())


async def test_the_hosts_values_are_the_first_phase_and_flips_return_to_them(lab: Lab):
    senders = _senders(lab)
    before = {a: _wmem(lab, a) for a in senders}
    for a in senders:
        ns_exec(lab, a, "sysctl", "-qw", f"net.ipv4.tcp_wmem={HOSTS_OWN}")
    rec = Recorder()
    profile = lab_profile(lab)
    engine = make_engine(profile, rec)
    try:
        await engine.connect()
        configs = {e.pair: e.payload.config for e in rec.of(EventKind.CONFIG)}
        assert configs == {"A": {"tcp_wmem": HOSTS_OWN}, "B": {"tcp_wmem": HOSTS_OWN}}
        state = ConsoleState(profile)
        for e in rec.events:
            state.apply(e)
        assert state.pairs["A"].config == {"tcp_wmem": HOSTS_OWN}
        # the console's cycle: the profile's values, then back to the host's own
        ps = state.pairs["A"]
        assert cycle(WMEM, ps.config["tcp_wmem"], ps.original["tcp_wmem"]) == WMEM[0]
        assert cycle(WMEM, WMEM[1], ps.original["tcp_wmem"]) == HOSTS_OWN

        await engine.start("continuous")
        await until(lambda: len(rec.of(EventKind.INTERVAL)) >= 4)
        knobs_before = len(rec.of(EventKind.KNOB))
        await engine.set_knob("tcp_wmem", HOSTS_OWN)  # what the hosts have: no change
        assert len(rec.of(EventKind.KNOB)) == knobs_before
        assert not rec.of(EventKind.PHASE)

        await engine.set_knob("tcp_wmem", WMEM[1])
        await until(lambda: len(rec.of(EventKind.INTERVAL)) >= 12)
        # stop, then start again (the console connects on every start): the links and the
        # originals they know are kept, so quitting still restores the host's own value
        await engine.stop()
        await engine.connect()
        await engine.start("continuous")
        await engine.set_knob("tcp_wmem", HOSTS_OWN)  # back to the host's own value
        n = len(rec.of(EventKind.INTERVAL))
        await until(lambda: len(rec.of(EventKind.INTERVAL)) >= n + 8)
        await engine.set_knob("tcp_wmem", WMEM[0])
        await asyncio.sleep(0.3)
    finally:
        await engine.shutdown()
        after = {a: _wmem(lab, a) for a in senders}
        for a in senders:
            ns_exec(lab, a, "sysctl", "-qw", f"net.ipv4.tcp_wmem={before[a]}")
    assert after == dict.fromkeys(senders, HOSTS_OWN)
    assert len(rec.of(EventKind.SESSION_START)) == 1  # connected once

    # one rule: the console's rows are the export's phases, and the baseline's row is named
    # by its values as the report names it (the export's label for it is `initial`)
    state = ConsoleState(profile)
    for e in rec.events:
        state.apply(e)
    own = f"tcp_wmem={HOSTS_OWN}"
    exported: dict[tuple[str, str], int] = {}
    for ph in to_json(Session.from_events(rec.events))["phases"]:
        if ph["intervals"]:
            key = (own if ph["label"] == INITIAL else ph["label"], ph["pair"])
            exported[key] = exported.get(key, 0) + len(ph["intervals"])
    shown = {(state.row_label(r), pair): run.n for r in state.phases.values()
             for pair, run in r.per_pair.items()}
    assert shown == exported
    console = {label for label, _pair in shown}
    assert own in console and f"tcp_wmem={WMEM[1]}" in console
    # the return to the host's own value pooled with the first phase, not a row of its own
    assert len([r for r in state.phases.values() if r.per_pair]) == len(console)
    initial = next(r for r in state.phases.values() if state.row_label(r) == own)
    assert initial.config == {"tcp_wmem": HOSTS_OWN}
    assert len(initial.segments["A"]) >= 2
