"""No flow but ours (abtui.hosts.leftovers): what a dead controller's undo journal records is
ended before a session measures, on this machine's own processes standing in for a host's
(its shell runs the same test a host's control shell would): only the very process group
recorded, by its number, verified by its program and its start time; one that cannot be ended
makes the session refuse, naming it."""

from __future__ import annotations

import contextlib
import json
import os
import shutil
import signal
import subprocess
import time
from pathlib import Path

import pytest

from abtui.core.errors import AbtuiError
from abtui.core.model import LinkState
from abtui.hosts.leftovers import end_leftovers, program_of
from abtui.hosts.undo import pending_recovery
from abtui.remote.control_shell import CommandResult
from abtui.remote.streams import same_group_command

DEAD = 999999990  # no such process: the journal's writer is gone


class LocalLink:
    """This machine as a host: commands in sh, a group ended by signal (`ends`: False, a
    group that will not end)."""

    def __init__(self, ends: bool = True, state: LinkState = LinkState.CONNECTED) -> None:
        self.alias, self.state, self.ends = "h", state, ends
        self.killed: list[int] = []

    async def run(self, command, timeout=10.0, isolate=True, **_kw):
        done = subprocess.run(["sh", "-c", command], capture_output=True, text=True)
        return CommandResult(done.returncode, done.stdout, done.stderr)

    async def kill_group(self, pgid, grace=2.0):
        self.killed.append(pgid)
        if self.ends:
            os.killpg(pgid, signal.SIGTERM)
            for _ in range(100):  # reaped by its parent, this test
                if _reaped(pgid):
                    return
                time.sleep(0.02)


PROCS: dict[int, subprocess.Popen[bytes]] = {}


def _reaped(pid: int) -> bool:
    return PROCS[pid].poll() is not None


@pytest.fixture
def iperf3(tmp_path):
    """A process named iperf3 in a group of its own (a copy of sleep), ended afterwards."""
    program = tmp_path / "iperf3"
    shutil.copy(shutil.which("sleep") or "/bin/sleep", program)
    proc = subprocess.Popen([str(program), "60"], start_new_session=True)
    PROCS[proc.pid] = proc
    # Popen returns once the child is forked, maybe before it runs iperf3: until it does, it
    # is not the recorded program (under load that took long enough to fail the check)
    deadline = time.monotonic() + 10
    while time.monotonic() < deadline:
        with contextlib.suppress(OSError):
            if Path(f"/proc/{proc.pid}/comm").read_text().strip() == "iperf3":
                break
        time.sleep(0.01)
    yield proc
    if proc.poll() is None:
        proc.kill()
    proc.wait()
    PROCS.pop(proc.pid, None)


def _journal(folder: Path, pgid: int, what: str, t: float | None) -> Path:
    folder.mkdir(exist_ok=True)
    path = folder / "j.jsonl"
    rec = {"op": "pgid", "host": "h", "pgid": pgid, "what": what,
           **({"t": t} if t is not None else {})}
    path.write_text("".join(json.dumps(r) + "\n" for r in
                            ({"op": "start", "pid": DEAD}, {"op": "host", "alias": "h"}, rec)))
    return folder


def test_the_programs_a_run_starts_are_checked_by_name():
    assert [program_of(w) for w in ("iperf3 client", "iperf3 server", "ping", "host CPU",
                                    "/usr/local/bin/iperf3 -c x", "", "sockperf server",
                                    "sockperf client")] == \
        ["iperf3", "iperf3", "ping", "", "iperf3", "", "sockperf", "sockperf"]


@pytest.mark.parametrize("what, age, ours", [
    ("iperf3 client", 0.0, True),
    ("iperf3 client", None, True),  # an older journal: the program alone
    ("ping", 0.0, False),  # another program now runs under that number
    ("iperf3 client", 600.0, False),  # started ten minutes after the record: not it
    ("host CPU", 0.0, True),  # no program to check: the start time tells
])
def test_the_recorded_group_is_told_by_program_and_start(iperf3, what, age, ours):
    done = subprocess.run(["sh", "-c", same_group_command(iperf3.pid, what, age)])
    assert (done.returncode == 0) == ours


async def test_a_dead_controllers_iperf3_is_ended_said_and_struck_off(tmp_path, iperf3):
    folder = _journal(tmp_path / "undo", iperf3.pid, "iperf3 client", time.time())
    said: list[tuple[str, str]] = []
    link = LocalLink()
    await end_leftovers({"h": link}, lambda host, line: said.append((host, line)), folder)
    assert link.killed == [iperf3.pid] and iperf3.poll() is not None
    assert said == [("h", f"h: ended iperf3 client (process group {iperf3.pid}, left by a "
                          f"dead abtui, pid {DEAD}) before measuring")]
    assert pending_recovery(folder) == []  # nothing left: the journal went


@pytest.mark.parametrize("what, started_ago", [("iperf3 client", 900.0), ("ping", 0.0),
                                               ("host CPU", None)])
async def test_a_number_someone_else_has_now_is_left_alone(tmp_path, iperf3, what,
                                                           started_ago):
    """A group that is not the one recorded (started long after, another program, or one
    nothing tells apart) is never ended; its entry is struck off."""
    t = None if started_ago is None else time.time() - started_ago
    folder = _journal(tmp_path / "undo", iperf3.pid, what, t)
    said: list[tuple[str, str]] = []
    link = LocalLink()
    await end_leftovers({"h": link}, lambda host, line: said.append((host, line)), folder)
    assert link.killed == [] and said == [] and iperf3.poll() is None
    assert pending_recovery(folder) == []


async def test_one_that_will_not_end_refuses_the_session_naming_it(tmp_path, iperf3):
    folder = _journal(tmp_path / "undo", iperf3.pid, "iperf3 client", time.time())
    with pytest.raises(AbtuiError) as refused:
        await end_leftovers({"h": LocalLink(ends=False)}, lambda *_: None, folder)
    assert str(refused.value) == (
        f"h: iperf3 client (process group {iperf3.pid}, left by a dead abtui, pid {DEAD}) "
        "still running: nothing was measured beside it (end it, or run `abtui recover`)")
    assert iperf3.poll() is None
    (p,) = pending_recovery(folder)
    assert p.pgids == {("h", iperf3.pid): "iperf3 client"}  # still there for recover


async def test_hosts_not_in_this_session_or_not_connected_are_not_touched(tmp_path, iperf3):
    folder = _journal(tmp_path / "undo", iperf3.pid, "iperf3 client", time.time())
    down = LocalLink(state=LinkState.LOST)
    await end_leftovers({"h": down}, lambda *_: None, folder)
    await end_leftovers({"other": LocalLink()}, lambda *_: None, folder)
    assert down.killed == [] and iperf3.poll() is None
    assert len(pending_recovery(folder)) == 1


def test_an_age_procps_wrapped_below_zero_is_a_new_process(tmp_path):
    """procps prints a process started within its last clock tick with a negative age wrapped
    to 2^32 (seen: 4123168608 s for an iperf3 just started, 2 runs in 15): that is a process
    of 0 s, the one just recorded, not one started 130 years ago."""
    fake = tmp_path / "ps"
    fake.write_text("#!/bin/sh\necho '  4242 4123168608 Ss   iperf3'\necho '  4243 7 S sleep'\n")
    fake.chmod(0o755)
    env = {**os.environ, "PATH": f"{tmp_path}:{os.environ['PATH']}"}
    just = subprocess.run(["sh", "-c", same_group_command(4242, "iperf3 client", 0.0)], env=env)
    assert just.returncode == 0
    old = subprocess.run(["sh", "-c", same_group_command(4242, "iperf3 client", 600.0)], env=env)
    assert old.returncode != 0
