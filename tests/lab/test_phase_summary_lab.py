"""A continuous run on the lab with a knob flipped mid-run, exported as JSON: each phase's
summary is its own counted intervals' figure, never iperf3's summary of the whole run (which
covers both phases), and what only that summary knew is null."""

from __future__ import annotations

import math

import pytest

from abtui.core.events import EventKind
from abtui.lab.netns import Lab
from abtui.reports import exports
from abtui.sessions.session import Session
from tests.lab.engine_kit import WMEM, Recorder, lab_profile, make_engine, until

pytestmark = [pytest.mark.lab, pytest.mark.usefixtures("no_strays")]


async def test_a_continuous_run_s_phases_export_their_own_figures(lab: Lab) -> None:
    rec = Recorder()
    engine = make_engine(lab_profile(lab), rec)

    def counted(pair: str, phase: object) -> int:
        return sum(1 for e in rec.of(EventKind.INTERVAL, pair) if e.payload.phase == phase
                   and not e.payload.straddles and not e.payload.omitted)

    try:
        await engine.connect()
        await engine.start("continuous")
        await until(lambda: all(counted(p, 0) >= 3 for p in ("A", "B")), timeout=30)
        await engine.set_knob("tcp_wmem", WMEM[1])
        await until(lambda: all(counted(p, 1) >= 3 for p in ("A", "B")), timeout=30)
    finally:
        await engine.shutdown()
    session = Session.from_events(rec.events)
    doc = exports.to_json(session)
    for pair in ("A", "B"):
        (run,) = [r for r in doc["runs"] if r["pair"] == pair]
        # iperf3 summarized the whole run, both phases (stopped: the sender's line only)
        assert isinstance((run["summary"] or {}).get("sender_bits_per_second"), float), run
        phases = [p for p in doc["phases"] if p["pair"] == pair]
        assert len(phases) == 2
        for ph in phases:
            s = ph["summary"]
            ivs = [iv for iv in ph["intervals"] if not iv["omitted"]]
            bits = math.fsum(iv["bits_per_second"] * (iv["end"] - iv["start"]) for iv in ivs)
            own = bits / math.fsum(iv["end"] - iv["start"] for iv in ivs)
            assert s["bits_per_second"] == pytest.approx(own, rel=1e-12)
            # TCP, the client's lines: the sender's rate over this phase, and nothing else
            assert s["sender_bits_per_second"] == s["bits_per_second"], (pair, s)
            assert s["receiver_bits_per_second"] is None
            assert s["sender_cpu"] is None and s["receiver_cpu"] is None
            assert s["retransmits"] == sum(iv["retransmits"] for iv in ivs)
