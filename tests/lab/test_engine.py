"""The engine on real lab hosts: real sshd, iperf3 3.12 and ping in network namespaces.

Each test checks, after it ran (failed or not), that no iperf3 or ping is left on any lab host.
"""

from __future__ import annotations

import asyncio
import itertools
import json
import os
import re
import signal
import subprocess
from pathlib import Path

import pytest

from abtui.core.events import EventKind
from abtui.core.model import Pair, Plan, Role, Watch
from abtui.core.pids import pid_alive
from abtui.hosts.undo import UndoJournal
from abtui.lab.netns import Lab
from abtui.measure.engine.front import Engine
from abtui.measure.headless import run_headless
from abtui.remote.lines import OutputLines
from abtui.sessions.reader import load_events
from tests.lab.engine_kit import (
    UNIT,
    WMEM,
    Recorder,
    assert_matches_printed,
    flip_while_measuring,
    headless_run,
    interrupt,
    lab_profile,
    make_engine,
    run_plan,
    stray_pids,
    tunnel_profile,
    until,
)
from tests.lab.namespaces import netns_processes, ns_exec, sshd_sessions
from tests.reliability import Reliability

pytestmark = [pytest.mark.lab, pytest.mark.usefixtures("no_strays")]


async def test_two_pairs_continuous_match_iperf3_and_record_the_skew(lab: Lab):
    rec = Recorder()
    profile = lab_profile(lab, ping=True)
    profile.watches = [Watch(name="mem", role=Role.SENDER, sysctl="net.ipv4.tcp_*mem",
                             interval=0.4),
                       Watch(name="fin", role=Role.RECEIVER, sysctl="net.ipv4.tcp_fin_timeout",
                             interval=0.4, pairs=("B",))]
    engine = make_engine(profile, rec, chunk_seconds=2)
    try:
        await engine.connect()
        await engine.start("continuous")
        # the 2 s chunk ends and is restarted: wait for the second run of each pair
        await until(lambda: {e.pair for e in rec.of(EventKind.RUN_START)[2:]} == {"A", "B"})
    finally:
        await engine.shutdown()
    starts = rec.of(EventKind.RUN_START)
    first = {e.pair: e.record() for e in starts[:2]}
    assert set(first) == {"A", "B"}
    assert all(isinstance(d["host_clock"], float) for d in first.values())
    (skew,) = [e.record() for e in rec.of(EventKind.SKEW)][:1]
    assert set(skew["clocks"]) == {"A", "B"} and 0 <= skew["skew_ms"] < 1000
    assert skew["skew_ms"] == pytest.approx(
        abs(skew["clocks"]["A"] - skew["clocks"]["B"]) * 1e3)
    assert engine.runs.skews[0] == skew["skew_ms"]
    for pair in ("A", "B"):
        runs = [e.payload.run for e in starts if e.pair == pair]
        assert len(runs) >= 2, f"pair {pair}: the first chunk was not followed by another"
        ended = rec.run_end(runs[0])
        assert ended["status"] == "ok", ended
        assert ended["summary"] is not None
        assert_matches_printed(rec, runs[0])  # with its sender/receiver summary
        assert len(rec.intervals(runs[0])) == 4  # 2 s at 0.5 s
        assert rec.run_end(runs[-1])["status"] == "stopped"
        # the next chunk was prepared ahead: it starts right after the first one ended
        end_t = next(e.t for e in rec.of(EventKind.RUN_END, pair) if e.payload.run == runs[0])
        start_t = next(e.t for e in starts if e.payload.run == runs[1])
        assert 0 <= start_t - end_t < 0.3, start_t - end_t
        assert rec.of(EventKind.PING, pair), f"pair {pair}: no ping replies"
    assert rec.events[-1].kind is EventKind.SESSION_END
    # a glob is one series per sysctl the host lists (tcp_mem is not per namespace)
    watched = {(e.pair, e.host, e.payload.name) for e in rec.of(EventKind.WATCH)}
    hosts = lab.hosts(2)
    assert watched == {(pair, host, f"mem:net.ipv4.tcp_{m}")
                       for pair, host in (("A", hosts[0].alias), ("B", hosts[2].alias))
                       for m in ("rmem", "wmem")} | {("B", hosts[3].alias, "fin")}
    fin = [e.payload.value for e in rec.of(EventKind.WATCH) if e.payload.name == "fin"]
    assert fin and all(v == float(ns_exec(lab, hosts[3].alias, "sysctl", "-n",
                                          "net.ipv4.tcp_fin_timeout")) for v in fin)


async def test_plan_reverse_parallel_and_udp(lab: Lab):
    profile = lab_profile(lab, duration=1)
    profile.pairs[0] = Pair(**{**_pair_dict(profile.pairs[0]), "overrides": {"reverse": True}})
    profile.pairs[1] = Pair(**{**_pair_dict(profile.pairs[1]), "overrides": {"parallel": 2}})
    senders = {"A": lab.hosts(2)[0], "B": lab.hosts(2)[2]}
    ran: dict[str, str] = {}

    def clients() -> bool:  # each sender's iperf3 client, as the host runs it
        for pair, host in senders.items():
            for _pid, comm, cmdline, _state in netns_processes(host.netns):
                if comm == "iperf3" and " -c " in cmdline:
                    ran[pair] = cmdline
        return len(ran) == 2

    async def during(rec: Recorder, engine: Engine) -> None:
        await until(lambda: len(rec.of(EventKind.RUN_START)) == 2)
        await until(clients, timeout=3.0)

    rec, _ = await run_plan(profile, during)
    starts = {e.pair: e.record() for e in rec.of(EventKind.RUN_START)}
    # RUN_START records the command exactly as it ran (no stdbuf or shell around it)
    assert {pair: " ".join(d["argv"]) for pair, d in starts.items()} == ran
    assert "-R" in starts["A"]["argv"] and "-P" in starts["B"]["argv"]
    assert starts["A"]["options"]["reverse"] is True
    assert starts["B"]["options"]["parallel"] == 2
    assert any("-R" in line or "Reverse mode" in line for line in rec.raw[starts["A"]["run"]])
    assert any(line.startswith("[SUM]") for line in rec.raw[starts["B"]["run"]])
    for pair in ("A", "B"):
        run = starts[pair]["run"]
        assert rec.run_end(run)["status"] == "ok"
        assert_matches_printed(rec, run)
    progress = [e.record() for e in rec.of(EventKind.PROGRESS)]
    assert progress[0]["done"] == 0 and progress[-1]["done"] == progress[-1]["total"] == 1

    udp = lab_profile(lab, duration=1, udp=True, bitrate="20M")
    rec, _ = await run_plan(udp)
    for start in rec.of(EventKind.RUN_START):
        run = start.payload.run
        assert rec.run_end(run)["status"] == "ok"
        # the intervals are the server's lines (what arrived): tests/lab/test_udp.py
        assert all(d["packets"] > 0 for d in rec.intervals(run))
        # 20 Mbit/s asked: the intervals carry about that
        rates = [d["bits_per_second"] for d in rec.intervals(run)]
        assert all(15e6 < r < 25e6 for r in rates), rates


def _pair_dict(pair: Pair) -> dict:
    return {f: getattr(pair, f) for f in Pair.__slots__}  # type: ignore[attr-defined]


async def test_knob_flipped_mid_run_gives_two_phases_and_is_restored(lab: Lab):
    snd = [h.alias for h in lab.hosts(2) if h.role == "sender"]
    original = {a: ns_exec(lab, a, "sysctl", "-n", "net.ipv4.tcp_wmem").split() for a in snd}
    rec = Recorder()
    engine = make_engine(lab_profile(lab, ping=True), rec)  # ping gathered on the host
    try:
        await engine.connect()
        await engine.start("continuous")
        await asyncio.sleep(1.3)
        await engine.set_knob("tcp_wmem", WMEM[1])
        during = {a: ns_exec(lab, a, "sysctl", "-n", "net.ipv4.tcp_wmem").split() for a in snd}
        journal = engine.hosts.journal.path.read_text()  # type: ignore[union-attr]
        await asyncio.sleep(1.3)
    finally:
        await engine.shutdown()
    # what `abtui recover` would need was journaled; all set back, so the journal is gone
    assert '"op":"original"' in journal.replace(" ", "")
    assert journal.replace(" ", "").count('"op":"pgid"') >= 4  # servers and clients
    assert not engine.hosts.journal.path.exists()  # type: ignore[union-attr]
    assert during == {a: WMEM[1].split() for a in snd}
    after = {a: ns_exec(lab, a, "sysctl", "-n", "net.ipv4.tcp_wmem").split() for a in snd}
    assert after == original
    (knob,) = rec.of(EventKind.KNOB)
    assert knob.payload.pairs == ["A", "B"] and knob.payload.hosts == snd
    assert len(rec.of(EventKind.RESTORE)) == 2
    for pair in ("A", "B"):
        phases = [e.record() for e in rec.of(EventKind.PHASE, pair)]
        assert [p["phase"] for p in phases] == [0, 1]
        # the first phase has what the hosts had (read on connect), the second the flip
        assert phases[0]["config"] == {"tcp_wmem": " ".join(original[snd[0]])}
        assert phases[1]["config"] == {"tcp_wmem": WMEM[1]}
        ivs = [e for e in rec.of(EventKind.INTERVAL, pair)]
        clean = [e for e in ivs if not e.payload.straddles]
        assert {e.payload.phase for e in clean} == {0, 1}
        # an interval counted in a phase was measured wholly inside it
        for e in clean:
            span = (e.t - (e.payload.end - e.payload.start), e.t)
            phase = phases[e.payload.phase]
            assert phase["start"] - 0.05 <= span[0] and span[1] <= phase["end"] + 0.1, e
        # one run went on through the change: the knob does not restart iperf3
        assert len({e.payload.run for e in ivs}) == 1
        # a ping reply is dated when it came, not when its batch crossed the link (a second
        # at a time), and counted in the phase of that moment
        pings = rec.of(EventKind.PING, pair)
        assert {e.payload.phase for e in pings} == {0, 1}
        gaps = [b.t - a.t for a, b in itertools.pairwise(pings)]
        assert all(0.1 < gap < 0.35 for gap in gaps), gaps  # 0.2 s apart, as ping sent them
        for e in pings:
            phase = phases[e.payload.phase]
            assert phase["start"] - 0.01 <= e.t <= phase["end"] + 0.06, (e, phase)


@pytest.mark.reliability(
    "4", "the iperf3 port busy on a receiver",
    "another port is used (5202), that run is ok and matches what iperf3 printed; the iperf3 "
    "holding the port is untouched; the other pair's own failure stays its own")
async def test_errors_end_one_pair_and_the_other_goes_on(lab: Lab, reliability: Reliability):
    """A refused connection on A; on B the profile's port is taken, so another is used (and
    the iperf3 holding it is left alone)."""
    profile = lab_profile(lab, duration=1)
    snd_a = lab.hosts(2)[0]
    profile.pairs[0] = Pair(**{**_pair_dict(profile.pairs[0]), "target": snd_a.data_address})
    rcv_b = lab.hosts(2)[3]
    squatter = subprocess.Popen(["ip", "netns", "exec", rcv_b.netns, "iperf3", "-s", "-p",
                                 "5201"], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        await asyncio.sleep(0.3)
        rec, engine = await run_plan(profile)
        squatter_alive = squatter.poll() is None
    finally:
        squatter.terminate()
        squatter.wait()
    starts = {e.pair: e.record() for e in rec.of(EventKind.RUN_START)}
    end_a = rec.run_end(starts["A"]["run"])
    assert end_a["status"] == "error" and "connection refused" in end_a["message"]
    assert any("connection refused" in e.payload.message for e in rec.of(EventKind.ERROR, "A"))
    assert starts["B"]["port"] == 5202
    assert rec.run_end(starts["B"]["run"])["status"] == "ok"
    assert_matches_printed(rec, starts["B"]["run"])
    assert squatter_alive, "the iperf3 that held the port was ended"
    assert engine.failed_runs == 1
    reliability.row(
        port_used=starts["B"]["port"], intervals=len(rec.intervals(starts["B"]["run"])))


async def test_missing_iperf3_and_unreachable_host_are_clear_errors(lab: Lab, tmp_path):
    config = tmp_path / "ssh_config"
    config.write_text(lab.ssh_config.read_text() + "\nHost nowhere-rcv\n"
                      f"    HostName {lab.layout.bridge_address}\n    Port 1\n    User root\n")
    profile = lab_profile(lab, duration=1)
    profile.ssh_config = str(config)
    profile.pairs[1] = Pair(**{**_pair_dict(profile.pairs[1]), "receiver": "nowhere-rcv"})
    profile.test.iperf3 = "iperf3-not-installed"
    rec, engine = await run_plan(profile)
    ends = {e.pair: e.record() for e in rec.of(EventKind.RUN_END)}
    assert "iperf3 is not installed" in ends["A"]["message"]
    assert "nowhere-rcv is not connected" in ends["B"]["message"]
    failed = [e.record() for e in rec.of(EventKind.LINK) if e.host == "nowhere-rcv"]
    assert any(d["state"] == "failed" and "cannot reach nowhere-rcv" in d["message"]
               for d in failed)
    assert engine.failed_runs == 2


async def test_a_stalled_stream_is_flagged_and_ended(lab: Lab):
    snd_a = lab.hosts(2)[0]

    async def freeze(rec: Recorder, _engine: Engine) -> None:
        await until(lambda: rec.of(EventKind.INTERVAL, "A"))
        (pid,) = [p for p, comm in stray_pids(lab).get(snd_a.alias, []) if comm == "iperf3"]
        os.kill(pid, signal.SIGSTOP)  # the client we started freezes: no more intervals

    rec, _ = await run_plan(lab_profile(lab, duration=3), freeze)
    starts = {e.pair: e.record() for e in rec.of(EventKind.RUN_START)}
    end_a = rec.run_end(starts["A"]["run"])
    assert end_a["status"] == "error" and "stalled" in end_a["message"]
    assert any("stalled" in e.payload.message for e in rec.of(EventKind.ERROR, "A"))
    assert rec.run_end(starts["B"]["run"])["status"] == "ok"


async def test_a_link_lost_mid_run_keeps_the_intervals(lab: Lab):
    snd_a = lab.hosts(2)[0]
    reconnected: list[bool] = []

    async def drop(rec: Recorder, engine: Engine) -> None:
        await until(lambda: len(rec.of(EventKind.INTERVAL, "A")) >= 2)
        for pid in sshd_sessions(lab, snd_a.alias):  # our session's sshd, not the daemon
            os.kill(pid, signal.SIGKILL)
        await engine.wait()
        reconnected.append(await engine.hosts.links[snd_a.alias].wait_connected(15))

    rec, _ = await run_plan(lab_profile(lab, duration=3), drop)
    kept = len([e for e in rec.of(EventKind.INTERVAL, "A")])
    assert reconnected == [True]
    starts = {e.pair: e.record() for e in rec.of(EventKind.RUN_START)}
    end_a = rec.run_end(starts["A"]["run"])
    assert end_a["status"] == "incomplete" and "lost mid-run" in end_a["message"]
    assert kept >= 2
    assert rec.run_end(starts["B"]["run"])["status"] == "ok"
    await asyncio.sleep(0.6)  # the orphaned iperf3 dies writing to the dropped channel


async def test_headless_continuous_writes_the_session(lab: Lab, tmp_path):
    out = tmp_path / "session.jsonl"
    lines: list[str] = []

    class Progress:
        def write(self, s: str) -> None:
            lines.append(s)

        def flush(self) -> None:
            pass

    rc = await run_headless(lab_profile(lab), out, duration=1.5, progress=Progress(),
                            journal=UndoJournal(tmp_path / "undo"))
    assert rc == 0
    kinds = [str(e.kind) for e in load_events(out)]
    assert kinds[0] == "session_start" and kinds[-1] == "session_end"
    assert kinds.count("run_start") == 2 and "interval" in kinds and "skew" in kinds
    assert "session written to" in "".join(lines)


def test_headless_cli_ctrl_c_ends_everything(lab: Lab, tmp_path):
    """`abtui run` on the lab's own profile, interrupted: every run stopped, the session
    file complete, nothing left on the hosts (checked by the no_strays fixture)."""

    out = tmp_path / "s.jsonl"
    with headless_run(lab, out) as proc:
        err = interrupt(proc)
    assert proc.returncode == 130, err
    events = load_events(out)
    assert events[-1].kind is EventKind.SESSION_END
    assert events[-1].record() == {"reason": "interrupted"}
    assert sorted(e.payload.status for e in events if e.kind is EventKind.RUN_END) == \
        ["stopped", "stopped"]
    assert "session written to" in err and err.rstrip().endswith("abtui: interrupted")


async def test_a_tunnel_change_restarts_the_pair_against_the_new_target(lab: Lab):
    """A real vxlan tunnel on pair A (abtui.hosts.tunnels): A's run restarts against the tunnel's
    address, B goes on untouched; at the end the tunnel is removed."""
    profile = tunnel_profile(lab)
    rec = Recorder()
    engine = make_engine(profile, rec)
    try:
        await flip_while_measuring(engine, rec, "tunnel", "vxlan", ["A"])
        await until(lambda: len(rec.of(EventKind.RUN_START, "A")) >= 2)
        await until(lambda: rec.of(EventKind.INTERVAL, "A")[-1].payload.run != "A-1")
    finally:
        await engine.shutdown()
    (tunnel,) = rec.of(EventKind.TUNNEL)
    target = tunnel.payload.target
    assert tunnel.pair == "A" and tunnel.payload.type == "vxlan"
    assert target != profile.pairs[0].target
    a_runs = [e.record() for e in rec.of(EventKind.RUN_START, "A")]
    assert [r["target"] for r in a_runs[:2]] == [profile.pairs[0].target, target]
    assert a_runs[1]["config"] == {"tcp_wmem": WMEM[0], "tunnel": "vxlan"}  # as read, + the flip
    assert rec.run_end(a_runs[0]["run"])["status"] == "stopped"
    new = rec.intervals(a_runs[1]["run"])
    assert new and all(d["phase"] == 1 for d in new)
    assert len(rec.of(EventKind.RUN_START, "B")) == 1  # B was not touched
    for h in lab.hosts(1):  # the tunnel is gone
        assert "vxlan" not in ns_exec(lab, h.alias, "ip", "-d", "link", "show")


async def test_plan_walks_the_knob_matrix_with_progress(lab: Lab):
    profile = lab_profile(lab, duration=1)
    profile.plan = Plan(matrix=("tcp_wmem",), repetitions=1, shuffle=True, seed=1, pause=0.1)
    rec, engine = await run_plan(profile)
    knobs = [e.payload.value for e in rec.of(EventKind.KNOB)]
    assert sorted(knobs) == sorted(WMEM)  # each value set once, in the seeded order
    progress = [(e.payload.done, e.payload.total) for e in rec.of(EventKind.PROGRESS)]
    assert progress == [(0, 2), (1, 2), (2, 2)]
    assert rec.of(EventKind.PROGRESS)[-1].payload.eta_s == 0
    for pair in ("A", "B"):
        starts = [e.record() for e in rec.of(EventKind.RUN_START, pair)]
        assert [s["config"]["tcp_wmem"] for s in starts] == knobs
        assert all(rec.run_end(s["run"])["status"] == "ok" for s in starts)
    assert len(engine.runs.skews) == 2  # every step started both pairs together
    assert any("seed 1" in e.payload.text for e in rec.of(EventKind.MARK))
    assert len(rec.of(EventKind.RESTORE)) == 2 and all(
        e.payload.ok for e in rec.of(EventKind.RESTORE))


async def test_a_tcp_servers_lines_end_on_the_host_once_it_listens(
        lab: Lab, monkeypatch: pytest.MonkeyPatch):
    """Nobody reads a TCP run's server once it listens: the host drops what it prints from
    then on (its interval lines no longer cross the link), yet the runs' intervals, summaries
    and ends are iperf3's as before, and the filter ends with the server."""
    came: dict[OutputLines, list[str]] = {}
    take = OutputLines._take

    def spy(self: OutputLines, lines: list[str]) -> None:  # every line a channel delivered
        came.setdefault(self, []).extend(lines)
        take(self, lines)

    monkeypatch.setattr(OutputLines, "_take", spy)
    rec, _ = await run_plan(lab_profile(lab, duration=2))
    servers = [lines for out, lines in came.items() if " -s " in out.proc.command]
    assert len(servers) == 2
    for lines in servers:
        assert lines and lines[-1].startswith("Server listening on"), lines
    starts = rec.of(EventKind.RUN_START)
    assert len(starts) == 2
    for start in starts:
        run = start.payload.run
        assert rec.run_end(run)["status"] == "ok"
        assert_matches_printed(rec, run)  # with the sender/receiver summary
        assert len(rec.intervals(run)) == 4  # 2 s at 0.5 s
    left = [(pid, cmdline) for h in lab.hosts(2) for pid, comm, cmdline, _ in
            netns_processes(h.netns) if comm == "cat" or "listening" in cmdline]
    assert not left


async def test_terminate_ends_a_silent_process_group(lab: Lab):
    """A process that never writes (an idle iperf3 server, say) is ended by its process
    group alone, while its channel is still open (so no broken pipe or hang-up helps)."""
    from abtui.remote.link import HostLink

    link = HostLink(lab.hosts(1)[1].alias, ssh_config=str(lab.ssh_config))
    await link.connect()
    try:
        proc = await link.stream("sleep 60 & sleep 60")
        assert proc.pgid is not None
        members: list[str] = []
        for _ in range(100):  # the shell forks its sleeps a moment after it reports the group
            members = subprocess.run(["pgrep", "-g", str(proc.pgid)], capture_output=True,
                                     text=True).stdout.split()
            if len(members) >= 3:
                break
            await asyncio.sleep(0.05)
        assert len(members) >= 2  # the shell and both sleeps
        # by the group alone, the channel still open (as for an orphan after a reconnect)
        await link.kill_group(proc.pgid, grace=1.0)
        assert not [pid for pid in members if pid_alive(int(pid))]
        await proc.terminate()
    finally:
        await link.close()


BIDIR_RATE = re.compile(r"^\[\s*(\d+|SUM)\]\[(TX|RX)-C\]\s+([\d.]+)-\s*([\d.]+)\s+sec\s+.*?"
                        r"([\d.]+) (\w?)bits/sec")


async def test_bidir_gives_both_directions_as_printed(lab: Lab):
    """--bidir (iperf3 ≥ 3.7): every interval carries its direction, tx and rx both come,
    each direction's rates are the [TX-C] / [RX-C] lines iperf3 printed, and the run's
    summary and reverse_summary are iperf3's own end lines of each direction."""
    profile = lab_profile(lab, duration=2)
    profile.pairs = [Pair(**{**_pair_dict(profile.pairs[0]), "overrides": {"bidir": True}})]
    rec, _ = await run_plan(profile)
    (start,) = [e.record() for e in rec.of(EventKind.RUN_START)]
    run = start["run"]
    assert start["options"]["bidir"] is True
    end = rec.run_end(run)
    assert end["status"] == "ok", end
    matches = [m for m in map(BIDIR_RATE.match, rec.raw[run]) if m]
    ends = {(m[2], m.string.rstrip().rsplit(None, 1)[1]): float(m[5]) * UNIT[m[6]]
            for m in matches if m.string.rstrip().endswith(("sender", "receiver"))}
    for direction in ("TX", "RX"):
        want = [(float(m[3]), float(m[4]), float(m[5]) * UNIT[m[6]]) for m in matches
                if m[2] == direction and not m.string.rstrip().endswith(("sender", "receiver"))]
        got = [(d["start"], d["end"], d["bits_per_second"]) for d in rec.intervals(run)
               if d.get("direction") == direction.lower()]
        assert want, f"iperf3 printed no [{direction}-C] interval"
        assert [x for t in got for x in t] == pytest.approx([x for t in want for x in t])
    for key, direction in (("summary", "TX"), ("reverse_summary", "RX")):
        assert end[key]["sender_bits_per_second"] == pytest.approx(ends[(direction, "sender")])
        assert end[key]["receiver_bits_per_second"] == pytest.approx(
            ends[(direction, "receiver")])


# iperf3 3.18 as a sender host would have it, for the one path this machine's 3.12 cannot
# take live: `--version` says 3.18, a client (-c) writes its argv down and prints a recorded
# 3.18 `--json-stream` run one line a second, as it streamed; the server is the real iperf3.
RECORDED_318 = """#!/bin/sh
case "$1" in --version) echo "iperf 3.18 (cJSON 1.7.15)"; exit 0 ;; esac
case " $* " in *" -c "*) ;; *) exec iperf3 "$@" ;; esac
printf '%s\\n' "$*" > {argv}
while IFS= read -r line; do printf '%s\\n' "$line"; sleep 0.3; done < {recording}
"""


async def test_a_3_17_plus_sender_is_run_with_json_stream(lab: Lab, tmp_path: Path):
    """Version detection picks --json-stream for a sender whose iperf3 is 3.18, and its
    streamed JSON reaches the session as intervals and a summary, over real SSH; what is
    asserted is read from the recording itself, not through abtui's parser."""
    recording = Path(__file__).parents[1] / "fixtures" / "iperf3-3.18" / "tcp.jsonl"
    program = tmp_path / "iperf3-318"
    program.write_text(RECORDED_318.format(argv=tmp_path / "argv", recording=recording))
    program.chmod(0o755)
    profile = lab_profile(lab, duration=3)
    profile.test.iperf3 = str(program)
    profile.pairs = profile.pairs[:1]
    rec, _ = await run_plan(profile)
    argv = (tmp_path / "argv").read_text().split()
    assert "--json-stream" in argv and "--forceflush" not in argv
    (start,) = [e.record() for e in rec.of(EventKind.RUN_START)]
    end = rec.run_end(start["run"])
    assert end["status"] == "ok", end
    streamed = [json.loads(line) for line in recording.read_text().splitlines()]
    want = [e["data"]["sum"] for e in streamed if e["event"] == "interval"]
    got = rec.intervals(start["run"])
    assert [(d["start"], d["end"], d["bits_per_second"]) for d in got] == pytest.approx(
        [(s["start"], s["end"], s["bits_per_second"]) for s in want])
    (final,) = [e["data"] for e in streamed if e["event"] == "end"]
    assert end["summary"]["sender_bits_per_second"] == pytest.approx(
        final["sum_sent"]["bits_per_second"])
    assert end["summary"]["receiver_bits_per_second"] == pytest.approx(
        final["sum_received"]["bits_per_second"])


class _Lines:
    """A progress stream that keeps the lines run_headless says."""

    def __init__(self) -> None:
        self.text = ""

    def write(self, s: str) -> None:
        self.text += s

    def flush(self) -> None:
        pass

    def runs(self) -> dict[str, str]:
        """Each run's line, by run id."""
        return {m.group(1): line for line in self.text.splitlines()
                if (m := re.match(r"abtui: [AB]: run (\S+)", line))}


def _measured_values(events: list, knob: str) -> dict[str, set[str]]:  # type: ignore[type-arg]
    """Per run, the values of `knob` its counted intervals (those straddling no flip) were
    measured at, from the session's own record: each phase's configuration."""
    config = {(e.pair, e.payload.phase): e.payload.config for e in events
              if e.kind is EventKind.PHASE}
    out: dict[str, set[str]] = {}
    for e in events:
        if e.kind is EventKind.INTERVAL and not e.payload.straddles and not e.payload.omitted:
            out.setdefault(str(e.payload.run), set()).add(
                config[(e.pair, e.payload.phase)][knob])
    return out


async def test_headless_lines_name_the_values_and_direction_each_run_measured(lab: Lab,
                                                                                tmp_path):
    """A plan of tcp_wmem × direction on the lab: each run's line names the direction it ran
    (RX (-R) for a reverse run) and the tcp_wmem value its intervals were measured at, and
    each step's progress line the same; never a value the run did not measure."""
    profile = lab_profile(lab, duration=1)
    profile.plan = Plan(matrix=("tcp_wmem", "direction"), directions=("tx", "rx"),
                        repetitions=1, shuffle=False, pause=0.1)
    out, said = tmp_path / "plan.jsonl", _Lines()
    assert await run_headless(profile, out, progress=said,
                              journal=UndoJournal(tmp_path / "undo")) == 0
    events = load_events(out)
    starts = {str(e.payload.run): e.payload for e in events if e.kind is EventKind.RUN_START}
    measured = _measured_values(events, "tcp_wmem")
    lines = said.runs()
    assert sorted(lines) == sorted(starts) and len(starts) == 8, said.text
    for run, start in starts.items():
        way = "RX (-R)" if start.options["reverse"] else "TX"
        (value,) = measured[run]
        assert f"run {run} ({way}, tcp_wmem={value}) ok, " in lines[run], lines[run]
    steps = [line for line in said.text.splitlines() if " steps done (" in line]
    assert [s.split("steps done (")[1].split(",")[0] for s in steps] == ["TX", "RX (-R)"] * 2, \
        said.text
    for step, value in zip(steps, [WMEM[0], WMEM[0], WMEM[1], WMEM[1]], strict=True):
        assert f"tcp_wmem={value})" in step, step


async def test_headless_alternation_lines_name_only_values_measured(lab: Lab, tmp_path):
    """`--alternate tcp_wmem` flipping on a continuous run (a setting the run goes on
    through): each run's line names exactly the values its intervals were measured at, each
    with its own figure when there are two."""
    from abtui.measure.alternate.design import Alternation

    profile = lab_profile(lab)
    out, said = tmp_path / "alt.jsonl", _Lines()
    alt = Alternation("tcp_wmem", WMEM, every=1.0, max_runs=2, seed=3)
    await run_headless(profile, out, duration=4.5, progress=said, alternation=alt,
                       journal=UndoJournal(tmp_path / "undo"))
    events = load_events(out)
    measured = _measured_values(events, "tcp_wmem")
    lines = said.runs()
    assert measured and set(lines) >= set(measured), said.text
    for run, line in lines.items():
        named = set(re.findall(r"tcp_wmem=([\d ]+\d)", line))
        values = measured.get(run)
        if values is None:  # every interval straddled a flip: it says so, and its start
            assert "across a flip" in line and len(named) == 1, line
            continue
        assert named == values, (line, values)
        if len(values) > 1:  # each value its own figure
            assert all(re.search(rf"\(TX, tcp_wmem={v}\) [\d.]+ [GMk]bit/s", lines[run])
                       for v in values), lines[run]
