"""The control shell's framing (abtui.remote.control_shell.ControlShell) with a fake SSH process: a
command is written while its TCP socket is corked (asyncssh's two packets leave in one
segment) and uncorked right after, even when the write fails; the end marks are one shell's,
so the patterns asyncssh searches with are compiled once, not per command."""

from __future__ import annotations

import asyncio
import glob
import os
import re
import shutil
import socket
from typing import Any

import pytest

from abtui.remote.control_shell import ControlShell
from abtui.remote.cork import release, together
from abtui.remote.os.dialect import as_function
from tests.unit.remote.local_shell import PipeProcess
from tests.unit.remote.local_shell import stop as _stop


class Reader:
    def __init__(self) -> None:
        self.data = ""
        self.patterns: list[re.Pattern[str]] = []

    async def readuntil(self, pattern: re.Pattern[str], max_len: int = 0) -> str:
        self.patterns.append(pattern)
        m = pattern.search(self.data)
        assert m is not None
        out, self.data = self.data[: m.end()], self.data[m.end():]
        return out


class Writer:
    def __init__(self, sock: Sock, fail: bool = False) -> None:
        self.sock, self.fail = sock, fail
        self.corked_writes: list[bool] = []

    def write(self, text: str) -> None:
        self.corked_writes.append(self.sock.corked)
        if self.fail:
            raise BrokenPipeError("gone")


class Sock:
    type, family = socket.SOCK_STREAM, socket.AF_INET

    def __init__(self) -> None:
        self.corked = False
        self.calls: list[int] = []

    def setsockopt(self, level: int, name: int, value: int) -> None:
        assert (level, name) == (socket.IPPROTO_TCP, socket.TCP_CORK)
        self.corked = bool(value)
        self.calls.append(value)


class Conn:
    def __init__(self, sock: Any) -> None:
        self.sock = sock

    def get_extra_info(self, name: str) -> Any:
        return self.sock if name == "socket" else None


class Process:
    def __init__(self, sock: Sock, fail: bool = False) -> None:
        self.stdin, self.stdout, self.stderr = Writer(sock, fail), Reader(), Reader()


@pytest.mark.skipif(not hasattr(socket, "TCP_CORK"), reason="no TCP_CORK on this OS")
async def test_a_command_is_written_corked_and_its_result_read_by_one_shells_patterns() -> None:
    sock = Sock()
    proc = Process(sock)
    shell = ControlShell(proc, Conn(sock))  # type: ignore[arg-type]
    for n, (out, err, status) in enumerate([("hi\n", "oops\n", 3), ("x", "", 0)]):
        shell.send("true", "{", "}")
        assert proc.stdin.corked_writes[n] and not sock.corked
        proc.stdout.data = f"{out}\n{shell.mark} {status}\n"
        proc.stderr.data = f"{err}\n{shell.mark}\n"
        result = await asyncio.wait_for(shell.result(), 5)
        assert (result.stdout, result.stderr, result.exit_status) == (out.rstrip("\n"), err,
                                                                      status)
    assert len({id(p) for p in proc.stdout.patterns + proc.stderr.patterns}) == 2


@pytest.mark.skipif(not hasattr(socket, "TCP_CORK"), reason="no TCP_CORK on this OS")
async def test_a_failed_write_leaves_the_socket_uncorked() -> None:
    sock = Sock()
    shell = ControlShell(Process(sock, fail=True), Conn(sock))  # type: ignore[arg-type]
    with pytest.raises(BrokenPipeError):
        shell.send("true", "{", "}")
    assert sock.calls == [1, 0] and not sock.corked


async def test_a_link_without_a_tcp_socket_writes_uncorked() -> None:
    sock = Sock()
    proc = Process(sock)
    shell = ControlShell(proc, Conn(None))  # type: ignore[arg-type]
    shell.send("true", "(", ")")
    assert proc.stdin.corked_writes == [False] and sock.calls == []


@pytest.mark.skipif(shutil.which("bash") is None, reason="no bash here")
async def test_bash_reads_each_command_whole_and_frames_it_as_before() -> None:
    """bash 5 switches to the loop that reads a command with one `read -N` (its length in
    bytes, whatever the locale); output, stderr, exit status, a multibyte argument, a command
    that does not parse and `isolate` keep their meaning."""
    proc = await asyncio.create_subprocess_exec(
        "bash", "--noprofile", "--norc", stdin=asyncio.subprocess.PIPE,
        stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.PIPE,
        env={"LC_ALL": "C.UTF-8", "PATH": "/usr/bin:/bin"})
    try:
        shell = ControlShell(PipeProcess(proc), Conn(None))  # type: ignore[arg-type]
        await asyncio.wait_for(shell.start_bulk(), 5)
        assert shell.bulk
        cases = [("printf 'é\\nx'; echo oops >&2; f() { return 3; }; f", "{", "}",
                  ("é\nx", "oops\n", 3)),
                 ("x=1; exit 4", "(", ")", ("", "", 4)),
                 ("echo \"${x:-unset}\"", "{", "}", ("unset", "", 0)),
                 ("if then", "{", "}", None),
                 ("echo still here", "{", "}", ("still here", "", 0))]
        for command, opening, closing, want in cases:
            shell.send(command, opening, closing)
            result = await asyncio.wait_for(shell.result(), 5)
            got = (result.stdout, result.stderr, result.exit_status)
            if want is None:  # bash says why on stderr, status 2, the shell goes on
                assert result.exit_status == 2 and "syntax error" in result.stderr
            else:
                assert got == want
    finally:
        await _stop(proc)


@pytest.mark.skipif(shutil.which("bash") is None, reason="no bash here")
async def test_a_dialect_command_sent_again_calls_the_function_its_first_sending_defined() -> None:
    """The second sending of the same dialect command is a call of a few bytes, with the same
    result; a definition bash cannot parse is not kept (sent whole again, same error)."""
    proc = await asyncio.create_subprocess_exec(
        "bash", "--noprofile", "--norc", stdin=asyncio.subprocess.PIPE,
        stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.PIPE,
        env={"LC_ALL": "C", "PATH": "/usr/bin:/bin"})
    try:
        pipe = PipeProcess(proc)
        written = pipe.written
        shell = ControlShell(pipe, Conn(None))  # type: ignore[arg-type]
        await asyncio.wait_for(shell.start_bulk(), 5)
        flip = as_function("n=$((${n:-0} + 1)); echo \"run $n\"; [ $n -lt 2 ] || return 7")
        broken = as_function("if then; echo never reached here")
        seen = []
        for command in (flip, flip, broken, broken):
            shell.send(command, "{", "}")
            result = await asyncio.wait_for(shell.result(), 5)
            seen.append((result.stdout, result.exit_status, len(written[-1])))
        assert [s[:2] for s in seen[:2]] == [("run 1", 0), ("run 2", 7)]
        assert seen[1][2] < 40 < seen[0][2]  # the call, not the definition
        assert [s[1] for s in seen[2:]] == [2, 2] and seen[3][2] == seen[2][2] > 40
    finally:
        await _stop(proc)


class Records:
    """A stream over a SOCK_SEQPACKET socket: each write(2) of bash is one record."""

    def __init__(self, sock: socket.socket) -> None:
        self.sock, self.buf, self.records = sock, "", 0

    async def readuntil(self, pattern: re.Pattern[str], max_len: int = 0) -> str:
        loop = asyncio.get_running_loop()
        while (m := pattern.search(self.buf)) is None:
            chunk = await loop.sock_recv(self.sock, 1 << 20)
            assert chunk, "the shell ended"
            self.records += 1
            self.buf += chunk.decode()
        out, self.buf = self.buf[: m.end()], self.buf[m.end():]
        return out


class RecordProcess:
    """bash with stdin a pipe and stdout and stderr sockets that keep each write apart."""

    def __init__(self, proc: asyncio.subprocess.Process, out: socket.socket,
                 err: socket.socket) -> None:
        self.proc, self.stdin = proc, self
        self.stdout, self.stderr = Records(out), Records(err)

    def write(self, text: str) -> None:
        assert self.proc.stdin is not None
        self.proc.stdin.write(text.encode())


async def _record_bash() -> tuple[RecordProcess, ControlShell]:
    out, out_child = socket.socketpair(socket.AF_UNIX, socket.SOCK_SEQPACKET)
    err, err_child = socket.socketpair(socket.AF_UNIX, socket.SOCK_SEQPACKET)
    out.setblocking(False)
    err.setblocking(False)
    try:
        proc = await asyncio.create_subprocess_exec(
            "bash", "--noprofile", "--norc", stdin=asyncio.subprocess.PIPE, stdout=out_child,
            stderr=err_child, env={"LC_ALL": "C", "PATH": "/usr/bin:/bin"})
    finally:
        out_child.close()
        err_child.close()
    rp = RecordProcess(proc, out, err)
    shell = ControlShell(rp, Conn(None))  # type: ignore[arg-type]
    await asyncio.wait_for(shell.start_bulk(), 5)
    return rp, shell


async def _end(rp: RecordProcess) -> None:
    await _stop(rp.proc)
    rp.stdout.sock.close()
    rp.stderr.sock.close()


@pytest.mark.skipif(shutil.which("bash") is None, reason="no bash here")
async def test_a_bulk_shells_reply_is_one_write_with_stderr_and_status_in_it() -> None:
    """A knob flip's reply (three lines of output, then the end marks) was 5 writes on stdout
    and 2 on stderr, each a wake-up of sshd and often an SSH packet of its own; now one write
    on stdout carries the output, stderr and the status, and stderr gets nothing."""
    rp, shell = await _record_bash()
    try:
        assert shell.bulk
        flip = as_function("echo 5; echo __ABTUI_SWAP__; echo oops >&2; echo 6; return 3")
        on_stderr = rp.stderr.records  # the probe's, before the loop
        for _ in range(3):
            before = rp.stdout.records
            shell.send(flip, "{", "}")
            result = await asyncio.wait_for(shell.result(), 5)
            assert (result.stdout, result.stderr, result.exit_status) == \
                ("5\n__ABTUI_SWAP__\n6", "oops\n", 3)
            assert rp.stdout.records - before == 1
        assert rp.stderr.records == on_stderr
    finally:
        await _end(rp)


# what a bulk shell is sent twice over: past 64 KiB (fresh files), a NUL byte, the folder's
# name (None: not compared), a subshell that exits, no output, no newline
BULK_CASES: list[tuple[str, str, str, tuple[str, str, int] | None]] = [
    ("head -c 70000 /dev/zero | tr '\\0' x; echo; echo e >&2", "{", "}", ("x" * 70000, "e\n", 0)),
    ("printf 'a\\0b\\n'", "{", "}", ("ab", "", 0)),
    ("echo \"$__abtui_t\"", "{", "}", None),
    ("echo gone; exit 4", "(", ")", ("gone", "", 4)),
    ("true", "{", "}", ("", "", 0)),
    ("printf 'no newline'", "{", "}", ("no newline", "", 0))]


def _folders() -> set[str]:
    return set(glob.glob("/dev/shm/abtui.*")) | set(glob.glob("/tmp/abtui.*"))


@pytest.mark.skipif(shutil.which("bash") is None, reason="no bash here")
async def test_a_bulk_shell_killed_outright_leaves_no_folder() -> None:
    """SIGKILL runs no trap: the folder must already be gone, after the first files and
    after the fresh ones past 64 KiB (before, one folder a killed shell stayed on the host)."""
    before = _folders()
    rp, shell = await _record_bash()
    try:
        for command, opening, closing, _want in BULK_CASES:
            shell.send(command, opening, closing)
            await asyncio.wait_for(shell.result(), 5)
        rp.proc.kill()
        await rp.proc.wait()
        assert _folders() <= before, sorted(_folders() - before)
    finally:
        await _end(rp)


@pytest.mark.skipif(shutil.which("bash") is None, reason="no bash here")
async def test_a_bulk_shell_keeps_outputs_apart_and_its_folder_is_gone_while_it_runs() -> None:
    """Outputs past the 64 KiB at which the loop moves to fresh files, a NUL byte (left out),
    a subshell that exits and a command without output each come back whole and alone; the
    shell's folder is removed as soon as its files are open, and it ends cleanly."""
    rp, shell = await _record_bash()
    try:
        cases = BULK_CASES
        folder = ""
        for _ in range(2):
            for command, opening, closing, want in cases:
                shell.send(command, opening, closing)
                result = await asyncio.wait_for(shell.result(), 5)
                if want is None:
                    folder = result.stdout
                    assert folder.startswith(("/dev/shm/abtui.", "/tmp/abtui."))
                    assert not os.path.exists(folder)
                else:
                    assert (result.stdout, result.stderr, result.exit_status) == want
        assert rp.proc.stdin is not None
        rp.proc.stdin.close()
        assert await asyncio.wait_for(rp.proc.wait(), 5) == 0
        assert folder and not os.path.exists(folder)
    finally:
        await _end(rp)


def _shells(n: int) -> tuple[list[Sock], list[Process], list[ControlShell]]:
    socks = [Sock() for _ in range(n)]
    procs = [Process(s) for s in socks]
    shells = [ControlShell(p, Conn(s))  # type: ignore[arg-type]
              for s, p in zip(socks, procs, strict=True)]
    return socks, procs, shells


@pytest.mark.skipif(not hasattr(socket, "TCP_CORK"), reason="no TCP_CORK on this OS")
async def test_commands_in_a_release_are_held_until_the_last_one_is_written() -> None:
    """A flip's hosts' commands leave together: each written corked and held, the corks
    lifted once the last expected one is written (by the uncorker given, else one by one);
    a command sent after that leaves at once."""
    socks, procs, shells = _shells(3)
    lifted: list[list[Sock]] = []

    def uncorker(held: list[Sock]) -> list[Sock]:
        lifted.append(list(held))
        return held[1:]  # the first lifted "in one call", the others handed back

    with together(3, uncorker):
        for shell in shells[:2]:
            shell.send("true", "{", "}")
        assert [s.corked for s in socks] == [True, True, False]  # held
        shells[2].send("true", "{", "}")
        assert lifted == [socks]
        assert [s.calls for s in socks] == [[1], [1, 0], [1, 0]]
        shells[0].send("again", "{", "}")  # lifted already: leaves at once
    assert [p.stdin.corked_writes for p in procs] == [[True, True], [True], [True]]
    assert socks[0].calls == [1, 1, 0] and not socks[0].corked


@pytest.mark.skipif(not hasattr(socket, "TCP_CORK"), reason="no TCP_CORK on this OS")
async def test_a_release_lets_go_at_the_loops_next_pass_when_a_host_never_writes() -> None:
    """A host whose shell was busy or gone (no write) holds the others back for one pass of
    the event loop at most; a write that fails counts as written."""
    socks, procs, shells = _shells(3)
    procs[1].stdin.fail = True
    with together(3):
        shells[0].send("true", "{", "}")
        with pytest.raises(BrokenPipeError):
            shells[1].send("true", "{", "}")
        assert socks[0].corked and socks[1].corked
        await asyncio.sleep(0)
        assert not socks[0].corked and not socks[1].corked
    assert socks[2].calls == []


@pytest.mark.skipif(not hasattr(socket, "TCP_CORK"), reason="no TCP_CORK on this OS")
async def test_what_a_release_holds_is_let_go_on_the_way_out() -> None:
    socks, _procs, shells = _shells(2)
    with pytest.raises(RuntimeError), together(4):
        shells[0].send("true", "{", "}")
        raise RuntimeError("the flip failed before the other hosts' commands")
    assert socks[0].calls == [1, 0] and release() is None
