"""What another local user can put at a lease's name, and controllers that race or freeze
(abtui.remote.lease), on real local shells (the lease's folder a test's own): a symbolic link,
a FIFO, a file of another user or with another mode is refused in one line naming the file,
what it is and its owner, never written, opened or waited on; a folder others can write takes
no lease; the file is made 0600 with the holder's line only; a holder silent for STALE_S
(and running no command) is taken over, one that answers or is busy is not; hosts leased in
the one order make exactly one of two controllers started together win."""

from __future__ import annotations

import asyncio
import contextlib
import fcntl
import os
import shutil
import stat
import subprocess
import time
from pathlib import Path

import pytest

from abtui.core.errors import LeaseHeld, LeaseRefused, RemoteError
from abtui.remote.lease import (
    STALE_S,
    Controller,
    LeaseOrder,
    LeaseState,
    name_command,
    parse_reply,
    take_command,
)
from abtui.remote.link import HostLink
from tests.unit.remote.local_shell import LocalConn

pytestmark = pytest.mark.skipif(shutil.which("bash") is None or shutil.which("flock") is None,
                                reason="needs bash and flock(1) (util-linux)")

ALICE = Controller("alice", "elsewhere", 4242, 1796000000)
NOBODY = 65534


def _lease_path(folder: Path) -> Path:
    """The lease's file in `folder`, as the host's shell names it."""
    out = subprocess.run(["sh", "-c", name_command((str(folder),))], capture_output=True,
                         text=True, check=True)
    return Path(out.stdout.strip())


def _link(folder: Path) -> HostLink:
    return HostLink("h1", lease=True, lease_dirs=(str(folder),))


def _holder(folder: Path, who: Controller) -> subprocess.Popen[str]:
    """Another controller's control shell: takes the lease as `who`, then waits on stdin."""
    proc = subprocess.Popen(["sh"], stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
    assert proc.stdin is not None and proc.stdout is not None
    proc.stdin.write(take_command(who, dirs=(str(folder),)) + "\necho END\n")
    proc.stdin.flush()
    said = "".join(iter(proc.stdout.readline, "END\n"))
    assert parse_reply(said).state is LeaseState.TAKEN, said
    return proc


def _end(proc: subprocess.Popen[str]) -> None:
    if proc.poll() is None:
        assert proc.stdin is not None
        proc.stdin.close()
        proc.wait(timeout=5)


async def _refused(folder: Path) -> str:
    """The one line a link is refused with, within 5 s (never a hang)."""
    conn = LocalConn()
    try:
        t0 = time.monotonic()
        with pytest.raises(RemoteError) as refused:
            await asyncio.wait_for(_link(folder)._start_shell(conn), 5)  # type: ignore[arg-type]
        assert time.monotonic() - t0 < 5
        assert not isinstance(refused.value, LeaseHeld)
        return str(refused.value)
    finally:
        await conn.stop()


async def test_the_file_is_made_0600_holding_the_holders_line_only(tmp_path):
    conn = LocalConn()
    try:
        link = _link(tmp_path)
        await link._start_shell(conn)  # type: ignore[arg-type]
        assert link.lease_path is not None
        info = os.lstat(link.lease_path)
        assert stat.S_ISREG(info.st_mode) and stat.S_IMODE(info.st_mode) == 0o600
        text = Path(link.lease_path).read_text()
        assert text.count("\n") == 1
        words = dict(w.split("=", 1) for w in text.split()[1:])
        assert set(words) <= {"user", "machine", "pid", "start", "where", "link", "shell"}
        boot = Path("/proc/sys/kernel/random/boot_id").read_text().strip()
        assert boot not in text and boot.replace("-", "") not in text  # hashed, not told
    finally:
        await conn.stop()


async def test_a_symbolic_link_at_the_name_is_refused_and_its_target_never_written(tmp_path):
    target = tmp_path / "precious"
    target.write_text("root's own\n")
    _lease_path(tmp_path).symlink_to(target)
    said = await _refused(tmp_path)
    assert said.startswith(f"h1: refused: {_lease_path(tmp_path)} is a symbolic link owned by ")
    assert "\n" not in said
    assert target.read_text() == "root's own\n"
    dangling = tmp_path / "d"
    dangling.mkdir()
    _lease_path(dangling).symlink_to(tmp_path / "nothing")  # never created through it
    assert "is a symbolic link" in await _refused(dangling)
    assert not (tmp_path / "nothing").exists()


async def test_a_fifo_at_the_name_is_refused_at_once(tmp_path):
    os.mkfifo(_lease_path(tmp_path))
    said = await _refused(tmp_path)
    assert f"{_lease_path(tmp_path)} is a FIFO owned by " in said


async def test_a_file_of_another_mode_is_refused(tmp_path):
    path = _lease_path(tmp_path)
    path.write_text("abtui-lease user=mallory machine=m pid=1 start=0 shell=1\n")
    path.chmod(0o644)
    said = await _refused(tmp_path)
    assert f"{path} is a file owned by " in said and "(mode -rw-r--r--" in said
    assert path.read_text().startswith("abtui-lease user=mallory")


@pytest.mark.skipif(os.geteuid() != 0, reason="giving a file to another user needs root")
async def test_another_users_locked_file_with_a_forged_holder_is_refused_naming_it(tmp_path):
    path = _lease_path(tmp_path)
    path.write_text("abtui-lease user=root machine=ctl pid=1 start=0 shell=1\n")
    path.chmod(0o600)
    os.chown(path, NOBODY, NOBODY)
    with open(path) as held:
        fcntl.flock(held, fcntl.LOCK_EX)  # locked, as its owner would
        said = await _refused(tmp_path)
    assert f"{path} is a file owned by nobody" in said and "driven by" not in said
    assert "ctl" not in said


async def test_a_folder_others_can_write_takes_no_lease(tmp_path):
    tmp_path.chmod(0o1777)
    conn = LocalConn()
    try:
        link = _link(tmp_path)
        await link._start_shell(conn)  # type: ignore[arg-type]
        assert link.lease_path is None
        assert f"the folder {tmp_path} can be written by others (mode drwxrwxrwt)" in \
            link.lease_note
        assert not list(tmp_path.glob("abtui-lease.*"))
    finally:
        tmp_path.chmod(0o700)
        await conn.stop()


async def test_a_silent_holder_is_taken_over_a_busy_or_answering_one_is_not(tmp_path):
    holder = _holder(tmp_path, ALICE)
    path = _lease_path(tmp_path)
    conn = LocalConn()
    try:
        with pytest.raises(LeaseHeld):  # answering: its heartbeat is fresh
            await _link(tmp_path)._start_shell(conn)  # type: ignore[arg-type]
        assert holder.poll() is None
        assert holder.stdin is not None
        holder.stdin.write("sleep 30\n")  # a command in flight: busy, not frozen
        holder.stdin.flush()
        time.sleep(0.3)
        old = time.time() - STALE_S - 5
        os.utime(path, (old, old))
        with pytest.raises(LeaseHeld, match=r"silent for \d+ s"):
            await _link(tmp_path)._start_shell(conn)  # type: ignore[arg-type]
        assert holder.poll() is None
        subprocess.run(["pkill", "-KILL", "-P", str(holder.pid), "-x", "sleep"], check=False)
        time.sleep(0.3)
        os.utime(path, (old, old))
        link = _link(tmp_path)
        await link._start_shell(conn)  # type: ignore[arg-type]
        assert holder.wait(timeout=5) == -9 and link.lease_path == str(path)
    finally:
        if holder.poll() is None:
            holder.kill()
            holder.wait()
        await conn.stop()


async def _controller(folders: list[Path], conn: LocalConn) -> list[BaseException | None]:
    """One controller's links to `folders` (each its own host), leased in the one order as
    connect_all does, their shells started at once."""
    links = [HostLink(f"h{i}", lease=True, lease_dirs=(str(f),)) for i, f in enumerate(folders)]
    order = LeaseOrder(len(links))
    for link in links:
        link.lease_order = order
    got = await asyncio.gather(*(link._start_shell(conn)  # type: ignore[arg-type]
                                 for link in links), return_exceptions=True)
    return [g if isinstance(g, BaseException) else None for g in got]


async def test_two_controllers_started_together_exactly_one_wins(tmp_path):
    """Each names its hosts in another order; the one order of their lease files makes one
    take both and the other refused on the first and not asking the second (10 tries)."""
    hosts = [tmp_path / "h1", tmp_path / "h2"]
    for h in hosts:
        h.mkdir()
    wins = []
    for _ in range(10):
        a, b = LocalConn(), LocalConn()
        try:
            got_a, got_b = await asyncio.gather(_controller(hosts, a),
                                                _controller(hosts[::-1], b))
            outcome = [all(e is None for e in got) for got in (got_a, got_b)]
            wins.append(outcome)
            loser = got_b if outcome[0] else got_a
            assert sum(isinstance(e, LeaseHeld) for e in loser) == 1, loser
            assert sum(isinstance(e, LeaseRefused) and "not asked for" in e.reason
                       for e in loser) == 1, loser
        finally:
            await a.stop()
            await b.stop()
    assert all(sum(w) == 1 for w in wins), wins


async def test_an_order_whose_link_fails_before_naming_its_file_does_not_wait_for_it():
    order = LeaseOrder(2)
    turn = asyncio.ensure_future(order.turn("/run/b"))
    await asyncio.sleep(0)
    assert not turn.done()
    order.leave()
    assert await asyncio.wait_for(turn, 1) is None
    again = LeaseOrder(2)
    first = asyncio.ensure_future(again.turn("/run/a"))
    second = asyncio.ensure_future(again.turn("/run/b"))
    assert await asyncio.wait_for(first, 1) is None
    await asyncio.sleep(0)
    assert not second.done()
    again.done("/run/a", "h0 (before it) is driven by abtui of x")
    assert await asyncio.wait_for(second, 1) == "h0 (before it) is driven by abtui of x"
    with contextlib.suppress(Exception):
        turn.cancel()


@pytest.mark.skipif(os.geteuid() != 0 or shutil.which("setpriv") is None,
                    reason="a login of another user needs root and setpriv(1)")
async def test_a_login_that_is_not_root_takes_no_lease_and_says_why():
    """In root's folder, another user's login can neither create the lease nor take root's
    file: no lease, said (not a refusal of the host, not a hang)."""
    import tempfile

    with tempfile.TemporaryDirectory(prefix="abtui-lease-test.", dir="/tmp") as top:
        folder = Path(top)
        folder.chmod(0o755)  # root's, as /run: (pytest's own folders are closed to others)
        await _not_root(folder)


async def _not_root(folder: Path) -> None:
    conn = LocalConn(("setpriv", f"--reuid={NOBODY}", f"--regid={NOBODY}", "--clear-groups",
                      "bash", "--noprofile", "--norc"))
    try:
        link = _link(folder)
        await link._start_shell(conn)  # type: ignore[arg-type]
        assert link.lease_path is None and "cannot create" in link.lease_note
        assert "only root can: log in as root, or sudo = true" in link.lease_note
        path = _lease_path(folder)
        path.touch(mode=0o600)
        link = _link(folder)
        await link._start_shell(conn)  # type: ignore[arg-type]
        assert link.lease_path is None and f"{path} is root's" in link.lease_note
    finally:
        await conn.stop()


async def test_a_live_holders_heartbeat_keeps_its_lease_fresh(tmp_path, monkeypatch):
    """While the link lives its heartbeat refreshes the file's time (so it never looks
    silent); once it stops, the time stands still."""
    import abtui.remote.link as link_module

    monkeypatch.setattr(link_module, "HEARTBEAT_S", 0.2)
    conn = LocalConn()
    link = _link(tmp_path)
    try:
        link._shell = await link._start_shell(conn)  # type: ignore[arg-type]
        assert link.lease_path is not None
        old = time.time() - 60
        os.utime(link.lease_path, (old, old))
        beat = asyncio.ensure_future(link._beat())
        await asyncio.sleep(1.0)
        assert os.stat(link.lease_path).st_mtime > time.time() - 5
        beat.cancel()
        with contextlib.suppress(asyncio.CancelledError):
            await beat
        os.utime(link.lease_path, (old, old))
        await asyncio.sleep(0.5)
        assert os.stat(link.lease_path).st_mtime < time.time() - 50
    finally:
        await conn.stop()
