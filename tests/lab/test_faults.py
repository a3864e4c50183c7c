"""Fault scenarios of issue 7 on the lab, with real processes: a receiver's sshd killed, a data
link set down, the controller SIGKILLed, a changed host key refused by `abtui run`, and the
soak. Each records its row of the reliability table (tests/reliability.py) once it passed.

Processes are killed by PID only (the sshd pidfile in lab.state_dir, `ip netns pids`): PID
namespaces are shared with other labs on the machine.
"""

from __future__ import annotations

import asyncio
import itertools
import os
import re
import subprocess
import sys
import time
from pathlib import Path

import pytest

from abtui.core.events import Event, EventKind
from abtui.hosts.undo import UndoJournal
from abtui.lab.netns import Lab
from abtui.lab.profile import TCP_RMEM_VALUES
from abtui.measure.engine.front import Engine
from abtui.measure.ports import open_session_writer
from abtui.parse.iperf3.text import Iperf3TextParser
from abtui.profile import load_profile
from abtui.sessions.reader import load_events
from tests.lab.engine_kit import (
    Recorder,
    lab_profile,
    make_engine,
    stray_pids,
    until,
)
from tests.lab.namespaces import kill_sshd, ns_exec
from tests.reliability import Reliability

# nothing of ours is left on the lab hosts after each test
pytestmark = [pytest.mark.lab, pytest.mark.usefixtures("no_strays")]
INTERVAL = 0.5


def max_gap(events: list[Event]) -> float:
    """The longest wait between two intervals that arrived (controller clock)."""
    times = [e.t for e in events]
    return max((b - a for a, b in itertools.pairwise(times)), default=0.0)


async def run_with(lab: Lab, tmp_path: Path, fault) -> tuple[Recorder, Path]:  # type: ignore[no-untyped-def]
    """Both pairs continuous, written to a session file; `fault(rec, engine)` meanwhile
    (when it fails, every event but intervals is printed: pytest shows them)."""
    profile = lab_profile(lab, interval=INTERVAL)
    rec = Recorder()
    engine = make_engine(profile, rec)
    path = tmp_path / "session.jsonl"
    writer = open_session_writer(path, profile, compact=False)
    engine.subscribe(writer.write)
    try:
        await engine.connect()
        await engine.start("continuous")
        try:
            await fault(rec, engine)
        except AssertionError:
            for e in rec.events:
                if e.kind not in (EventKind.INTERVAL, EventKind.WATCH):
                    print(round(e.t % 1000, 2), e.kind, e.pair, e.host, e.record())
            raise
    finally:
        await engine.shutdown()
        writer.close()
    return rec, path


def assert_contiguous(intervals: list[dict]) -> None:
    """One run's intervals follow each other with no hole: each starts where the last ended."""
    pairs = [(a["end"], b["start"]) for a, b in itertools.pairwise(intervals)]
    holes = [(end, start) for end, start in pairs if abs(end - start) > 0.01]
    assert intervals and intervals[0]["start"] == 0.0 and not holes, holes


def links_of(rec: Recorder, alias: str) -> list[str]:
    return [e.payload.state for e in rec.of(EventKind.LINK) if e.host == alias]


def is_subsequence(wanted: list[str], seen: list[str]) -> bool:
    it = iter(seen)
    return all(w in it for w in wanted)


@pytest.mark.reliability(
    "1", "sshd killed on one receiver",
    "lost→reconnecting→connected; new run measures; old run incomplete, kept in the session, "
    "not stitched; other pair's intervals contiguous")
async def test_sshd_killed_on_a_receiver(lab: Lab, tmp_path: Path, reliability: Reliability):
    """Pair B's receiver loses its sshd mid-run: B goes lost → reconnecting → connected once
    sshd is back, measures again in a new run; the interrupted run is incomplete (its
    intervals kept in the session, never stitched to the next); A never stops."""
    rcv = lab.hosts(2)[3].alias
    marks: dict[str, float] = {}

    async def fault(rec: Recorder, engine: Engine) -> None:
        await until(lambda: len(rec.of(EventKind.INTERVAL, "B")) >= 3)
        kill_sshd(lab, rcv)
        try:
            await until(lambda: "lost" in links_of(rec, rcv), timeout=10)
            await asyncio.sleep(1.0)
        finally:  # the lab's sshd comes back even when this test fails
            await asyncio.to_thread(lab.start_sshd, rcv)
        marks["back"] = time.time()
        await until(lambda: len({e.payload.run for e in rec.of(EventKind.INTERVAL, "B")}) >= 2,
                    timeout=20)
        await until(lambda: len(rec.of(EventKind.INTERVAL, "B")) >= 2, timeout=5)
        marks["measuring"] = time.time()
        await asyncio.sleep(1.0)

    rec, path = await run_with(lab, tmp_path, fault)
    assert is_subsequence(["lost", "reconnecting", "connected"], links_of(rec, rcv)), \
        links_of(rec, rcv)
    runs_b = [e.payload.run for e in rec.of(EventKind.RUN_START, "B")]
    assert len(runs_b) >= 2, runs_b
    first = rec.run_end(runs_b[0])
    assert first["status"] == "incomplete" and f"link to {rcv} lost mid-run" in first["message"]
    before = rec.intervals(runs_b[0])
    assert len(before) >= 3
    # never stitched: the new run counts from its own start, after the old one ended
    after = rec.intervals(runs_b[-1])
    assert after and after[0]["start"] == 0.0
    end_t = next(e.t for e in rec.of(EventKind.RUN_END, "B") if e.payload.run == runs_b[0])
    assert all(e.t <= end_t for e in rec.of(EventKind.INTERVAL, "B")
               if e.payload.run == runs_b[0])
    # what arrived before the drop is in the session file, as received
    saved = [e.record() for e in load_events(path)
             if e.kind is EventKind.INTERVAL and e.payload.run == runs_b[0]]
    assert [(d["start"], d["end"], d["bytes"]) for d in saved] == \
        [(d["start"], d["end"], d["bytes"]) for d in before]
    # pair A went on: one run, no interval missing
    a = rec.of(EventKind.INTERVAL, "A")
    assert len({e.payload.run for e in a}) == 1
    gap = max_gap(a)
    assert gap <= 2 * INTERVAL, f"pair A waited {gap:.2f} s between intervals"
    assert_contiguous([e.record() for e in a])
    reliability.row(
        intervals_kept=len(before), other_pair_max_gap_s=gap,
        recovery_s=marks["measuring"] - marks["back"])


@pytest.mark.reliability(
    "2", "data link of one pair down",
    "stall shown as an ERROR; link up → new run measures; other pair untouched")
async def test_data_link_down_stalls_and_recovers(lab: Lab, tmp_path: Path,
                                                  reliability: Reliability):
    """Pair A's data link goes down: the stall is an ERROR; once it is up, A measures again
    in a new run; B is untouched."""
    snd = lab.hosts(2)[0]
    marks: dict[str, float] = {}

    def link(state: str) -> None:
        subprocess.run(["ip", "-n", snd.netns, "link", "set", "data0", state], check=True)

    async def fault(rec: Recorder, engine: Engine) -> None:
        await until(lambda: len(rec.of(EventKind.INTERVAL, "A")) >= 2)
        link("down")
        try:
            marks["down"] = time.time()
            await until(lambda: rec.of(EventKind.ERROR, "A"), timeout=10)
            marks["detected"] = time.time()
        finally:
            link("up")
        marks["up"] = time.time()
        first = rec.of(EventKind.RUN_START, "A")[0].payload.run
        await until(lambda: any(e.payload.run != first and e.payload.bytes > 0
                                for e in rec.of(EventKind.INTERVAL, "A")), timeout=20)
        marks["measuring"] = time.time()
        await asyncio.sleep(0.5)

    rec, _ = await run_with(lab, tmp_path, fault)
    errors = [e.payload.message for e in rec.of(EventKind.ERROR, "A")]
    assert any("stalled" in m for m in errors), errors
    runs_a = [e.payload.run for e in rec.of(EventKind.RUN_START, "A")]
    assert len(runs_a) >= 2 and rec.run_end(runs_a[0])["status"] == "error"
    b = rec.of(EventKind.INTERVAL, "B")
    assert len({e.payload.run for e in b}) == 1 and not rec.of(EventKind.ERROR, "B")
    assert_contiguous([e.record() for e in b])
    gap = max_gap(b)
    assert gap <= 2 * INTERVAL, f"pair B waited {gap:.2f} s between intervals"
    reliability.row(
        detected_after_s=marks["detected"] - marks["down"],
        recovery_s=marks["measuring"] - marks["up"], other_pair_max_gap_s=gap)


ROOT = Path(__file__).resolve().parents[2]
RMEM_SMALL = TCP_RMEM_VALUES[1]  # one of the lab profile's values


def _abtui(tmp_path: Path, *args: str, **kw: object) -> subprocess.Popen[str]:
    env = {**os.environ, "XDG_STATE_HOME": str(tmp_path / "state"), "PYTHONPATH": str(ROOT)}
    return subprocess.Popen([sys.executable, "-m", "abtui", *args], cwd=ROOT, env=env,
                            text=True, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                            **kw)  # type: ignore[call-overload]


def _rmem(lab: Lab) -> dict[str, str]:
    return {h.alias: " ".join(ns_exec(lab, h.alias, "sysctl", "-n", "net.ipv4.tcp_rmem").split())
            for h in lab.hosts(2) if h.role == "receiver"}


def _vxlans(lab: Lab) -> dict[str, str]:
    out = {}
    for h in lab.hosts(2):
        links = ns_exec(lab, h.alias, "ip", "-o", "-d", "link", "show", "type", "vxlan")
        if links.strip():
            out[h.alias] = links.split(":")[1].strip()
    return out


def _interval_events(path: Path) -> list[Event]:
    return [e for e in load_events(path) if e.kind is EventKind.INTERVAL]


# The iperf3 the hosts run in the SIGKILL scenario: the real one, with what the client prints
# also kept on the host (tee writes to the SSH channel first, then to the file, so a line the
# controller may have seen is always in the file). The test's record of what iperf3 printed.
HOST_TEE = """#!/bin/bash
case " $* " in *" -c "*) ;; *) exec iperf3 "$@" ;; esac
set -o pipefail
iperf3 "$@" 2>&1 | tee -a "{logs}/$(hostname).log"
"""


def _tee_profile(lab: Lab, tmp_path: Path) -> tuple[Path, Path]:
    """The lab profile with [test] iperf3 pointing at HOST_TEE; and the folder of host logs."""
    logs = tmp_path / "host-logs"
    logs.mkdir()
    wrapper = tmp_path / "iperf3-tee"
    wrapper.write_text(HOST_TEE.format(logs=logs))
    wrapper.chmod(0o755)
    text = lab.profile_path.read_text()
    assert text.count("[test]\n") == 1
    profile = tmp_path / "lab-tee.toml"
    profile.write_text(text.replace("[test]\n", f'[test]\niperf3 = "{wrapper}"\n'))
    return profile, logs


def _host_intervals(log: Path) -> list[tuple[float, float, int, float]]:
    """The intervals in what iperf3 printed on a host (its own log, parsed afresh)."""
    parser = Iperf3TextParser()
    got = [iv for line in log.read_text().splitlines() for iv in parser.feed(line)]
    return [(iv.start, iv.end, iv.bytes, iv.bits_per_second) for iv in got if not iv.omitted]


@pytest.mark.reliability(
    "3", "controller SIGKILLed mid-run (knob changed, vxlan up)",
    "the session holds every interval iperf3 printed on the senders before the kill (compared "
    "with the hosts' own copy; at most the one in flight missing); next start offers recovery; "
    "`abtui recover` restores tcp_rmem, removes 4 tunnel ends, ends iperf3/ping")
def test_controller_sigkilled_loses_nothing_and_recover_sets_all_back(
        lab: Lab, tmp_path: Path, reliability: Reliability):
    """`abtui run --headless --duration 60` with tcp_rmem changed and a vxlan tunnel up, killed
    with SIGKILL: the session holds every interval iperf3 printed on the senders up to the
    kill (compared with the hosts' own copy of iperf3's output; at most the one in flight
    missing), the next start offers recovery, and `abtui recover` restores tcp_rmem, removes
    the tunnels and ends every iperf3 and ping left on the hosts."""
    before = _rmem(lab)
    assert all(v != RMEM_SMALL for v in before.values())
    profile_path, logs = _tee_profile(lab, tmp_path)
    out = tmp_path / "s.jsonl"
    proc = _abtui(tmp_path, "run", str(profile_path), "--headless", "--duration", "60",
                  "--out", str(out), "--set", f"tcp_rmem={RMEM_SMALL}", "--set",
                  "tunnel=vxlan")
    try:
        deadline = time.monotonic() + 30
        while time.monotonic() < deadline and (
                not out.exists() or len(_interval_events(out)) < 8):
            time.sleep(0.2)
        assert out.exists() and len(_interval_events(out)) >= 8, proc.stderr
        during, tunnels = _rmem(lab), _vxlans(lab)
        stray = stray_pids(lab)
        proc.kill()
        killed = time.time()
        proc.wait(timeout=10)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
    assert during == dict.fromkeys(before, RMEM_SMALL)
    assert len(tunnels) == 4, tunnels  # both hosts of both pairs
    assert {c for procs in stray.values() for _, c in procs} == {"iperf3", "ping"}
    time.sleep(1.5)  # what the hosts print meanwhile is not the journal's to hold
    events = load_events(out)
    interval = 1.0  # the lab profile's
    kept, printed = {}, {}
    for pair in ("A", "B"):
        ivs = [e for e in events if e.kind is EventKind.INTERVAL and e.pair == pair]
        (run,) = {e.payload.run for e in ivs}
        start = next(e for e in events if e.kind is EventKind.RUN_START
                     and e.payload.run == run)
        config = start.payload.config  # every knob as the hosts had it, with the two set
        assert set(config) == {k.name for k in load_profile(lab.profile_path).knobs}
        assert (config["tcp_rmem"], config["tunnel"]) == (RMEM_SMALL, "vxlan")
        assert start.payload.target != next(p for p in load_profile(lab.profile_path).pairs
                                            if p.label == pair).target
        assert_contiguous([e.record() for e in ivs])
        # the journal holds exactly what iperf3 printed on the sender, in order...
        sender = next(p for p in load_profile(lab.profile_path).pairs if p.label == pair).sender
        on_host = _host_intervals(logs / f"{sender}.log")
        journal = [(e.payload.start, e.payload.end, e.payload.bytes,
                    e.payload.bits_per_second) for e in ivs]
        assert journal == on_host[:len(journal)], (journal, on_host)
        # ...up to the kill: what the host printed before it, less the interval in flight
        printed_before = [iv for iv in on_host if start.t + iv[1] < killed]
        missing = printed_before[len(journal):]
        assert len(missing) <= 1, f"pair {pair}: {missing} printed on {sender} but not kept"
        in_flight = killed - (start.t + ivs[-1].payload.end)
        assert in_flight < 2 * interval, f"pair {pair}: {in_flight:.2f} s lost before the kill"
        kept[pair], printed[pair] = len(ivs), len(printed_before)
    # the next start offers recovery
    offered = _abtui(tmp_path, "run", str(lab.profile_path), "--headless", "--duration", "0")
    _, err = offered.communicate(timeout=30)
    assert offered.returncode == 2
    assert "left changes on" in err and "abtui recover" in err, err
    t0 = time.monotonic()
    rec = _abtui(tmp_path, "recover")
    said, err = rec.communicate(timeout=60)
    recovered_s = time.monotonic() - t0
    assert rec.returncode == 0, said + err
    assert sum("restored net.ipv4.tcp_rmem" in line for line in said.splitlines()) == 2, said
    assert sum("removed tunnel" in line for line in said.splitlines()) == 4, said
    assert _rmem(lab) == before
    assert _vxlans(lab) == {}
    assert stray_pids(lab, ("iperf3", "ping", "tee", "iperf3-tee")) == {}
    again = _abtui(tmp_path, "recover")
    said, _ = again.communicate(timeout=30)
    assert (again.returncode, said.strip()) == (0, "nothing to recover")
    reliability.row(
        intervals_kept=sum(kept.values()),
        printed_on_hosts_before_kill=sum(printed.values()), recover_s=recovered_s)


@pytest.mark.reliability(
    "6", "a host key changed",
    "`abtui run` refuses with the host and the known_hosts line; knobs on the other hosts, "
    "tunnels and processes untouched; nothing left to recover")
def test_changed_host_key_refuses_the_run_and_touches_no_host(lab: Lab, tmp_path: Path,
                                                              reliability: Reliability):
    """known_hosts holds another key for B's receiver (as after a reinstall): `abtui run`
    refuses with one line naming the host and the known_hosts line, and changes nothing on
    any host (the --set knobs are untouched on the other three, no tunnel, no iperf3)."""
    victim = lab.hosts(2)[3].alias
    known = tmp_path / "known_hosts"
    subprocess.run(["ssh-keygen", "-q", "-t", "ed25519", "-N", "", "-f", str(tmp_path / "k")],
                   check=True)
    other = (tmp_path / "k.pub").read_text().split()[:2]
    lines = lab.known_hosts.read_text().splitlines()
    line_no = next(i for i, ln in enumerate(lines, 1) if ln.split()[0].startswith(victim))
    lines[line_no - 1] = " ".join([lines[line_no - 1].split()[0], *other])
    known.write_text("\n".join(lines) + "\n")
    config = tmp_path / "ssh_config"
    config.write_text(lab.ssh_config.read_text().replace(str(lab.known_hosts), str(known)))
    profile = tmp_path / "p.toml"
    profile.write_text(lab.profile_path.read_text().replace(str(lab.ssh_config), str(config))
                       .replace(str(lab.known_hosts), str(known)))
    wmem = {h.alias: ns_exec(lab, h.alias, "sysctl", "-n", "net.ipv4.tcp_wmem")
            for h in lab.hosts(2)}
    rmem = _rmem(lab)
    proc = _abtui(tmp_path, "run", str(profile), "--headless", "--duration", "5", "--set",
                  "tcp_wmem=4096 16384 65536", "--set", f"tcp_rmem={RMEM_SMALL}", "--set",
                  "tunnel=vxlan", "--out", str(tmp_path / "s.jsonl"))
    _, err = proc.communicate(timeout=30)
    assert proc.returncode == 1, err
    assert "Traceback" not in err
    assert f"{victim}: host key of {victim} has CHANGED: {known} line {line_no}" in err, err
    assert "nothing was changed on any host" in err
    assert {h.alias: ns_exec(lab, h.alias, "sysctl", "-n", "net.ipv4.tcp_wmem")
            for h in lab.hosts(2)} == wmem
    assert _rmem(lab) == rmem and _vxlans(lab) == {} and stray_pids(lab) == {}
    assert not list((tmp_path / "state").glob("abtui/undo/*.jsonl"))
    reliability.row(exit_code=proc.returncode)


class Soak:
    """Counts what the engine emits without keeping it (the session file keeps it)."""

    def __init__(self) -> None:
        self.count: dict[str, int] = {}
        self.last_end: dict[str, float] = {}
        self.holes: list[str] = []
        self.runs: set[str] = set()
        self.knobs = 0
        self.errors: list[str] = []

    def __call__(self, event: Event) -> None:
        if event.kind is EventKind.INTERVAL:
            run, d = event.payload.run, event.record()
            self.runs.add(run)
            if abs(self.last_end.get(run, 0.0) - d["start"]) > 0.01:
                self.holes.append(f"{run}: {self.last_end.get(run)} -> {d['start']}")
            self.last_end[run] = d["end"]
            self.count[event.pair or ""] = self.count.get(event.pair or "", 0) + 1
        elif event.kind is EventKind.KNOB:
            self.knobs += 1
        elif event.kind in (EventKind.ERROR, EventKind.KNOB_ERROR):
            self.errors.append(str(event.payload.message))


def _rss_kib() -> int:
    status = Path("/proc/self/status").read_text()
    return int(next(ln.split()[1] for ln in status.splitlines() if ln.startswith("VmRSS:")))


SOAK_SECONDS = float(os.environ.get("ABTUI_SOAK_SECONDS", "40"))


@pytest.mark.slow  # a long run: `make soak` (600 s) and the slow tier (40 s)
@pytest.mark.timeout(int(SOAK_SECONDS) + 120)
@pytest.mark.reliability(
    "8", f"soak: 2 pairs at 0.5 s, knob flipped every 10 s, {SOAK_SECONDS:g} s",
    "no interval lost (contiguous, count ≈ duration / 0.5 per pair, all in the session file); "
    "every flip a KNOB event; controller memory flat after warm-up")
async def test_soak_two_pairs_with_a_knob_flipped_every_10_s(lab: Lab, tmp_path: Path,
                                                            reliability: Reliability):
    """2 pairs continuous at 0.5 s, tcp_wmem flipped every 10 s, for ABTUI_SOAK_SECONDS
    (40 by default; `make soak`: 600): no interval lost, every flip recorded, and the
    controller's memory flat once warmed up (traced Python memory and RSS)."""
    import tracemalloc

    seconds = SOAK_SECONDS
    profile = lab_profile(lab, interval=INTERVAL)
    soak = Soak()
    # no Recorder (it keeps every event and raw line): counted here, kept in the file
    engine = Engine(profile, journal=UndoJournal(tmp_path / "undo"))
    engine.subscribe(soak)
    path = tmp_path / "soak.jsonl"
    writer = open_session_writer(path, profile, compact=False)
    engine.subscribe(writer.write)
    wmem = next(k for k in profile.knobs if k.name == "tcp_wmem").values
    flips = 0
    samples: list[tuple[float, int, int]] = []
    tracemalloc.start()
    try:
        await engine.connect()
        await engine.start("continuous")
        t0 = time.monotonic()
        next_flip = t0 + 10
        while (elapsed := time.monotonic() - t0) < seconds:
            await asyncio.sleep(0.25)
            if time.monotonic() >= next_flip and elapsed < seconds - 2:
                flips += 1
                await engine.set_knob("tcp_wmem", wmem[flips % 2])
                next_flip += 10
            if elapsed >= 10 and (not samples or elapsed - samples[-1][0] >= 5):
                # Python's own regex cache (bounded at 512 patterns) fills as asyncssh compiles
                # each command's sentinel: emptied first, so only what abtui keeps is measured
                re.purge()
                samples.append((elapsed, tracemalloc.get_traced_memory()[0], _rss_kib()))
        ran = time.monotonic() - t0
    finally:
        await engine.shutdown()
        writer.close()
        tracemalloc.stop()
    assert not soak.errors, soak.errors
    assert soak.knobs == flips >= int(seconds // 10) - 1
    assert not soak.holes, soak.holes[:5]
    assert len(soak.runs) == 2  # one run per pair all along: a sysctl flip restarts nothing
    expected = ran / INTERVAL
    for pair in ("A", "B"):
        assert soak.count.get(pair, 0) >= expected - 3, (pair, soak.count, expected)
    saved = sum(1 for e in load_events(path) if e.kind is EventKind.INTERVAL)
    assert saved == sum(soak.count.values())
    # memory: from the first sample (warmed up, 10 s in) to the last
    traced_growth = samples[-1][1] - samples[0][1]
    rss_growth = samples[-1][2] - samples[0][2]
    per_interval = traced_growth / max(1, sum(soak.count.values()))
    assert traced_growth < 128 * 1024, f"traced memory grew {traced_growth} B: {samples}"
    reliability.row(
        intervals=dict(soak.count), expected_per_pair=round(expected), flips=flips,
        traced_growth_kib=round(traced_growth / 1024, 1), rss_growth_kib=rss_growth,
        traced_bytes_per_interval=round(per_interval, 1))
