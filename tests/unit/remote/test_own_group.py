"""A streamed command runs in the process group its stream reports (`$$`), also where the SSH
server does not make it a session leader (dropbear, the ARM guest's): ending that group ends
the command's loops. Real shells and processes; the server is played by a parent shell that
does what each server does."""

from __future__ import annotations

import os
import shlex
import shutil
import signal
import subprocess
import time
from pathlib import Path

import pytest

from abtui.remote.streams import own_group

pytestmark = pytest.mark.skipif(shutil.which("setsid") is None or not Path("/proc").is_dir(),
                                reason="needs setsid and /proc (Linux)")

LOOP = "sleep 30 & sleep 30 & echo started; wait"


LINK = 'echo $$; exec sh -c "$ABTUI_COMMAND"'  # what the link runs: `$$`, then the command
SERVERS = {
    # OpenSSH: the command's shell is a session leader of its own
    "openssh": (["sh", "-c", LINK], True),
    # dropbear: the connection's process leads the group; the command's shell is its child
    "dropbear": (["sh", "-c", f"sh -c {shlex.quote(LINK)}; true"], True),
    # a shell in someone else's group whose parent does not lead it
    "foreign": (["sh", "-c", LINK], False),
}


def _start(command: str, server: str) -> tuple[subprocess.Popen[str], int]:
    """As the link does under `server`: report `$$`, then exec the command's shell."""
    argv, leader = SERVERS[server]
    proc = subprocess.Popen(argv, stdout=subprocess.PIPE, text=True, start_new_session=leader,
                            env={**os.environ, "ABTUI_COMMAND": command})
    assert proc.stdout is not None
    reported = int(proc.stdout.readline())
    assert proc.stdout.readline().strip() == "started"
    return proc, reported


def _members(pgid: int) -> list[int]:
    out = []
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            try:
                fields = (entry / "stat").read_text().rsplit(")", 1)[1].split()
            except OSError:
                continue
            if int(fields[2]) == pgid and fields[0] != "Z":
                out.append(int(entry.name))
    return out


def _gone(pgid: int, timeout: float = 5.0) -> bool:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if not _members(pgid):
            return True
        time.sleep(0.05)
    return False


@pytest.mark.parametrize("server", sorted(SERVERS))
def test_ending_the_reported_group_ends_the_loops(server: str) -> None:
    proc, reported = _start(own_group(LOOP), server)
    try:
        members = _members(reported)
        assert reported in members and len(members) >= 3  # the shell and both sleeps
        os.killpg(reported, signal.SIGTERM)
        assert _gone(reported)
        proc.wait(5)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()


def test_without_it_the_reported_group_names_nothing_on_dropbear() -> None:
    """The bug it mends: the shell stays in the server's group, `$$` is no group at all."""
    proc, reported = _start(LOOP, "dropbear")
    try:
        assert _members(reported) == []
        with pytest.raises(ProcessLookupError):
            os.killpg(reported, signal.SIGTERM)
    finally:
        os.killpg(proc.pid, signal.SIGTERM)  # the "server's" group: ours, the whole of it
        proc.wait(5)


def test_the_command_runs_in_place_with_the_same_pid_and_output() -> None:
    out = subprocess.run(["sh", "-c", 'echo $$; exec sh -c "$0"',
                          own_group("echo $$; echo 'a b' \"c\"")],
                         capture_output=True, text=True, check=True).stdout.split("\n")
    assert out[0] == out[1]  # setsid did not fork: the reported pid is the command's
    assert out[2] == "a b c"
