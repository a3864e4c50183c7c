"""The lab's own profile, driven by the real engine: a receiver-side tcp_rmem flip shows in the
throughput of the next phase, on both pairs, and every knob is back afterwards."""

from __future__ import annotations

import asyncio
import dataclasses

import pytest

from abtui.core.events import Event
from abtui.hosts.undo import UndoJournal
from abtui.lab.netns import Lab
from abtui.lab.profile import TCP_RMEM_VALUES
from abtui.measure.engine.front import Engine
from abtui.profile import load_profile
from abtui.reports.stats import phase_stats
from abtui.sessions.session import Session
from tests.lab.engine_kit import undo_folder
from tests.lab.namespaces import ns_exec

pytestmark = pytest.mark.lab


async def test_tcp_rmem_flip_changes_throughput_in_its_own_phase(lab: Lab):
    profile = load_profile(lab.profile_path)
    profile.test = dataclasses.replace(profile.test, interval=0.5, ping=True)
    receivers = [p.receiver for p in profile.pairs]
    original = {r: ns_exec(lab, r, "sysctl", "-n", "net.ipv4.tcp_rmem").split()
                for r in receivers}
    events: list[Event] = []
    engine = Engine(profile, journal=UndoJournal(undo_folder()))
    engine.subscribe(events.append)
    try:
        await engine.connect()
        await engine.start("continuous")
        await asyncio.sleep(2.6)
        await engine.set_knob("tcp_rmem", TCP_RMEM_VALUES[1])
        await asyncio.sleep(2.6)
    finally:
        await engine.shutdown()
    assert {r: ns_exec(lab, r, "sysctl", "-n", "net.ipv4.tcp_rmem").split()
            for r in receivers} == original
    session = Session.from_events(events)
    for pair in ("A", "B"):
        phases = session.phases_of(pair)
        assert len(phases) == 2, phases
        before, after = (phase_stats(session, ph)["throughput"] for ph in phases)
        assert before.n >= 3 and after.n >= 3
        # a 16 KiB receive buffer cuts lab throughput several times over (~14 -> ~2 Gbit/s
        # measured alone); demand a clear drop even on a busy machine
        assert after.mean < 0.6 * before.mean, (pair, before, after)
        rtt = phase_stats(session, phases[0])["rtt"]
        assert rtt.n > 0 and 0 < rtt.mean < 50
