"""A request/response load on the lab: real sockperf in the namespaces, beside iperf3.

sockperf's server on each pair's receiver, its client on the sender, released with iperf3 and
interrupted when iperf3 ends; its round trips come back as RR events per interval and phase,
their count and median checked against sockperf's own summary (RUN_END's `rr`, what sockperf
printed), and nothing of it left on the hosts.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import time
from pathlib import Path

import pytest

from abtui.core.events import EventKind
from abtui.lab.netns import Lab
from abtui.reports import latency
from abtui.reports.report import markdown
from abtui.sessions.session import Session
from tests.lab.engine_kit import (
    WMEM,
    Recorder,
    lab_profile,
    make_engine,
    run_plan,
    stray_pids,
    until,
)

pytestmark = [pytest.mark.lab, pytest.mark.usefixtures("no_strays"),
              pytest.mark.skipif(shutil.which("sockperf") is None,
                                 reason="sockperf is not installed (Debian package sockperf)")]


@pytest.mark.parametrize("mode", ["ping-pong", "under-load"])
async def test_sockperf_beside_iperf3_gives_percentiles_per_interval(lab: Lab, mode: str
                                                                     ) -> None:
    profile = lab_profile(lab, duration=6, interval=1.0, sockperf=mode, sockperf_mps=400)
    rec, _ = await run_plan(profile)
    session = Session.from_events(rec.events, name="rr")
    for start in rec.of(EventKind.RUN_START):
        pair, run = start.pair, start.payload.run
        end = rec.run_end(run)
        assert end["status"] == "ok", end
        own = end["rr"]  # sockperf's own summary, as it printed it
        assert own is not None and own["observations"] > 200, own
        rr = [e.payload for e in rec.of(EventKind.RR, pair) if e.payload.run == run]
        assert rr, f"{pair}: no RR event"
        # every observation sockperf counted is in an interval (none retired in a plan run)
        assert sum(p.n for p in rr) == own["observations"]
        assert all(0 <= p.start < p.end <= profile.test.duration + 35 for p in rr)
        for p in rr:
            assert p.p50_ms is not None and 0 < p.p50_ms <= p.max_ms
            assert sum(c for _, c in p.bins) == p.n
        # the phase's median from the journal's bins, against sockperf's own (3 digits kept)
        phases = sorted({ph.index for ph in session.phases if ph.pair == pair})
        ours = latency.rr_latency(session, pair, phases=phases)
        assert ours.n == own["observations"]
        theirs = own["percentiles_ms"]["p50"]
        assert ours.percentiles["p50"] == pytest.approx(theirs, rel=0.02, abs=0.002)
    report = markdown(session, chart=False)
    assert "Request/response latency (sockperf" in report
    assert not stray_pids(lab, ("sockperf",))


async def test_a_continuous_run_split_by_a_live_flip_and_stopped(lab: Lab) -> None:
    """A continuous run (no end of its own) through a live knob's flip, then stopped: sockperf
    is interrupted at the stop, its round trips fall in the two phases by when they were sent,
    and neither its server nor its client is left."""
    profile = lab_profile(lab, interval=1.0, sockperf="ping-pong", sockperf_mps=300)
    rec = Recorder()
    engine = make_engine(profile, rec)
    try:
        await engine.connect()
        await engine.start("continuous")
        await until(lambda: len(rec.of(EventKind.INTERVAL, "A")) >= 4, timeout=20)
        started = {e.payload.run for e in rec.of(EventKind.RUN_START)}
        # sockperf's processes run on the hosts meanwhile, each written down for recover
        running = stray_pids(lab, ("sockperf",))
        assert sum(len(v) for v in running.values()) == 4, running
        flipped = time.time()
        await engine.set_knob("tcp_wmem", WMEM[1])
        await until(lambda: len([e for e in rec.of(EventKind.INTERVAL, "A")
                                 if e.t > flipped + 3]) >= 1, timeout=20)
        await engine.stop()
        await until(lambda: all(rec.of(EventKind.RUN_END, p) for p in ("A", "B")), timeout=20)
    finally:
        await engine.shutdown()
    for run in started:
        end = rec.run_end(run)
        assert end["status"] == "stopped" and end["rr"]["observations"] > 300, end
        rr = [e for e in rec.of(EventKind.RR) if e.payload.run == run]
        assert sum(e.payload.n for e in rr) == end["rr"]["observations"]
        phases = {e.payload.phase for e in rr}
        assert len(phases) == 2, phases  # before and after the live flip
        last_before = max(e.payload.end for e in rr if e.payload.phase == min(phases))
        first_after = min(e.payload.start for e in rr if e.payload.phase == max(phases))
        assert first_after <= last_before  # the interval of the flip is split by phase
    assert not stray_pids(lab, ("sockperf",))


def test_a_sigkilled_controller_s_sockperf_is_ended_by_recover(lab: Lab, tmp_path: Path
                                                               ) -> None:
    """`abtui run --headless` with sockperf, killed with SIGKILL while it measures: its
    sockperf server and client stay on the hosts (written in the undo journal by process
    group), and `abtui recover` ends every one of them."""
    root = Path(__file__).resolve().parents[2]
    text = lab.profile_path.read_text().replace("[test]\n", '[test]\nsockperf = "ping-pong"\n'
                                                "sockperf_mps = 200\n", 1)
    profile = tmp_path / "rr.toml"
    profile.write_text(text)
    env = {**os.environ, "XDG_STATE_HOME": str(tmp_path / "state"), "PYTHONPATH": str(root)}

    def abtui(*args: str) -> subprocess.Popen[str]:
        return subprocess.Popen([sys.executable, "-m", "abtui", *args], cwd=root, env=env,
                                text=True, stdout=subprocess.PIPE, stderr=subprocess.PIPE)

    out = tmp_path / "s.jsonl"
    proc = abtui("run", str(profile), "--headless", "--duration", "60", "--out", str(out))
    try:
        deadline = time.monotonic() + 30
        while time.monotonic() < deadline and \
                sum(len(v) for v in stray_pids(lab, ("sockperf",)).values()) < 4:
            time.sleep(0.2)
        assert sum(len(v) for v in stray_pids(lab, ("sockperf",)).values()) == 4
        proc.kill()
        proc.wait(timeout=10)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
    assert stray_pids(lab, ("sockperf",))  # left behind by the kill
    rec = abtui("recover")
    said, err = rec.communicate(timeout=60)
    assert rec.returncode == 0, said + err
    deadline = time.monotonic() + 10  # (an ended process may linger as a zombie: not counted)
    while stray_pids(lab, ("sockperf",)) and time.monotonic() < deadline:
        time.sleep(0.2)
    assert not stray_pids(lab, ("sockperf",)), said


class _Lines:
    def __init__(self) -> None:
        self.text = ""

    def write(self, s: str) -> None:
        self.text += s

    def flush(self) -> None:
        pass


@pytest.mark.slow  # a latency alternation of ~40 s; the rule's rates are the bench's
async def test_an_alternation_judges_sockperf_s_p50(lab: Lab, tmp_path: Path) -> None:
    """`abtui run --alternate tcp_wmem --metric p50` with sockperf and no ping: one run per
    stretch, each stretch's sample the p50 of its sockperf round trips (as 1/RTT), so the
    block it completes has a Δ; the verdicts say what they judged, in the session too."""
    from abtui.hosts.undo import UndoJournal
    from abtui.measure.alternate.design import Alternation
    from abtui.measure.headless import run_headless
    from abtui.sessions.reader import iter_events

    profile = lab_profile(lab, duration=4, interval=1.0, sockperf="ping-pong",
                          sockperf_mps=300)
    out, said = tmp_path / "alt.jsonl", _Lines()
    alt = Alternation("tcp_wmem", WMEM, None, max_runs=2, seed=5, metric="rtt p50")
    await run_headless(profile, out, progress=said, alternation=alt,
                       journal=UndoJournal(tmp_path / "undo"))
    assert "judged on each stretch's RTT p50 of sockperf as 1/RTT" in said.text, said.text
    events = list(iter_events(out))
    assert not [e for e in events if e.kind is EventKind.PING]  # sockperf is the only source
    rr_runs = {e.payload.run for e in events if e.kind is EventKind.RR}
    runs = {e.payload.run for e in events if e.kind is EventKind.RUN_START}
    assert rr_runs == runs and len(runs) >= 8  # every stretch's run had its round trips
    rows = next(e.payload.verdicts for e in reversed(events)
                if e.kind is EventKind.MARK and e.payload.verdicts)
    assert {r["pair"] for r in rows} == {"A", "B"}
    for row in rows:
        assert row["blocks"] >= 1 and row["pct"] is not None, row  # the blocks' Δ of 1/RTT
    marks = [e.payload.text for e in events if e.kind is EventKind.MARK]
    assert any("verdicts; judged on each stretch's RTT p50" in m for m in marks), marks
    assert not stray_pids(lab, ("sockperf",))


def test_check_says_each_host_has_sockperf(lab: Lab, tmp_path: Path) -> None:
    """`abtui check` of a profile asking for sockperf: one line per host naming its version."""
    root = Path(__file__).resolve().parents[2]
    profile = tmp_path / "rr.toml"
    profile.write_text(lab.profile_path.read_text().replace(
        "[test]\n", '[test]\nsockperf = "under-load"\n', 1))
    got = subprocess.run([sys.executable, "-m", "abtui", "check", str(profile)], cwd=root,
                         capture_output=True, text=True, timeout=120)
    assert got.returncode == 0, got.stdout + got.stderr
    for h in lab.hosts(2):
        assert f"ok   {h.alias}: sockperf present (3." in got.stdout, got.stdout


async def test_a_continuous_run_s_round_trips_come_chunk_by_chunk(lab: Lab) -> None:
    """A continuous run runs sockperf in chunks (CHUNK_S): round trips come while the run goes
    on, not only at its stop; every chunk's observations are in the run's RR events, and no
    client or server is left."""
    from abtui.measure.run.rr import CHUNK_S

    profile = lab_profile(lab, interval=1.0, sockperf="ping-pong", sockperf_mps=300)
    rec = Recorder()
    engine = make_engine(profile, rec)
    try:
        await engine.connect()
        await engine.start("continuous")
        # the first chunk's round trips, before anything stops the run
        await until(lambda: all(rec.of(EventKind.RR, p) for p in ("A", "B")),
                    timeout=CHUNK_S + 15)
        assert not rec.of(EventKind.RUN_END)
        started = {e.payload.run for e in rec.of(EventKind.RUN_START)}
        await until(lambda: len(rec.of(EventKind.INTERVAL, "A")) >= CHUNK_S + 6,
                    timeout=CHUNK_S + 20)
        await engine.stop()
    finally:
        await engine.shutdown()
    for run in started:
        end = rec.run_end(run)
        own = end["rr"]
        assert own is not None and own["chunks"] >= 2, own
        rr = [e.payload for e in rec.of(EventKind.RR) if e.payload.run == run]
        assert sum(p.n for p in rr) == own["observations"] > 0
        assert max(p.end for p in rr) > CHUNK_S  # the second chunk's, on the run's clock
    # a chunk the stop cut in its start-up measured nothing, and that is no error
    assert not [e for e in rec.of(EventKind.ERROR) if "sockperf" in str(e.record())]
    assert not stray_pids(lab, ("sockperf",))
