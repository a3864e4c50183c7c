"""Long commands on a host: each on an SSH channel of its own, its stdout streamed line by line
(`lines`), or handed on packet by packet from the channel's own callback (`feed`: no task
woken per line, for the streams a run reads all along). The command reports its process
group first, so cancelling ends it and its children for certain (a TERM, then a KILL for
what is left). The link (abtui.remote.link) starts them; this is what a started one is.
"""

from __future__ import annotations

import asyncio
import contextlib
import shlex
from collections import deque
from collections.abc import AsyncIterator, Callable
from typing import Generic, Protocol, TypeVar

from abtui.core.errors import RemoteError
from abtui.core.model import LinkState
from abtui.core.pids import pgid_problem
from abtui.remote.asyncssh_privates import hand_output
from abtui.remote.sshlib import asyncssh

PGID_MARK = "__ABTUI_PGID__"


# How far the group's start may lie from the time its journal recorded (seconds): the record
# is written as soon as the group reports its number (well under a second later), the rest is
# for a controller and a host whose clocks run at slightly different rates over hours.
SAME_START_S = 5.0
# The programs a run starts, checked by name where the journal names one of them.
PROGRAMS = ("iperf3", "ping", "sockperf")


def program_of(what: str) -> str:
    """The program a journal's `what` names, when it is one a run starts ("" otherwise:
    the group's start time alone tells it apart)."""
    word = what.split()[0].rsplit("/", 1)[-1] if what.strip() else ""
    return word if word in PROGRAMS else ""


def same_group_command(pgid: int, what: str, age: float | None) -> str:
    """A shell test that succeeds while process group `pgid` is the one recorded: a live
    member runs the program `what` names (its name begins so: `iperf3-3.17` too), and the
    group's oldest member has run `age` seconds, within SAME_START_S (None: not recorded,
    any age)."""
    g = int(pgid)
    low, high = (-1.0, 1e12) if age is None else (age - SAME_START_S, age + SAME_START_S)
    prog = shlex.quote(program_of(what))
    return (f"ps -A -o pgid= -o etimes= -o stat= -o comm= 2>/dev/null | awk -v g={g} "
            f"-v w={prog} -v lo={low:.0f} -v hi={high:.0f} "
            # procps prints a process started within the last second, before its own clock
            # tick, as a negative age wrapped to 2^32: that is 0 s
            "'$1==g && $3 !~ /^Z/ {e=$2+0; if (e>=2^31) e=0; if (e>m) m=e; "
            "if (w==\"\" || index($4, w)==1) f=1} "
            "END {exit !(f && m>=lo && m<=hi)}'")


def group_alive_command(pgid: int) -> str:
    """A shell test that succeeds while process group `pgid` has a member that is not a
    zombie. `kill -0` counts zombies: children orphaned by the kill wait for init to reap
    them (a second and more on some hosts), which made every stop wait out its grace."""
    g = int(pgid)
    return (f"if out=$(ps -A -o pgid= -o stat= 2>/dev/null) && [ -n \"$out\" ]; then "
            f"printf '%s\\n' \"$out\" | awk '$1=={g} && $2 !~ /^Z/ {{f=1}} END {{exit !f}}'; "
            f"else kill -0 -{g} 2>/dev/null; fi")


def group_runs_command(pgid: int, what: str = "") -> str:
    """A shell test that succeeds while process group `pgid` still runs the program `what`
    names (its first word's base name; any program when empty): a reused number is not ours."""
    prog = what.split()[0].rsplit("/", 1)[-1] if what.strip() else ""
    test = f"$1=={int(pgid)}" + (" && $2==w" if prog else "")
    return (f"ps -A -o pgid= -o comm= | awk -v w={shlex.quote(prog)} "
            f"'{test} {{f=1}} END {{exit !f}}'")


class ProcessHost(Protocol):
    """What a streamed process knows of the link that started it (abtui.remote.link.HostLink):
    the host's name, whether it is still connected, and how to end a process group there."""

    alias: str
    state: LinkState

    async def kill_group(self, pgid: int, grace: float = 2.0) -> None: ...


L = TypeVar("L", bound=ProcessHost)


class LineFeed:
    """stdout handed on as it comes off the channel, with no task woken for it: asyncssh
    gives each packet's data to `write` from its own callback (a writer, as its redirects
    use: abtui.remote.asyncssh_privates, where a task reading stdout is the fallback), and
    every line that packet completed goes to `handle` in one call (a ping line, an
    iperf3 interval: one packet, one call). `ended` is done when the stream ends (the
    process exits, the link drops; a partial last line is handed on first), or holds what
    `handle` raised; from `stop` on, what arrives is drained and dropped."""

    def __init__(self, handle: Callable[[list[str]], None]) -> None:
        self._handle: Callable[[list[str]], None] | None = handle
        self._partial = ""
        self.ended: asyncio.Future[None] = asyncio.get_running_loop().create_future()

    def write(self, data: str) -> None:
        if "\n" not in data:
            self._partial += data
            return
        *lines, self._partial = (self._partial + data).split("\n")
        self._hand(lines)

    def write_eof(self) -> None:
        if self._partial:
            self._hand([self._partial])
            self._partial = ""
        self.stop()

    def write_exception(self, exc: Exception) -> None:
        """A link lost before the feed was set: the stream ends there, as `lines` does."""
        self.write_eof()

    def close(self) -> None:
        self.write_eof()

    async def until_end(self) -> None:
        """Wait for the stream's end; what `handle` raised is raised here, and once this
        returns (or is cancelled) nothing more is handed on."""
        try:
            await self.ended
        finally:
            self.stop()

    def stop(self) -> None:
        self._handle = None
        if not self.ended.done():
            self.ended.set_result(None)

    def _hand(self, lines: list[str]) -> None:
        if self._handle is None:
            return
        try:
            self._handle(lines)
        except Exception as exc:  # never into asyncssh's packet handling: to the awaiter
            self._handle = None
            if not self.ended.done():
                self.ended.set_exception(exc)


class RemoteProcess(Generic[L]):
    """A streamed remote command: its stdout lines, its process group, and how to end it;
    `link` the link that started it (a `RemoteProcess[HostLink]` from HostLink.stream)."""

    def __init__(self, link: L, proc: asyncssh.SSHClientProcess[str], command: str,
                 stderr_lines: int) -> None:
        self.link = link
        self.command = command
        self.pgid: int | None = None
        self._proc = proc
        self._stderr: deque[str] = deque(maxlen=stderr_lines)
        self._stderr_task = asyncio.get_running_loop().create_task(self._drain_stderr())

    async def _read_pgid(self) -> None:
        line = await self._proc.stdout.readline()
        if line.startswith(PGID_MARK):
            with contextlib.suppress(ValueError, IndexError):
                pgid = int(line.split()[1])
                # a group abtui may never end is no group to end it by (abtui.core.pids)
                self.pgid = None if pgid_problem(pgid) else pgid

    async def _drain_stderr(self) -> None:
        with contextlib.suppress(asyncssh.Error, OSError):
            async for line in self._proc.stderr:
                self._stderr.append(line.rstrip("\n"))

    @property
    def stderr(self) -> str:
        return "\n".join(self._stderr)

    async def lines(self) -> AsyncIterator[str]:
        """stdout, line by line, until the process ends or the link drops."""
        try:
            async for line in self._proc.stdout:
                yield line.rstrip("\n")
        except (asyncssh.Error, OSError):
            return

    def feed(self, handle: Callable[[list[str]], None]) -> LineFeed:
        """stdout handed to `handle` as it arrives, every line one packet carried in one call
        (see LineFeed); the other way to read it than `lines`, never both."""
        feed = LineFeed(handle)
        hand_output(self._proc, feed)  # (asyncssh's own callback: abtui.remote.asyncssh_privates)
        return feed

    async def follow(self, handle: Callable[[list[str]], None]) -> None:
        """stdout handed to `handle` as it arrives (see `feed`) until the stream ends."""
        await self.feed(handle).until_end()

    def write(self, data: str) -> None:
        self._proc.stdin.write(data)

    def close_stdin(self) -> None:
        """End of file on the command's stdin (a loop reading it ends by itself)."""
        self._proc.stdin.write_eof()

    async def wait(self, timeout: float | None = None) -> int | None:
        """The exit status (None when ended by a signal or the link dropped)."""
        try:
            result = await asyncio.wait_for(self._proc.wait(check=False), timeout)
        except (asyncssh.Error, OSError):
            return None
        finally:
            with contextlib.suppress(Exception):
                await asyncio.wait_for(self._stderr_task, 1.0)
        return result.exit_status if result.exit_status is not None and \
            result.exit_status >= 0 else None

    async def terminate(self, grace: float = 2.0) -> None:
        """End the remote process and all its children, for certain."""
        if self.pgid is not None and self.link.state is LinkState.CONNECTED:
            with contextlib.suppress(RemoteError):
                await self.link.kill_group(self.pgid, grace)
        self._proc.close()
        with contextlib.suppress(Exception):
            await asyncio.wait_for(self._proc.wait_closed(), grace)
        self._stderr_task.cancel()
