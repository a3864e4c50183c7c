"""A host's lease (abtui.remote.lease), taken by a link's real control shell (local shells on
pipes, as sshd gives them; the lease's folder a test's own): a second controller (another
link of this process too) is refused naming the holder; a holder whose shell ended, the
link's own old shell (a reconnect) and an ended process of this machine never block; a
daemon a command starts never inherits the lease; FreeBSD's lockf(1) takes it where flock(1)
is not; no tool is said, not fatal."""

from __future__ import annotations

import asyncio
import contextlib
import os
import shutil
import subprocess
import sys
import time
from pathlib import Path

import pytest

from abtui.core.errors import LeaseHeld
from abtui.remote.lease import (
    Controller,
    LeaseState,
    gone,
    lease_files,
    parse_reply,
    take_command,
    takeover_command,
    this_controller,
)
from abtui.remote.link import HostLink
from tests.unit.remote.local_shell import LocalConn

pytestmark = pytest.mark.skipif(shutil.which("bash") is None or shutil.which("flock") is None,
                                reason="needs bash and flock(1) (util-linux)")

ALICE = Controller("alice", "elsewhere", 4242, 1796000000)


def _link(tmp_path: Path) -> HostLink:
    return HostLink("h1", lease=True, lease_dirs=(str(tmp_path),))


def _holder(tmp_path: Path, who: Controller, env: dict[str, str] | None = None
            ) -> subprocess.Popen[str]:
    """Another controller's control shell: takes the lease as `who`, then waits on stdin."""
    proc = subprocess.Popen(["sh"], stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True,
                            env=env)
    assert proc.stdin is not None and proc.stdout is not None
    proc.stdin.write(take_command(who, dirs=(str(tmp_path),)) + "\necho END\n")
    proc.stdin.flush()
    said = "".join(iter(proc.stdout.readline, "END\n"))
    assert parse_reply(said).state is LeaseState.TAKEN, said
    return proc


def _end(proc: subprocess.Popen[str]) -> None:
    assert proc.stdin is not None
    proc.stdin.close()
    proc.wait(timeout=5)


async def test_a_second_controller_is_refused_naming_the_holder_until_its_shell_ends(tmp_path):
    holder = _holder(tmp_path, ALICE)
    conn = LocalConn()
    try:
        link = _link(tmp_path)
        with pytest.raises(LeaseHeld) as refused:
            await link._start_shell(conn)  # type: ignore[arg-type]
        when = time.strftime("%Y-%m-%d %H:%M:%S", time.localtime(ALICE.start))
        assert str(refused.value) == (f"h1: driven by abtui of alice@elsewhere, pid 4242, "
                                      f"started {when}")
        assert conn.procs[0].proc.returncode is not None or conn.procs[0].proc.stdin.is_closing()
        assert holder.poll() is None  # another machine's controller: never ended by us
        _end(holder)  # its link dropped: the host's shell ends, and the lock with it
        shell = await link._start_shell(conn)  # type: ignore[arg-type]
        assert shell.bulk and link.lease_path and link.lease_note == ""
        line = Path(link.lease_path).read_text()
        me = this_controller()
        assert line.startswith(f"abtui-lease {me.line()} link={link._lease_link} shell=")
    finally:
        if holder.poll() is None:
            _end(holder)
        await conn.stop()


async def test_a_reconnect_takes_over_its_own_old_shell(tmp_path):
    """A link's old shell still holds the lease (the host has not noticed the link drop):
    the link's new shell ends it and takes the lease; another link of this same process is
    refused like any other controller; an ended process's lease of this machine is taken
    over."""
    conn = LocalConn()
    try:
        link = _link(tmp_path)
        await link._start_shell(conn)  # type: ignore[arg-type]
        with pytest.raises(LeaseHeld, match=f"pid {this_controller().pid},"):
            await _link(tmp_path)._start_shell(conn)  # type: ignore[arg-type]
        assert conn.procs[0].proc.returncode is None  # the first link's shell lives on
        new = await link._start_shell(conn)  # type: ignore[arg-type]
        await asyncio.wait_for(conn.procs[0].proc.wait(), 5)  # the old shell was ended
        assert conn.procs[0].proc.returncode == -9
        new.send("echo alive", "{", "}")
        assert (await asyncio.wait_for(new.result(), 5)).stdout == "alive"
    finally:
        await conn.stop()
    ended = subprocess.Popen(["true"])
    ended.wait()
    me = this_controller()
    dead = Controller(me.user, me.machine, ended.pid, me.start, me.where)
    assert me.where and gone(dead) and gone(me, "l1", "l1")
    # the same host name elsewhere (a container, a copied machine): its PIDs are not ours
    assert not gone(Controller(me.user, me.machine, ended.pid, me.start, "other:1"))
    assert not gone(Controller(me.user, me.machine, ended.pid, me.start))
    assert not gone(me, "l1", "l2") and not gone(me) and not gone(ALICE, "l1", "l1")
    holder = _holder(tmp_path, dead)
    conn = LocalConn()
    try:
        await _link(tmp_path)._start_shell(conn)  # type: ignore[arg-type]
        assert holder.wait(timeout=5) == -9
    finally:
        if holder.poll() is None:
            _end(holder)
        await conn.stop()


async def test_a_daemon_started_by_a_command_never_holds_the_lease(tmp_path):
    conn = LocalConn()
    daemon = 0
    try:
        shell = await _link(tmp_path)._start_shell(conn)  # type: ignore[arg-type]
        # (the bulk loop's own pipes closed too, as a daemon closes what it does not use:
        # the test waits for the shell's pipes to end)
        shell.send("sleep 60 </dev/null >/dev/null 2>&1 3>&- 4>&- & echo $!", "{", "}")
        daemon = int((await asyncio.wait_for(shell.result(), 5)).stdout)
        lease = os.path.realpath(next(iter(tmp_path.glob("abtui-lease.*"))))
        for _ in range(100):  # until the fork has become sleep (bash's copies go at exec)
            if Path(f"/proc/{daemon}/comm").read_text().strip() == "sleep":
                break
            await asyncio.sleep(0.02)
        held = []
        for fd in os.listdir(f"/proc/{daemon}/fd"):
            with contextlib.suppress(FileNotFoundError):  # (closed since it was listed)
                held.append(os.readlink(f"/proc/{daemon}/fd/{fd}"))
        assert lease not in held, held
        shell.close()
        await asyncio.wait_for(conn.procs[0].proc.wait(), 5)
        again = await _link(tmp_path)._start_shell(conn)  # type: ignore[arg-type]
        assert again.bulk  # taken while the daemon still runs
        assert os.path.exists(f"/proc/{daemon}")
    finally:
        if daemon:
            os.kill(daemon, 9)
        await conn.stop()


def _bin(tmp_path: Path, *, lockf: bool) -> dict[str, str]:
    """A PATH without flock(1), with the tools the lease's command uses; a stand-in for
    FreeBSD's lockf(1) (`lockf -s -t SECONDS FD`, exit 75 when held) when asked."""
    bindir = tmp_path / "bin"
    bindir.mkdir()
    for tool in ("sh", "bash", "uname", "tr", "readlink", "head", "sleep", "id", "ls", "date",
                 "stat"):
        found = shutil.which(tool)
        assert found, tool
        (bindir / tool).symlink_to(found)
    if lockf:
        script = bindir / "lockf"
        script.write_text(f"#!{sys.executable}\n" + LOCKF)
        script.chmod(0o755)
    return {"PATH": str(bindir), "LC_ALL": "C"}


LOCKF = """import fcntl, sys, time
args = sys.argv[1:]
assert args[0] == "-s" and args[1] == "-t", args
wait, fd = float(args[2]), int(args[3])
deadline = time.monotonic() + wait
while True:
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        sys.exit(0)
    except BlockingIOError:
        if time.monotonic() >= deadline:
            sys.exit(75)
        time.sleep(0.05)
"""


async def test_freebsds_lockf_takes_the_lease_where_flock_is_not(tmp_path):
    env = _bin(tmp_path, lockf=True)
    dirs = tmp_path / "run"
    dirs.mkdir()
    holder = _holder(dirs, ALICE, env)
    conn = LocalConn(("sh",), env)
    try:
        with pytest.raises(LeaseHeld, match="driven by abtui of alice@elsewhere"):
            await _link(dirs)._start_shell(conn)  # type: ignore[arg-type]
        _end(holder)
        link = _link(dirs)
        shell = await link._start_shell(conn)  # type: ignore[arg-type]
        assert not shell.bulk and link.lease_path  # sh: no bulk loop, the lease all the same
    finally:
        if holder.poll() is None:
            _end(holder)
        await conn.stop()


async def test_no_lock_tool_is_said_not_fatal(tmp_path):
    env = _bin(tmp_path, lockf=False)
    conn = LocalConn(("sh",), env)
    try:
        link = _link(tmp_path)
        await link._start_shell(conn)  # type: ignore[arg-type]
        assert link.lease_path is None
        assert link.lease_note == ("no lease taken (neither flock nor lockf is installed): "
                                   "another abtui could drive this host at once")
    finally:
        await conn.stop()


def test_the_command_lines_for_each_tool():
    """flock(1) first, FreeBSD's lockf(1) on a descriptor next, each waiting WAIT_S; the
    folder is the first of /run, /var/run that is a folder (not the first writable one); a
    takeover waits for the old shell's lock, and ends that shell only while the file still
    names it (never 1 or $$), a stale one only while it is still silent and idle."""
    take = take_command(ALICE)
    assert "if command -v flock >/dev/null 2>&1; then flock -w 1 7; " \
           "elif command -v lockf >/dev/null 2>&1; then lockf -s -t 1 7; else return 9; fi" in take
    assert "for c in /run /var/run; do if [ -d \"$c\" ]; then" in take
    assert "-w \"$c\"" not in take and ">>" not in take and "exec 7<>\"$f\"" in take
    assert "(umask 077; set -C; : >\"$f\")" in take
    assert "__abtui_lease='user=alice machine=elsewhere pid=4242 start=1796000000 link='" in take
    reply = parse_reply("abtui-lease held 3 /run/abtui-lease.h1\n"
                        "abtui-lease user=alice machine=elsewhere pid=4242 start=1796000000 "
                        "link=ab12 shell=777      \n")
    assert (reply.holder, reply.link, reply.shell, reply.age, reply.path) == \
        (ALICE, "ab12", 777, 3, "/run/abtui-lease.h1")
    assert not reply.stale and "silent" not in reply.holder_text()
    over = takeover_command(reply, ALICE, link="ab12")
    assert "flock -w 5 7" in over and "lockf -s -t 5 7" in over and "pgrep" not in over
    assert ("if [ 777 -gt 1 ] && [ 777 != $$ ] && [ \"$__abtui_h\" = "
            "'abtui-lease user=alice machine=elsewhere pid=4242 start=1796000000 link=ab12 "
            "shell=777' ] && { [ ! -e /proc/self/fd ] || "
            "[ \"$(readlink /proc/777/fd/7 2>/dev/null)\" -ef \"$f\" ]; }; "
            "then kill -KILL 777 2>/dev/null; fi") in over
    stale = parse_reply("abtui-lease held 25 /f\nabtui-lease user=a machine=m pid=1 start=0 "
                        "shell=9\n")
    assert stale.stale and "silent for 25 s" in stale.holder_text()
    assert "! pgrep -P 9 >/dev/null 2>&1" in takeover_command(stale, ALICE, stale=True)
    assert parse_reply("abtui-lease held - /f\nx\n").age is None
    assert parse_reply("abtui-lease none no tool").why == "no tool"
    bad = parse_reply("abtui-lease bad /run/x is a FIFO owned by \x1b[2Jnobody")
    assert bad.state is LeaseState.BAD and bad.path == "/run/x" and "\x1b" not in bad.why
    odd = parse_reply("abtui-lease held 0 /f\n\x1b]0;hi\x07\n")
    assert odd.holder_text() == "an abtui (\\x1b]0;hi\\x07)"
    spoofed = parse_reply("abtui-lease held 0 /f\nabtui-lease user=\x1b[2J machine=m pid=1 "
                          "start=0 shell=9\n")
    assert "\x1b" not in spoofed.holder_text() and "\\x1b[2J@m" in spoofed.holder_text()


async def test_a_spoofed_holder_line_never_ends_a_process_that_does_not_hold_the_lease(
        tmp_path):
    """The file is anyone's to write: one that names an ended process of this machine and,
    as its shell, a process that does not hold the lease is taken over without that process
    being ended (only the lock's real holder may be)."""
    me = this_controller()
    ended = subprocess.Popen(["true"])
    ended.wait()
    bystander = subprocess.Popen(["sleep", "60"])
    holder = _holder(tmp_path, Controller(me.user, me.machine, ended.pid, me.start, me.where))
    lease = next(iter(tmp_path.glob("abtui-lease.*")))
    line = lease.read_text().strip().rsplit(" shell=", 1)[0]
    lease.write_text(f"{line} shell={bystander.pid}\n")
    conn = LocalConn()
    try:
        with pytest.raises(LeaseHeld):  # the real holder was not ended: still held
            await _link(tmp_path)._start_shell(conn)  # type: ignore[arg-type]
        assert bystander.poll() is None and holder.poll() is None
    finally:
        bystander.kill()
        bystander.wait()
        _end(holder)
        await conn.stop()


def test_a_lab_hosts_lease_files_are_found_by_its_name_only(tmp_path):
    for name in ("abtui-lease.lab-a-snd.4026532462", "abtui-lease.lab-a-snd.4026532999",
                 "abtui-lease.lab-a-sndx.4026532462", "abtui-lease.lab-a-snd.x", "other"):
        (tmp_path / name).touch()
    assert sorted(f.name for f in lease_files("lab-a-snd", (str(tmp_path), "/nonexistent"))) \
        == ["abtui-lease.lab-a-snd.4026532462", "abtui-lease.lab-a-snd.4026532999"]
