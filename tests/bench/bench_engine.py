"""The engine on a lab of its own: start skew between pairs; fidelity and overhead against
iperf3 itself.

- `start_skew_p95_ms`: ≥ 40 synchronized starts of 2 lab pairs (a plan of 1 s runs); each
  start's skew is the spread of the hosts' clocks read at release.
- `fidelity_exact` and `overhead_ratio`, from the same runs: pair A, 3 s runs, through abtui
  (the engine, its session file, loaded back as every report reads it) and bare (`ip netns
  exec iperf3`, no SSH, no abtui, the same iperf3 options), alternated A B B A … so drift hits
  both arms alike; half the rounds single stream, half `-P 2` (the [SUM] lines).
  Through abtui, iperf3 runs under a wrapper that tees what it prints into a log on the host:
  `fidelity_exact` is the share of abtui's per-run figures (each interval's start, end,
  transfer, rate and Retr; the summary's sender and receiver transfer and rate, and Retr) that
  equal what iperf3 printed, to its printed precision, read from that log by a reader of its own
  here (not abtui's parser). `overhead_ratio` is the median of the rounds' ratios of abtui's
  receiver rate to the bare run's.
"""

from __future__ import annotations

import asyncio
import re
import shlex
import statistics
import subprocess
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from abtui.core.model import Pair, Plan, Profile, TestOptions
from abtui.hosts.undo import UndoJournal
from abtui.lab.netns import Lab
from abtui.measure.engine.front import Engine
from abtui.remote.iperf_cmd import client_argv, server_argv
from abtui.sessions.session import Session
from abtui.sessions.writer import SessionWriter
from tests.bench.judge import measures
from tests.bench.labs import with_lab

STARTS = 40
ROUNDS = 8  # per stream count (1 and 2): 16 pairs of runs
SECONDS = 3
BARE_PORT = 5301

# iperf3's client under abtui, its output also kept on the host (one log per run, in order)
HOST_TEE = """#!/bin/bash
case " $* " in *" -c "*) ;; *) exec iperf3 "$@" ;; esac
set -o pipefail
iperf3 "$@" 2>&1 | tee "{logs}/$(date +%s%N)-$$.log"
"""


def _profile(lab: Lab, pairs: int, **test: Any) -> Profile:
    hosts = lab.hosts(2)
    chosen = [Pair(label=hosts[i].pair, sender=hosts[i].alias, receiver=hosts[i + 1].alias,
                   target=hosts[i + 1].data_address) for i in (0, 2)][:pairs]
    options = TestOptions(**{"interval": 1.0, "ping": False, **test})
    return Profile(name="bench", pairs=chosen, test=options, ssh_config=str(lab.ssh_config),
                   plan=Plan(shuffle=False, pause=0.2))


def _engine(profile: Profile, state: Path) -> Engine:
    return Engine(profile, journal=UndoJournal(state / "undo"))


async def _plan(engine: Engine) -> None:
    await engine.start("plan")
    await engine.wait()
    await engine.stop()


# ---- start skew ------------------------------------------------------------------------------
SKEW_ROUNDS = 4  # each: STARTS / SKEW_ROUNDS starts through abtui, as many by hand
ARMED = "armed"


async def _skews(lab: Lab) -> tuple[list[float], list[float]]:
    """abtui's starts, alternated round by round with OpenSSH's release floor."""
    ours: list[float] = []
    hand: list[float] = []
    for _ in range(SKEW_ROUNDS):
        profile = _profile(lab, 2, duration=1)
        profile.plan.repetitions = STARTS // SKEW_ROUNDS
        engine = _engine(profile, lab.state_dir)
        try:
            await engine.connect()
            await _plan(engine)
        finally:
            await engine.shutdown()
        ours += engine.runs.skews
        hand += [_hand_release(lab) for _ in range(STARTS // SKEW_ROUNDS)]
    return ours, hand


def _hand_release(lab: Lab) -> float:
    """The reference: the two senders released by hand at once, the best a script does with
    OpenSSH: one `ssh` each started beforehand, blocked in `read` on the host, then a newline
    written to both in turn; the spread of the hosts' clocks (bash's $EPOCHREALTIME) right
    after the read (ms)."""
    senders = [h.alias for h in lab.hosts(2) if h.role == "sender"]
    command = f"bash -c {shlex.quote(f'echo {ARMED}; read -r _; echo $EPOCHREALTIME')}"
    procs = [subprocess.Popen(["ssh", "-F", str(lab.ssh_config), alias, command],
                              stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
             for alias in senders]
    try:
        for proc in procs:
            assert proc.stdout is not None and proc.stdout.readline().strip() == ARMED
        for proc in procs:
            assert proc.stdin is not None
            proc.stdin.write("\n")
            proc.stdin.flush()
        clocks = [float(proc.communicate(timeout=30)[0].strip()) for proc in procs]
    finally:
        for proc in procs:
            if proc.poll() is None:
                proc.kill()
                proc.wait()
    return (max(clocks) - min(clocks)) * 1000


def _p95(values: list[float]) -> float:
    return statistics.quantiles(values, n=20, method="inclusive")[18]


@measures("start_skew_p95_ms")
def start_skew_p95_ms() -> dict:
    skews, hand = with_lab(2, lambda lab: asyncio.run(_skews(lab)))
    if len(skews) < STARTS:
        raise RuntimeError(f"only {len(skews)} synchronized starts of {STARTS}")
    return {"name": "start_skew_p95_ms", "value": round(_p95(skews), 2), "unit": "ms",
            "reference": round(_p95(hand), 2),
            "reference_note": f"by hand: the 2 senders' `ssh` started beforehand, blocked in "
                              f"`read`, released by a newline to each; p95 of {len(hand)} "
                              f"(median {statistics.median(hand):.2f} ms), alternated in "
                              f"{SKEW_ROUNDS} rounds",
            "note": f"{len(skews)} starts of 2 pairs, median {statistics.median(skews):.2f}"
                    f" ms, max {max(skews):.2f} ms (hosts' clocks at release)"}


# ---- what iperf3 printed, read here on purpose without abtui's parser -----------------------
_LINE = re.compile(r"^\[\s*(\d+|SUM)\]\s+(\d+\.\d+)-\s*(\d+\.\d+)\s+sec\s+(\d+(?:\.\d+)?)\s+"
                   r"([KMGT]?)Bytes\s+(\d+(?:\.\d+)?)\s+([KMGT]?)bits/sec(?:\s+(\d+))?")
_BITS = {"": 1.0, "K": 1e3, "M": 1e6, "G": 1e9, "T": 1e12}
_BYTES = {"": 1, "K": 1024, "M": 1024**2, "G": 1024**3, "T": 1024**4}


@dataclass(frozen=True, slots=True)
class Figure:
    """One printed number: its text (so its precision is known) and its unit's scale."""

    text: str
    scale: float

    @property
    def value(self) -> float:
        return float(self.text) * self.scale

    def equals(self, other: float | None) -> bool:
        """`other` printed the way iperf3 printed this figure reads the same."""
        if other is None:
            return False
        decimals = len(self.text.partition(".")[2])
        return round(other / self.scale, decimals) == float(self.text)


@dataclass(slots=True)
class Printed:
    """One run's output: its aggregate intervals and its summary lines, as figures."""

    intervals: list[dict[str, Figure]] = field(default_factory=list)
    summary: dict[str, dict[str, Figure]] = field(default_factory=dict)


def read_printed(text: str) -> Printed:
    lines = text.splitlines()
    several = any(line.startswith("[SUM]") for line in lines)
    out = Printed()
    for line in lines:
        m = _LINE.match(line)
        if m is None or several != (m[1] == "SUM"):
            continue
        figs = {"start": Figure(m[2], 1.0), "end": Figure(m[3], 1.0),
                "bytes": Figure(m[4], _BYTES[m[5]]), "bps": Figure(m[6], _BITS[m[7]])}
        if m[8] is not None:
            figs["retransmits"] = Figure(m[8], 1.0)
        side = line.rstrip().rsplit(None, 1)[-1]
        if side in ("sender", "receiver"):
            out.summary[side] = figs
        else:
            out.intervals.append(figs)
    return out


def compare_run(printed: Printed, session: Session, pair: str, run_index: int
                ) -> tuple[int, list[str]]:
    """(figures compared, what differs) between iperf3's printed run and abtui's."""
    cols = session.intervals[pair]
    rows = [i for i, r in enumerate(cols["run"]) if r == run_index]
    ours = [{"start": cols["start"][i], "end": cols["end"][i], "bytes": cols["bytes"][i],
             "bps": cols["bps"][i], "retransmits": cols["retransmits"][i]} for i in rows]
    wrong: list[str] = []
    compared = 0
    if len(ours) != len(printed.intervals):
        wrong.append(f"run {run_index}: {len(ours)} intervals, iperf3 printed "
                     f"{len(printed.intervals)}")
    for k, (mine, theirs) in enumerate(zip(ours, printed.intervals, strict=False)):
        for key, fig in theirs.items():
            compared += 1
            if not fig.equals(mine[key]):
                wrong.append(f"run {run_index} interval {k} {key}: {mine[key]} vs {fig.text}")
    summary = session.runs[run_index].summary or {}
    for side in ("sender", "receiver"):
        theirs = printed.summary.get(side)
        if theirs is None:
            wrong.append(f"run {run_index}: iperf3 printed no {side} summary")
            continue
        pairs = [(f"{side}_bits_per_second", theirs["bps"]),
                 (f"{side}_bytes", theirs["bytes"])]
        if side == "sender" and "retransmits" in theirs:
            pairs.append(("retransmits", theirs["retransmits"]))
        for key, fig in pairs:
            compared += 1
            if not fig.equals(summary.get(key)):
                wrong.append(f"run {run_index} {key}: {summary.get(key)} vs {fig.text}")
    return compared + abs(len(ours) - len(printed.intervals)), wrong


# ---- the two arms --------------------------------------------------------------------------
def _bare_run(lab: Lab, options: TestOptions) -> Printed:
    """iperf3 by hand in the lab's namespaces, with the options abtui would give it.

    Each in a session of its own, as sshd starts them through abtui: with the kernel's
    autogroup scheduling a session shares one CPU share, so a server and client left in the
    bench's session would get half of what they get through abtui on a busy machine."""
    snd, rcv = lab.hosts(1)
    server = subprocess.Popen(["ip", "netns", "exec", rcv.netns, *server_argv(BARE_PORT)],
                              stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
                              start_new_session=True)
    try:
        time.sleep(0.3)
        argv = client_argv(options, rcv.data_address, BARE_PORT, SECONDS)
        out = subprocess.run(["ip", "netns", "exec", snd.netns, "env", "LC_ALL=C", *argv],
                             capture_output=True, text=True, check=True, timeout=60,
                             start_new_session=True)
    finally:
        server.terminate()
        server.wait()
    printed = read_printed(out.stdout)
    if "receiver" not in printed.summary:
        raise RuntimeError(f"bare iperf3 printed no receiver summary: {out.stdout[-300:]!r}")
    return printed


@dataclass(slots=True)
class Arms:
    through: list[float] = field(default_factory=list)  # abtui's receiver rate, per round
    bare: list[float] = field(default_factory=list)
    compared: int = 0
    wrong: list[str] = field(default_factory=list)
    runs: int = 0


async def _rounds(lab: Lab, parallel: int, tmp: Path, arms: Arms) -> None:
    logs = tmp / f"logs-P{parallel}"
    logs.mkdir()
    wrapper = tmp / "iperf3-tee"
    wrapper.write_text(HOST_TEE.format(logs=logs))
    wrapper.chmod(0o755)
    profile = _profile(lab, 1, duration=SECONDS, parallel=parallel, iperf3=str(wrapper))
    engine = _engine(profile, tmp)
    writer = SessionWriter(tmp / f"fidelity-P{parallel}.abtui.jsonl", profile="bench",
                           pairs=["A"], compact=False)
    engine.subscribe(writer.write)
    bare: list[Printed] = []
    try:
        await engine.connect()
        for i in range(ROUNDS):
            run_abtui = _plan(engine)
            run_bare = asyncio.to_thread(lambda: bare.append(_bare_run(lab, profile.test)))
            for arm in (run_abtui, run_bare) if i % 2 == 0 else (run_bare, run_abtui):
                await arm
    finally:
        await engine.shutdown()
        writer.close()
    session = Session.load(writer.final_path or writer.path)
    runs = session.runs_of("A")
    printed = [read_printed(p.read_text()) for p in sorted(logs.iterdir())]
    if len(runs) != ROUNDS or len(printed) != ROUNDS:
        raise RuntimeError(f"-P {parallel}: {len(runs)} runs through abtui and "
                           f"{len(printed)} host logs, want {ROUNDS} of each")
    for run, out in zip(runs, printed, strict=True):
        compared, wrong = compare_run(out, session, "A", run.index)
        arms.compared += compared
        arms.wrong += [f"-P {parallel} {w}" for w in wrong]
        arms.runs += 1
        arms.through.append((run.summary or {}).get("receiver_bits_per_second") or 0.0)
    arms.bare += [p.summary["receiver"]["bps"].value for p in bare]


def _fidelity(lab: Lab) -> Arms:
    arms = Arms()
    with tempfile.TemporaryDirectory(prefix="abtui-bench-fidelity-") as tmp:
        for parallel in (1, 2):
            sub = Path(tmp) / f"P{parallel}"
            sub.mkdir()
            asyncio.run(_rounds(lab, parallel, sub, arms))
    return arms


@measures("fidelity_exact", "overhead_ratio")
def fidelity_and_overhead() -> list[dict]:
    arms = with_lab(1, _fidelity)
    equal = arms.compared - len(arms.wrong)
    ratios = [a / b for a, b in zip(arms.through, arms.bare, strict=True)]
    shown = "; ".join(arms.wrong[:3]) + (f"; … {len(arms.wrong) - 3} more"
                                         if len(arms.wrong) > 3 else "")
    return [
        {"name": "fidelity_exact", "value": round(equal / arms.compared, 4) if arms.compared
         else None, "unit": "share",
         "note": f"{equal} of {arms.compared} figures of {arms.runs} runs (pair A, {SECONDS} s, "
                 f"-P 1 and -P 2) equal iperf3's printed ones, read from the host's own copy"
                 + (f"; differ: {shown}" if arms.wrong else "")},
        {"name": "overhead_ratio", "value": round(statistics.median(ratios), 3),
         "unit": "ratio",
         "note": f"median of {len(ratios)} paired alternated runs (min {min(ratios):.3f}, max "
                 f"{max(ratios):.3f}); medians {statistics.median(arms.through) / 1e9:.2f} "
                 f"Gbit/s through abtui, {statistics.median(arms.bare) / 1e9:.2f} bare"},
    ]


RECORDS = [start_skew_p95_ms, fidelity_and_overhead]
