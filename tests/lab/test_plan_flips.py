"""A knob that only new connections see (not live: a sysctl's default, a tunnel, an iperf3
option), flipped while a plan's step measures: the step's run on that pair ends, what it
measured after the flip counts nowhere, and a fresh run of the step's length measures the new
setting."""

from __future__ import annotations

import asyncio
import dataclasses

import pytest

from abtui.core.events import EventKind
from abtui.lab.netns import Lab
from tests.lab.engine_kit import WMEM, Recorder, lab_profile, make_engine, until

pytestmark = [pytest.mark.lab, pytest.mark.usefixtures("no_strays")]


async def test_a_restarting_knob_flipped_mid_step_measures_the_new_setting(lab: Lab):
    profile = lab_profile(lab, duration=3)
    profile.knobs = [dataclasses.replace(profile.knobs[0], live=False)]  # the kit's is live
    rec = Recorder()
    engine = make_engine(profile, rec)
    try:
        await engine.connect()
        await engine.start("plan")
        await until(lambda: {e.pair for e in rec.of(EventKind.INTERVAL)} == {"A", "B"})
        await engine.set_knob("tcp_wmem", WMEM[1], ["A"])
        flipped = rec.of(EventKind.KNOB)[-1].t
        await asyncio.wait_for(engine.wait(), 30)
    finally:
        await engine.shutdown()
    assert not rec.of(EventKind.ERROR), [e.record() for e in rec.of(EventKind.ERROR)]
    a_runs = [e.record() for e in rec.of(EventKind.RUN_START, "A")]
    assert len(a_runs) == 2, a_runs  # the step's run, and the one after the flip
    first, second = (r["run"] for r in a_runs)
    assert rec.run_end(first)["status"] == "stopped"
    assert rec.run_end(second)["status"] == "ok"
    assert a_runs[1]["config"]["tcp_wmem"] == WMEM[1]
    old = [e for e in rec.of(EventKind.INTERVAL, "A") if e.payload.run == first]
    assert all(e.payload.straddles for e in old if e.t > flipped)
    new = [e.record() for e in rec.of(EventKind.INTERVAL, "A") if e.payload.run == second]
    counted = [d for d in new if not d["straddles"]]
    assert len(counted) >= 4 and {d["phase"] for d in counted} == {a_runs[1]["phase"]}
    # B was not touched: one run through the step
    assert [rec.run_end(r["run"])["status"] for r in
            (e.record() for e in rec.of(EventKind.RUN_START, "B"))] == ["ok"]
    assert [e.payload.done for e in rec.of(EventKind.PROGRESS)] == [0, 1]
