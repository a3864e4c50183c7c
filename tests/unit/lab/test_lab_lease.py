"""No command tears down or rebuilds a lab another process uses: the lab commands refuse in one
line naming that process; a lease left by a process that is gone never blocks."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from abtui.lab import lease
from abtui.lab.lease import LabInUse
from abtui.lab.netns import Lab
from abtui.lab.prepare import ensure_lab

NAME, IFPREFIX, MGMT = "leaselab", "lsl", 240
HOLDER = ("import sys; from pathlib import Path; from abtui.lab import lease\n"
          "with lease.hold([Path(sys.argv[1])]):\n"
          "    print('held', flush=True); sys.stdin.read()\n")


def a_lab(tmp_path: Path, pairs: int = 2) -> Lab:
    lab = Lab(name=NAME, octet=19, ifprefix=IFPREFIX, mgmt=MGMT, state_dir=tmp_path / NAME)
    lab.state_dir.mkdir()
    lab.meta_path.write_text(json.dumps({"pairs": pairs, "name": NAME, "octet": 19,
                                         "kernels": {}}))
    return lab


@pytest.fixture
def holder(tmp_path: Path) -> Iterator[subprocess.Popen[str]]:
    """Another process (a console, say) holding a lease on the lab, until the test ends."""
    proc = subprocess.Popen([sys.executable, "-c", HOLDER, str(tmp_path / NAME), "console"],
                            stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
    try:
        assert proc.stdout is not None and proc.stdout.readline() == "held\n"
        yield proc
    finally:
        if proc.poll() is None:
            proc.kill()
        proc.wait()


def test_down_refuses_naming_the_process_and_removes_nothing(tmp_path, holder):
    lab = a_lab(tmp_path)
    with pytest.raises(LabInUse) as refused:
        lab.down()
    message = str(refused.value)
    assert f"PID {holder.pid} ({sys.executable} -c import sys;" in message
    assert "not taking it down" in message and "\n" not in message
    assert lab.meta_path.exists()  # nothing was removed


def test_a_rebuild_refuses_before_anything_is_checked_or_changed(tmp_path, holder):
    lab = a_lab(tmp_path, pairs=1)
    with pytest.raises(LabInUse, match=rf"PID {holder.pid} .*rebuilding it with 2 pairs"):
        lab.up(pairs=2)
    # `abtui check --lab` and `run --lab` bring the lab up through ensure_lab
    said: list[str] = []
    with pytest.raises(LabInUse, match=f"PID {holder.pid}"):
        ensure_lab(lab, 2, said.append)
    assert json.loads(lab.meta_path.read_text())["pairs"] == 1


def test_the_lab_down_command_exits_1_with_one_line(tmp_path, holder):
    env = {**os.environ, "ABTUI_LAB": f"{NAME},{IFPREFIX},{MGMT}",
           "ABTUI_LAB_DIR": str(tmp_path)}
    a_lab(tmp_path)
    proc = subprocess.run([sys.executable, "-m", "abtui", "lab", "down"], env=env,
                          capture_output=True, text=True, timeout=60)
    assert proc.returncode == 1, proc.stderr
    lines = proc.stderr.strip().splitlines()
    assert len(lines) == 1 and f"PID {holder.pid}" in lines[0], proc.stderr
    assert "Traceback" not in proc.stderr


def test_a_lease_of_a_killed_process_never_blocks(tmp_path, holder):
    lab = a_lab(tmp_path)
    os.kill(holder.pid, signal.SIGKILL)  # crashed: its lease file is left behind
    holder.wait()
    assert (lease.lease_dir(lab.state_dir) / str(holder.pid)).exists()
    assert lease.users(lab.state_dir) == []
    assert not (lease.lease_dir(lab.state_dir) / str(holder.pid)).exists()
    lab.refuse_if_used("taking it down")  # no error


def test_a_reused_pid_is_not_a_user(tmp_path):
    lab = a_lab(tmp_path)
    folder = lease.lease_dir(lab.state_dir)
    folder.mkdir()
    # this process's PID, with another start time: the lease's process is gone
    (folder / str(os.getpid())).write_text("1\nabtui tui old.toml\n")
    assert lease.users(lab.state_dir) == []


def test_the_own_lease_does_not_block_and_an_inner_hold_keeps_the_outer(tmp_path):
    lab = a_lab(tmp_path)
    with lease.hold([lab.state_dir]):
        with lease.hold([lab.state_dir]):
            pass
        assert [u.pid for u in lease.users(lab.state_dir)] == [os.getpid()]
        lab.refuse_if_used("taking it down")  # ourselves: no error
    assert lease.users(lab.state_dir) == []


def test_a_profile_on_a_lab_names_its_state_dir(tmp_path):
    from abtui.core.model import Pair, Profile

    lab = a_lab(tmp_path)
    on_lab = Profile(name="p", pairs=[Pair("A", "a", "b", "198.19.1.2")],
                     ssh_config=str(lab.ssh_config))
    elsewhere = Profile(name="p", pairs=[Pair("A", "a", "b", "198.19.1.2")],
                        ssh_config=str(tmp_path / "ssh_config"))
    assert lease.labs_of(on_lab) == [lab.state_dir]
    assert lease.labs_of(elsewhere) == []
