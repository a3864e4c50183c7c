"""Driving the engine on the lab: a profile for the test lab, an engine wired with the real
parsers and knob layer, a recorder of its events and raw iperf3 lines, and iperf3's own
printed rates to compare against."""

from __future__ import annotations

import asyncio
import contextlib
import re
import signal
import subprocess
import sys
import tempfile
import time
from collections import defaultdict
from collections.abc import Iterator
from pathlib import Path

import pytest

from abtui.core.events import Event, EventKind
from abtui.core.model import Knob, KnobKind, Pair, Plan, Profile, Scope
from abtui.core.model import (
    TestOptions as Options,
)
from abtui.hosts.undo import UndoJournal
from abtui.lab.netns import Lab
from abtui.measure.engine.front import Engine
from tests.lab.namespaces import netns_processes

WMEM = ("4096 16384 4194304", "4096 16384 65536")
# An iperf3 3.12 interval or summary line: its rate as iperf3 printed it.
RATE = re.compile(r"^\[\s*(\d+|SUM)\]\s+([\d.]+)-\s*([\d.]+)\s+sec\s+.*?([\d.]+) (\w?)bits/sec")
UNIT = {"": 1, "K": 1e3, "M": 1e6, "G": 1e9}


def lab_profile(lab: Lab, **test: object) -> Profile:
    hosts = lab.hosts(2)
    pairs = [Pair(label=hosts[i].pair, sender=hosts[i].alias, receiver=hosts[i + 1].alias,
                  target=hosts[i + 1].data_address) for i in (0, 2)]
    options = {"duration": 0, "interval": 0.5, "ping": False, **test}
    return Profile(name="enginetest", pairs=pairs, test=Options(**options),  # type: ignore[arg-type]
                   ssh_config=str(lab.ssh_config), plan=Plan(shuffle=False, pause=0.1),
                   # declared live: the tests on this profile follow one run through a
                   # change (a live knob's phases); a knob's default, a change restarting
                   # the runs, is tests/lab/test_restart_lab.py's
                   knobs=[Knob(name="tcp_wmem", kind=KnobKind.SYSCTL, key="net.ipv4.tcp_wmem",
                               values=WMEM, scope=Scope.SENDER, live=True)])


def tunnel_profile(lab: Lab) -> Profile:
    """`lab_profile` with a tunnel knob (none, vxlan)."""
    profile = lab_profile(lab)
    profile.knobs.append(Knob(name="tunnel", kind=KnobKind.TUNNEL, values=("none", "vxlan")))
    return profile


async def flip_while_measuring(engine: Engine, rec: Recorder, knob: str, value: str,
                               pairs: list[str] | None = None) -> None:
    """Connect, measure continuously, and once pair A measured, flip `knob`."""
    await engine.connect()
    await engine.start("continuous")
    await until(lambda: len(rec.of(EventKind.INTERVAL, "A")) >= 1)
    await engine.set_knob(knob, value, pairs)


def stray_pids(lab: Lab, comms: tuple[str, ...] = ("iperf3", "ping")
               ) -> dict[str, list[tuple[int, str]]]:
    """iperf3 and ping (or `comms`) processes in the lab's namespaces (PID namespaces are
    shared, so only the namespaces' own PIDs are looked at)."""
    out: dict[str, list[tuple[int, str]]] = {}
    for h in lab.hosts(2):
        for pid, comm, _cmdline, _state in netns_processes(h.netns):
            if comm in comms:
                out.setdefault(h.alias, []).append((pid, comm))
    return out


class Recorder:
    """Events and the raw iperf3 lines the engine received, per run."""

    def __init__(self) -> None:
        self.events: list[Event] = []
        self.raw: dict[str, list[str]] = defaultdict(list)

    def __call__(self, event: Event) -> None:
        self.events.append(event)

    def sink(self, run: str, line: str) -> None:
        self.raw[run].append(line)

    def of(self, kind: EventKind, pair: str | None = None) -> list[Event]:
        return [e for e in self.events if e.kind is kind and (pair is None or e.pair == pair)]

    def intervals(self, run: str) -> list[dict]:
        return [e.record() for e in self.of(EventKind.INTERVAL) if e.payload.run == run]

    def run_end(self, run: str) -> dict:
        (end,) = [e.record() for e in self.of(EventKind.RUN_END) if e.payload.run == run]
        return end


def undo_folder() -> Path:
    """A folder of its own for an engine's undo journal (a test's `abtui recover` never sees
    it), in the run's own state folder: removed with it when the run ends (tests/conftest.py),
    never left in /tmp."""
    import os

    state = Path(os.environ["XDG_STATE_HOME"])
    state.mkdir(parents=True, exist_ok=True)
    return Path(tempfile.mkdtemp(prefix="undo-", dir=state))


def make_engine(profile: Profile, rec: Recorder, **kw: object) -> Engine:
    """An engine with the real parsers and knob layer; its undo journal in a folder of its
    own (undo_folder)."""
    journal = UndoJournal(undo_folder())
    engine = Engine(profile, raw_sink=rec.sink, journal=journal, **kw)  # type: ignore[arg-type]
    engine.subscribe(rec)
    return engine


def printed(lines: list[str]) -> tuple[list[tuple[float, float, float]], dict[str, float]]:
    """What iperf3 printed, read independently of any parser: the per-interval rates (the
    [SUM] lines when there are several streams) and the sender/receiver summary rates."""
    several = any(line.startswith("[SUM]") for line in lines)
    intervals, summary = [], {}
    for line in lines:
        m = RATE.match(line)
        if not m or several != (m[1] == "SUM"):
            continue
        rate = float(m[4]) * UNIT[m[5]]
        if line.rstrip().endswith(("sender", "receiver")):
            summary[line.rstrip().rsplit(None, 1)[1]] = rate
        else:
            intervals.append((float(m[2]), float(m[3]), rate))
    return intervals, summary


async def run_plan(profile: Profile, during=None, **kw: object):  # type: ignore[no-untyped-def]
    """Run the profile's plan to its end (`during(rec, engine)` meanwhile); always shut down."""
    rec = Recorder()
    engine = make_engine(profile, rec, **kw)
    try:
        await engine.connect()
        await engine.start("plan")
        if during is not None:
            await during(rec, engine)
        await engine.wait()
    finally:
        await engine.shutdown()
    return rec, engine


async def until(condition, timeout: float = 10.0) -> None:  # type: ignore[no-untyped-def]
    for _ in range(int(timeout / 0.05)):
        if condition():
            return
        await asyncio.sleep(0.05)
    raise AssertionError("timed out waiting")


def assert_matches_printed(rec: Recorder, run: str) -> None:
    lines, summary = printed(rec.raw[run])
    got = [(d["start"], d["end"], d["bits_per_second"]) for d in rec.intervals(run)]
    assert len(got) == len(lines), run
    assert [x for t in got for x in t] == pytest.approx([x for t in lines for x in t]), run
    assert lines, f"{run}: iperf3 printed no interval"
    end = rec.run_end(run)
    if summary:
        assert end["summary"]["sender_bits_per_second"] == pytest.approx(summary["sender"])
        assert end["summary"]["receiver_bits_per_second"] == pytest.approx(summary["receiver"])


@contextlib.contextmanager
def headless_run(lab: Lab, out: Path) -> Iterator[subprocess.Popen[str]]:
    """`abtui run` of the lab's own profile (60 s, its session in `out`) as its own process,
    once it recorded 2 intervals; killed at the end if it is still running."""
    proc = subprocess.Popen([sys.executable, "-m", "abtui", "run", str(lab.profile_path),
                             "--headless", "--duration", "60", "--out", str(out)],
                            stderr=subprocess.PIPE, text=True)
    try:
        wait_for(lambda: session_intervals(out) >= 2)
        yield proc
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()


def interrupt(proc: subprocess.Popen[str]) -> str:
    """Ctrl-C to a headless run; its stderr once it ended."""
    proc.send_signal(signal.SIGINT)
    return proc.communicate(timeout=20)[1]


def session_intervals(out: Path) -> int:
    return out.read_text().count('"interval"') if out.exists() else 0


def wait_for(condition, timeout: float = 20.0) -> None:  # type: ignore[no-untyped-def]
    """`until` for a test that is not a coroutine."""
    deadline = time.monotonic() + timeout
    while not condition():
        assert time.monotonic() < deadline, "timed out waiting"
        time.sleep(0.1)
