"""Issue 45 on the lab, with real processes: a setting changed out of band mid-session (a
colleague's `sysctl -w` in a host's namespace) is recorded as drift and left as found by a
normal end and by `abtui recover` after a SIGKILL; a SIGKILLed run's iperf3 never runs beside
the next session, which ends it first and says so.

Processes are found and killed by PID only (`ip netns pids`): PID namespaces are shared with
other labs on the machine.
"""

from __future__ import annotations

import os
import subprocess
import sys
import threading
import time
from collections.abc import Iterable
from pathlib import Path

import pytest

from abtui.core.events import EventKind
from abtui.hosts.undo import pending_recovery
from abtui.lab.netns import Lab
from abtui.lab.profile import TCP_RMEM_VALUES
from abtui.sessions.reader import load_events
from abtui.sessions.session import Session
from tests.lab.engine_kit import stray_pids, wait_for
from tests.lab.namespaces import netns_processes, ns_exec
from tests.reliability import Reliability

pytestmark = [pytest.mark.lab, pytest.mark.usefixtures("no_strays")]
ROOT = Path(__file__).resolve().parents[2]
SMALL = TCP_RMEM_VALUES[1]  # what abtui sets (`--set`)
FOREIGN = "4096 65536 1048576"  # what a colleague sets meanwhile: none of the profile's values
KEY = "net.ipv4.tcp_rmem"
DRIFT_ROW = (
    "21", "a setting changed out of band mid-session (a colleague's `sysctl -w` of tcp_rmem "
    "on one receiver), then a normal end; again, then SIGKILL and `abtui recover`",
    "a drift event (host, setting, abtui's value, the found one, the window it changed in) "
    "within seconds; the pair's phase split there, the next named by the host's value; the "
    "end sets the other receiver back and leaves the colleague's value, saying so; after a "
    "SIGKILL `recover` leaves it too (found as drift, or never read back: none of abtui's "
    "values), one line each, and sets abtui's own back; the killed session's journal and "
    "report keep the drift")


def _abtui(tmp_path: Path, *args: str) -> subprocess.Popen[str]:
    env = {**os.environ, "XDG_STATE_HOME": str(tmp_path / "state"), "PYTHONPATH": str(ROOT)}
    return subprocess.Popen([sys.executable, "-m", "abtui", *args], cwd=ROOT, env=env,
                            text=True, stdout=subprocess.PIPE, stderr=subprocess.PIPE)


def _receivers(lab: Lab) -> list[str]:
    return [h.alias for h in lab.hosts(2) if h.role == "receiver"]


def _rmem(lab: Lab) -> dict[str, str]:
    return {a: " ".join(ns_exec(lab, a, "sysctl", "-n", KEY).split()) for a in _receivers(lab)}


def _colleague(lab: Lab, alias: str, value: str) -> None:
    """Someone else's `sysctl -w` on the host, not through abtui."""
    ns_exec(lab, alias, "sysctl", "-q", "-w", f"{KEY}={value}")


def _count(out: Path, kind: str) -> int:
    return out.read_text().count(f'"kind":"{kind}"') if out.exists() else 0


def _drifts(out: Path) -> list:
    return [e for e in load_events(out) if e.kind is EventKind.DRIFT]


def _kill(proc: subprocess.Popen[str]) -> None:
    if proc.poll() is None:
        proc.kill()
        proc.wait(timeout=10)


@pytest.fixture
def rmem_kept(lab: Lab):  # type: ignore[no-untyped-def]
    """The receivers' tcp_rmem as it was, put back after the test whatever happened."""
    before = _rmem(lab)
    assert all(v not in (SMALL, FOREIGN) for v in before.values()), before
    yield before
    for alias, value in before.items():
        _colleague(lab, alias, value)


@pytest.mark.reliability(*DRIFT_ROW)
def test_a_setting_changed_out_of_band_is_drift_and_a_normal_end_leaves_it(
        lab: Lab, tmp_path: Path, rmem_kept: dict[str, str], reliability: Reliability):
    """tcp_rmem set by abtui on both receivers; mid-session a colleague sets another value
    on one of them: the session records a drift event (host, setting, abtui's value, the
    found one, when), its pair's phase splits there (the next phase named by the host's
    value, what ran meanwhile in no phase), the run says so, and its end sets the other
    receiver back while leaving the colleague's value, saying so."""
    changed, other = _receivers(lab)
    out = tmp_path / "s.jsonl"
    proc = _abtui(tmp_path, "run", str(lab.profile_path), "--headless", "--duration", "14",
                  "--out", str(out), "--set", f"tcp_rmem={SMALL}")
    try:
        wait_for(lambda: _count(out, "interval") >= 6, timeout=30)
        assert _rmem(lab) == dict.fromkeys(rmem_kept, SMALL)
        t_changed = time.time()
        _colleague(lab, changed, FOREIGN)
        _, err = proc.communicate(timeout=60)
    finally:
        _kill(proc)
    assert proc.returncode == 0, err
    (drift,) = _drifts(out)
    d = drift.payload
    assert (drift.host, d.key, d.expected, d.value) == (changed, KEY, SMALL, FOREIGN)
    assert d.since is not None and d.until is not None
    assert d.since - 0.5 <= t_changed <= d.until  # the window holds the change
    assert d.until - t_changed < 4.0  # seen within a couple of seconds
    pair = next(p for p in Session.load(out).phases if p.config.get("tcp_rmem") == FOREIGN)
    assert drift.payload.pairs == [pair.pair]
    session = Session.load(out)
    before = [p for p in session.phases if p.pair == pair.pair and p.config["tcp_rmem"] == SMALL]
    assert before and before[-1].end is not None and before[-1].end <= d.until
    assert "changed out of band" in err and changed in err, err
    assert f"{changed}: tcp_rmem left as it is: reads '{FOREIGN}', not the '{SMALL}' abtui " \
        "set (set by someone else since)" in err, err
    assert _rmem(lab) == {changed: FOREIGN, other: rmem_kept[other]}
    assert pending_recovery(tmp_path / "state" / "abtui" / "undo") == []
    report = _abtui(tmp_path, "export", str(out), "--format", "md")
    md, _ = report.communicate(timeout=60)
    assert report.returncode == 0
    flat = " ".join(md.split())  # the report's prose is wrapped at 80 columns
    assert flat.count("changed out of band") == 1, md
    assert f"on {changed} changed out of band to '{FOREIGN}' (abtui had set '{SMALL}'), by " \
        "someone else between " in flat, md
    reliability.row(drift_seen_after_s=d.until - t_changed, window_s=d.until - d.since)


@pytest.mark.reliability(*DRIFT_ROW)
def test_sigkill_then_recover_leaves_the_colleagues_value_and_says_so(
        lab: Lab, tmp_path: Path, rmem_kept: dict[str, str], reliability: Reliability):
    """A colleague's value found by the session (drift) and one set just before the SIGKILL
    (never read back): `abtui recover` reads each setting first and leaves both, one line
    each, while it still sets back what abtui's own values hold."""
    first, second = _receivers(lab)
    out = tmp_path / "s.jsonl"
    proc = _abtui(tmp_path, "run", str(lab.profile_path), "--headless", "--duration", "60",
                  "--out", str(out), "--set", f"tcp_rmem={SMALL}")
    try:
        wait_for(lambda: _count(out, "interval") >= 4, timeout=30)
        _colleague(lab, first, FOREIGN)
        wait_for(lambda: _count(out, "drift") >= 1, timeout=10)
        proc.kill()
        proc.wait(timeout=10)
    finally:
        _kill(proc)
    assert _rmem(lab) == {first: FOREIGN, second: SMALL}
    rec = _abtui(tmp_path, "recover")
    said, err = rec.communicate(timeout=60)
    assert rec.returncode == 0, said + err
    lines = [line for line in said.splitlines() if KEY in line]
    assert len(lines) == 2, said
    (left,) = [line for line in lines if line.startswith(f"ok   {first}: left ")]
    assert "set by someone else" in left and "as it is" in left, left
    assert any(line.startswith(f"ok   {second}: restored {KEY}") for line in lines), said
    assert _rmem(lab) == {first: FOREIGN, second: rmem_kept[second]}
    # the killed session's journal keeps the drift, and its report says it, after recover
    (drift,) = _drifts(out)
    assert (drift.host, drift.payload.key, drift.payload.expected, drift.payload.value) == \
        (first, KEY, SMALL, FOREIGN)
    report = _abtui(tmp_path, "export", str(out), "--format", "md")
    md, _ = report.communicate(timeout=60)
    assert report.returncode == 0
    assert f"on {first} changed out of band to '{FOREIGN}' (abtui had set '{SMALL}')" in \
        " ".join(md.split()), md

    # never read back: a value none of those abtui wrote is someone else's too
    out2 = tmp_path / "s2.jsonl"
    proc = _abtui(tmp_path, "run", str(lab.profile_path), "--headless", "--duration", "60",
                  "--out", str(out2), "--set", f"tcp_rmem={SMALL}")
    try:
        wait_for(lambda: _count(out2, "interval") >= 2, timeout=30)
        _colleague(lab, second, FOREIGN)
        proc.kill()  # at once: before any read-back
        proc.wait(timeout=10)
    finally:
        _kill(proc)
    assert _drifts(out2) == []
    rec = _abtui(tmp_path, "recover")
    said, err = rec.communicate(timeout=60)
    assert rec.returncode == 0, said + err
    (left,) = [line for line in said.splitlines() if line.startswith(f"ok   {second}: left ")]
    assert "not a value abtui set" in left, said
    assert _rmem(lab)[second] == FOREIGN
    reliability.row(left_by_recover=2)


def _iperf3_groups(lab: Lab) -> dict[int, tuple[str, str]]:
    """The live iperf3 processes on the lab hosts: pid -> (host, command line)."""
    return {pid: (h.alias, cmd) for h in lab.hosts(2)
            for pid, comm, cmd, state in netns_processes(h.netns)
            if comm == "iperf3" and not state.startswith("Z")}


class _Alive:
    """A thread that reads /proc every 20 ms and keeps, per PID, the last time it saw that
    process (the one it was when watched: same start time) alive and not a zombie."""

    def __init__(self, pids: Iterable[int]) -> None:
        self.start = {pid: self._stat(pid)[1] for pid in pids}
        self.last = {pid: time.time() for pid in self.start}
        self._done = threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True)
        self._thread.start()

    @staticmethod
    def _stat(pid: int) -> tuple[str, str]:
        """(state, start time in ticks), or ("", "") for a process gone."""
        try:
            fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
        except OSError:
            return "", ""
        return fields[0], fields[19]

    def _run(self) -> None:
        while not self._done.is_set():
            t = time.time()
            for pid, began in self.start.items():
                state, start = self._stat(pid)
                if state and not state.startswith("Z") and start == began:
                    self.last[pid] = t
            self._done.wait(0.02)

    def stop(self) -> dict[int, float]:
        self._done.set()
        self._thread.join(timeout=5)
        return self.last


@pytest.mark.reliability(
    "22", "controller SIGKILLed mid-run, its iperf3 left sending; the next `abtui run`",
    "each iperf3 client the dead controller's journal recorded is ended by its process group "
    "(verified: its program and start time) before the next session measures, one line each; "
    "none runs beside it (none alive, read every 20 ms, after the next session's first "
    "release); the next session measures on port 5201, exit 0")
def test_a_sigkilled_runs_iperf3_is_ended_before_the_next_session_measures(
        lab: Lab, tmp_path: Path, reliability: Reliability):
    """After a SIGKILL the killed run's iperf3 keeps going on the hosts (a `-t 3600`-like
    run); the next `abtui run` ends each one the dead controller's journal recorded, by its
    process group, says so, and measures on the port it always uses, with none of them
    beside it."""
    out = tmp_path / "s.jsonl"
    proc = _abtui(tmp_path, "run", str(lab.profile_path), "--headless", "--duration", "600",
                  "--out", str(out))
    try:
        wait_for(lambda: _count(out, "interval") >= 4, timeout=30)
        proc.kill()
        proc.wait(timeout=10)
    finally:
        _kill(proc)
    time.sleep(1.0)
    orphans = _iperf3_groups(lab)
    assert orphans, "the killed run's iperf3 ended by itself: nothing to check"
    assert any(" -c " in f" {cmd} " for _host, cmd in orphans.values()), orphans
    out2 = tmp_path / "s2.jsonl"
    watch = _Alive(orphans)  # when each orphan was last seen alive, read every 20 ms
    nxt = _abtui(tmp_path, "run", str(lab.profile_path), "--headless", "--duration", "4",
                 "--out", str(out2))
    try:
        wait_for(lambda: _count(out2, "interval") >= 1, timeout=40)
        alive = set(_iperf3_groups(lab))
        _, err = nxt.communicate(timeout=60)
    finally:
        _kill(nxt)
        last_alive = watch.stop()
    assert nxt.returncode == 0, err
    assert not (alive & set(orphans)), "an orphaned iperf3 ran beside the next session"
    released = min(e.t for e in load_events(out2) if e.kind is EventKind.RUN_START)
    late = {pid: round(t - released, 3) for pid, t in last_alive.items() if t >= released}
    assert not late, f"orphaned iperf3 alive after the next session's first release (s): {late}"
    ended = [line for line in err.splitlines() if "left by a dead abtui" in line]
    senders = {h.alias for h in lab.hosts(2) if h.role == "sender"}
    assert {line.split()[1].rstrip(":") for line in ended
            if "ended iperf3 client" in line} == senders, err  # (its server ends with it)
    assert all("before measuring" in line and "error" not in line for line in ended), ended
    marks = [e for e in load_events(out2) if e.kind is EventKind.MARK and e.host]
    assert {e.host for e in marks if "ended iperf3 client" in e.payload.text} == senders
    starts = [e.payload for e in load_events(out2) if e.kind is EventKind.RUN_START]
    assert starts and all("5201" in " ".join(s.argv or []) for s in starts), starts
    assert stray_pids(lab) == {}
    reliability.row(orphaned_iperf3=len(orphans), clients_ended=len(senders), port_used=5201,
                    last_orphan_ended_before_release_s=round(
                        released - max(last_alive.values()), 3))


def test_an_alternation_whose_knob_someone_else_sets_stops_and_leaves_it(
        lab: Lab, tmp_path: Path, rmem_kept: dict[str, str]):
    """`abtui run --alternate tcp_rmem=…`: a colleague sets tcp_rmem on one receiver mid-way
    (here in the first stretch, whose value is the hosts' own: abtui read it, wrote nothing,
    and the label names it all the same; on CI's kernel the lab's default is that value).
    The next boundary reads it back (a drift event, the stretch left out), abtui never writes
    over it: the next flip is refused and the alternation stops (exit 1) with that line, and
    the end leaves the colleague's value while setting the other receiver back."""
    changed, other = _receivers(lab)
    big, small = TCP_RMEM_VALUES
    for alias in (changed, other):  # the first value is the hosts' own: abtui writes it not
        _colleague(lab, alias, big)  # (rmem_kept sets the kernel's default back)
    out = tmp_path / "s.jsonl"
    proc = _abtui(tmp_path, "run", str(lab.profile_path), "--headless", "--alternate",
                  f"tcp_rmem={big},{small}", "--every", "2", "--max-runs", "6", "--seed", "7",
                  "--out", str(out))
    try:
        wait_for(lambda: _count(out, "interval") >= 4, timeout=40)
        _colleague(lab, changed, FOREIGN)
        _, err = proc.communicate(timeout=90)
    finally:
        _kill(proc)
    assert proc.returncode == 1, err
    (drift,) = _drifts(out)
    assert drift.host == changed and drift.payload.value == FOREIGN
    assert "changed out of band" in err, err
    if drift.payload.expected == big:  # found in a stretch at the hosts' own value
        assert drift.payload.read and f"(abtui had read '{big}')" in err, err
    refused = [line for line in err.splitlines() if line.startswith("abtui: --alternate:")]
    assert len(refused) == 1 and f"{changed}: knob tcp_rmem=" in refused[0], err
    assert f"was set to '{FOREIGN}' by someone else" in refused[0] and \
        "abtui no longer sets it" in refused[0], refused
    assert _rmem(lab) == {changed: FOREIGN, other: big}
    assert pending_recovery(tmp_path / "state" / "abtui" / "undo") == []
