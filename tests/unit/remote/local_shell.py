"""A real local shell on pipes, as sshd gives abtui's control shell (its stdin a pipe), for
tests of abtui.remote.control_shell.ControlShell and of what a link does in its shell (the lease);
`LocalConn` stands for an SSH connection whose processes are local shells."""

from __future__ import annotations

import asyncio
import re
from typing import Any


async def stop(proc: asyncio.subprocess.Process) -> None:
    """End a test's shell as sshd does, by closing its stdin (a bulk shell's EXIT trap
    removes its folder); killed only if it has not ended after 5 s."""
    if proc.stdin is not None and not proc.stdin.is_closing():
        proc.stdin.close()
    try:
        await asyncio.wait_for(proc.wait(), 5)
    except TimeoutError:
        proc.kill()
        await proc.wait()


class Stream:
    def __init__(self, reader: Any) -> None:
        self.reader, self.buf = reader, ""

    async def readuntil(self, pattern: re.Pattern[str], max_len: int = 0) -> str:
        while (m := pattern.search(self.buf)) is None:
            chunk = await self.reader.read(4096)
            if not chunk:
                raise asyncio.IncompleteReadError(self.buf.encode(), None)
            self.buf += chunk.decode()
        out, self.buf = self.buf[: m.end()], self.buf[m.end():]
        return out


class PipeProcess:
    """A real shell on pipes, as sshd gives the control shell: its stdin a pipe."""

    def __init__(self, proc: asyncio.subprocess.Process) -> None:
        self.proc = proc
        self.stdin = self
        self.stdout = Stream(proc.stdout)
        self.stderr = Stream(proc.stderr)
        self.written: list[str] = []

    def write(self, text: str) -> None:
        assert self.proc.stdin is not None
        self.written.append(text)
        self.proc.stdin.write(text.encode())

    def write_eof(self) -> None:
        assert self.proc.stdin is not None
        self.proc.stdin.close()

    def close(self) -> None:
        """As asyncssh closes a channel: the shell's stdin ends."""
        if self.proc.stdin is not None and not self.proc.stdin.is_closing():
            self.proc.stdin.close()


class LocalConn:
    """An SSH connection's stand-in: each process it creates is a local shell (`argv`, with
    `env`), whatever command is asked; every one is kept, to be stopped at the end."""

    def __init__(self, argv: tuple[str, ...] = ("bash", "--noprofile", "--norc"),
                 env: dict[str, str] | None = None) -> None:
        self.argv, self.env = argv, env or {"LC_ALL": "C", "PATH": "/usr/bin:/bin"}
        self.procs: list[PipeProcess] = []

    def get_extra_info(self, name: str) -> Any:
        return None

    async def create_process(self, command: str, **_: Any) -> PipeProcess:
        proc = await asyncio.create_subprocess_exec(
            *self.argv, stdin=asyncio.subprocess.PIPE, stdout=asyncio.subprocess.PIPE,
            stderr=asyncio.subprocess.PIPE, env=self.env)
        self.procs.append(PipeProcess(proc))
        return self.procs[-1]

    async def stop(self) -> None:
        for p in self.procs:
            await stop(p.proc)
