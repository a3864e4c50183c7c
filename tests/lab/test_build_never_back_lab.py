"""A `command` build whose host never comes back keeps its undo journal, on real hosts: the lab's
namespace hosts given a kernel knob whose other build is reached by a command that exits 0 and
boots nothing (as a power switch whose host then hangs in its firmware). `abtui run --set`
waits the build's timeout for a new boot, is refused saying the host may still come up on that
build later, and at the end says the recover line, exits 1 and keeps the undo journal with the
senders' first builds; `abtui recover` then finds them on that build and empties it. Real sshd
and `uname` in namespaces; nothing is booted."""

from __future__ import annotations

import os
import platform
import subprocess
import sys
from pathlib import Path

import pytest

from abtui.hosts.undo import read_journal
from abtui.lab.netns import Lab
from tests.lab.test_alternate_lab import _profile  # the lab's profile at 0.5 s intervals
from tests.reliability import Reliability

pytestmark = [pytest.mark.lab, pytest.mark.usefixtures("no_strays")]  # nothing left behind

ROOT = Path(__file__).resolve().parents[2]
KNOB = f"""
[[knobs]]
name = "kernel"
kind = "kernel"
values = ["running", "other"]
scope = "sender"

[knobs.build]
method = "command"
command = ["true"]
timeout = 3

[knobs.builds.running]
release = "{platform.release()}"

[knobs.builds.other]
release = "0.0.1-never"
"""


def _abtui(state: Path, *args: str) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "XDG_STATE_HOME": str(state), "PYTHONPATH": str(ROOT)}
    return subprocess.run([sys.executable, "-m", "abtui", *args], cwd=ROOT, env=env,
                          capture_output=True, text=True, timeout=120)


@pytest.mark.reliability(
    "33", "a `command` build switch whose host does not come back within its timeout (lab "
    "hosts: the command exits 0 and boots nothing)",
    "`abtui run --set` is refused saying the host may still come up on that build later; the "
    "recover line, exit 1, the undo journal kept with each sender's first build; `abtui "
    "recover` then sets them back and empties it")
def test_a_command_build_that_never_comes_back_keeps_its_journal(lab: Lab, tmp_path: Path,
                                                                 reliability: Reliability):
    profile = _profile(lab, tmp_path)
    profile.write_text(profile.read_text() + KNOB)
    state = tmp_path / "state"
    run = _abtui(state, "run", str(profile), "--headless", "--set", "kernel=other",
                 "--duration", "5", "--out", str(tmp_path / "s.jsonl"))
    err = run.stderr
    assert run.returncode == 1, err
    assert "--set kernel=other refused, not started" in err
    assert "it may still come up on 'other' later" in err
    assert err.rstrip().endswith("run `abtui recover` to finish"), err
    assert "Traceback" not in err
    [journal] = (state / "abtui" / "undo").glob("*.jsonl")
    senders = {h.alias for h in lab.hosts(2) if h.role == "sender"}
    assert {host for host, _knob in read_journal(journal).builds} == senders
    recover = _abtui(state, "recover")
    assert recover.returncode == 0, recover.stdout + recover.stderr
    assert sum("back on running" in line for line in recover.stdout.splitlines()) == 2
    assert not list((state / "abtui" / "undo").glob("*.jsonl"))
    reliability.row(exit=run.returncode, journal_entries=len(senders))
