"""No flow but ours, on real lab hosts: a second iperf3 started by hand on pair A's data link
while abtui measures is flagged as competing traffic in its phase (the session, the report),
at about the rate that flow itself reported; the phase before it, with abtui's flow alone on
the link, is not."""

from __future__ import annotations

import asyncio
import contextlib
import json
import statistics
import subprocess
import time

import pytest

from abtui.core.events import EventKind
from abtui.lab.netns import Lab
from abtui.reports import flags, report
from abtui.sessions.session import Session
from tests.lab.engine_kit import WMEM, Recorder, lab_profile, make_engine, until

pytestmark = [pytest.mark.lab, pytest.mark.usefixtures("no_strays")]

PORT = 5499
OURS = "400M"  # abtui's own flow, capped so that the machine's load does not move it
THEIRS = "200M"  # the competing flow


def _end(proc: subprocess.Popen[str]) -> None:
    if proc.poll() is None:
        proc.kill()
    with contextlib.suppress(subprocess.TimeoutExpired):
        proc.wait(timeout=10)


async def test_a_competing_flow_flags_its_phase_and_only_its_phase(lab: Lab) -> None:
    profile = lab_profile(lab, interval=1.0, bitrate=OURS)
    snd, rcv = lab.hosts(2)[0], lab.hosts(2)[1]
    rec = Recorder()
    engine = make_engine(profile, rec)
    server = subprocess.Popen(["ip", "netns", "exec", rcv.netns, "iperf3", "-s", "-1", "-p",
                               str(PORT)], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
                              text=True)
    client: subprocess.Popen[str] | None = None
    try:
        await engine.connect()
        await engine.start("continuous")
        await until(lambda: len(rec.of(EventKind.INTERVAL, "A")) >= 6, timeout=40)
        await engine.set_knob("tcp_wmem", WMEM[1])  # a new phase, for the competing flow
        started = time.time()
        client = subprocess.Popen(["ip", "netns", "exec", snd.netns, "iperf3", "-c",
                                   rcv.data_address, "-p", str(PORT), "-b", THEIRS, "-t", "6",
                                   "-J"], stdout=subprocess.PIPE, text=True)
        out, _ = await asyncio.to_thread(client.communicate, timeout=40)
        theirs = json.loads(out)["end"]["sum_sent"]["bits_per_second"]
        ended = time.time()
        await asyncio.sleep(2)
    finally:
        await engine.shutdown()
        for proc in (client, server):
            if proc is not None:
                _end(proc)

    flagged = rec.of(EventKind.COMPETING, "A")
    assert len(flagged) >= 3, [e.record() for e in rec.of(EventKind.COMPETING)]
    # spans are two readings (2 s) long: one may begin before the flow and end in it
    assert all(started - 2.5 <= e.payload.start and e.payload.end <= ended + 2.5
               for e in flagged), [e.record() for e in flagged]
    excess = statistics.median(e.payload.excess_bps for e in flagged)
    assert 0.6 * theirs <= excess <= 1.4 * theirs, (excess, theirs)
    assert all(e.payload.device == "data0" and e.host == snd.alias for e in flagged)
    assert not rec.of(EventKind.COMPETING, "B")  # the other pair's link carried its own only

    session = Session.from_events(rec.events, name="competing")
    phases = {ph.config.get("tcp_wmem"): ph.index for ph in session.phases_of("A")}
    assert "competing traffic" in flags.of(session, "A", [phases[WMEM[1]]]).words
    before = [ix for value, ix in phases.items() if value != WMEM[1]]
    changed = [(e.t, e.record()) for e in rec.of(EventKind.PHASE, "A")]
    assert before and not flags.of(session, "A", before), \
        (f"flow {started:.3f}-{ended:.3f}", session.competing, changed)
    text = report.markdown(session, chart=False)
    assert "## Flagged measurements" in text
    assert "competing traffic:" in text and "not ours on data0" in text
