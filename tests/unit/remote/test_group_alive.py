"""group_alive_command, run by the local shell against real process groups: a group whose only
member left is a zombie counts as ended (`kill -0` would say it still runs)."""

from __future__ import annotations

import os
import signal
import subprocess
import time

from abtui.remote.streams import group_alive_command


def _alive(pgid: int) -> bool:
    return subprocess.run(["sh", "-c", group_alive_command(pgid)]).returncode == 0


def _state(pid: int) -> str:
    with open(f"/proc/{pid}/stat") as fh:
        return fh.read().rsplit(")", 1)[1].split()[0]


def test_a_group_of_zombies_is_not_alive_but_a_running_member_is():
    # the leader never reaps its finished child: the group holds a zombie and a sleeper
    leader = subprocess.Popen(["sh", "-c", "sleep 0 & exec sleep 300"], start_new_session=True)
    try:
        for _ in range(100):
            kids = subprocess.run(["ps", "-o", "pid=,stat=", "--ppid", str(leader.pid)],
                                  capture_output=True, text=True).stdout.split()
            if kids[1:2] and kids[1].startswith("Z"):
                break
            time.sleep(0.02)
        assert kids[1].startswith("Z"), kids
        assert _alive(leader.pid)
        os.kill(leader.pid, signal.SIGKILL)
        for _ in range(100):  # the leader is a zombie until we wait for it
            if _state(leader.pid) == "Z":
                break
            time.sleep(0.02)
        assert _state(leader.pid) == "Z"
        assert subprocess.run(["sh", "-c", f"kill -0 -{leader.pid}"]).returncode == 0
        assert not _alive(leader.pid)
    finally:
        if leader.poll() is None:
            os.kill(leader.pid, signal.SIGKILL)
        leader.wait()
    assert not _alive(leader.pid)


def test_without_ps_the_check_falls_back_to_kill_0():
    """A host with no usable ps (a minimal image): kill -0 decides, so a live group is never
    taken for ended."""
    leader = subprocess.Popen(["sleep", "300"], start_new_session=True)
    try:
        no_ps = {"PATH": "/nonexistent"}
        sh = "/bin/sh"
        alive = subprocess.run([sh, "-c", group_alive_command(leader.pid)], env=no_ps)
        assert alive.returncode == 0
    finally:
        os.kill(leader.pid, signal.SIGKILL)
        leader.wait()
    gone = subprocess.run([sh, "-c", group_alive_command(leader.pid)], env=no_ps)
    assert gone.returncode != 0
