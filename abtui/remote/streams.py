"""Long commands on a host: each on an SSH channel of its own, its stdout streamed line by line
(`lines`), or handed on packet by packet from the channel's own callback (`feed`: no task
woken per line, for the streams a run reads all along). The channel's session is
`StreamSession`, written to asyncssh's public session API (`SSHClientSession.data_received`,
`SSHClientChannel`): each packet's data comes to it from the channel, with no stream reader
between. The command reports its process group first, so cancelling ends it and its
children for certain (a TERM, then a KILL for what is left). The link (abtui.remote.link)
starts them; this is what a started one is.
"""

from __future__ import annotations

import asyncio
import contextlib
import functools
import shlex
from collections import deque
from collections.abc import AsyncIterator, Callable
from typing import Any, Generic, Protocol, TypeVar

from abtui.core.errors import RemoteError
from abtui.core.model import LinkState
from abtui.core.pids import pgid_problem
from abtui.remote.sshlib import asyncssh

PGID_MARK = "__ABTUI_PGID__"
# stdout a reader has not taken yet (before a feed) past which the channel stops reading:
# the host's writes then wait on the SSH window, nothing piles up here
READ_AHEAD = 1 << 20


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


def own_group(command: str) -> str:
    """`command` made to run in the process group its stream reports (HostLink.stream runs
    every command so). The link reports the shell's `$$` as the group: right where sshd makes
    each command a session leader (OpenSSH calls setsid), wrong on dropbear (the ARM guest's
    sshd), whose command stays in the group of the connection's own process (its parent), so
    that ending the reported group ended nothing and a run's loops outlived it. There the shell
    becomes a group leader itself (`setsid` without a fork: it is not one), in place, with the
    same pid. Where the group already is `$$`, or the parent's and the parent is `sudo` (the
    reported pid is sudo's), nothing changes; without /proc or setsid the command runs as
    before."""
    return ("if read -r _ _ _ _ g _ </proc/$$/stat 2>/dev/null && [ \"$g\" != $$ ] && "
            "{ [ \"$g\" != \"$PPID\" ] || ! read -r pc </proc/$PPID/comm 2>/dev/null || "
            "[ \"$pc\" != sudo ]; } && command -v setsid >/dev/null 2>&1; then "
            f"exec setsid sh -c {shlex.quote(command)}; fi; {command}")


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
    """stdout handed on as it comes off the channel, with no task woken for it: the channel's
    session (StreamSession) gives each packet's data to `write` from asyncssh's own
    callback, and every line that packet completed goes to `handle` in one call (a ping line, an
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


class OutputWriter(Protocol):
    """What a stream's stdout is handed to, packet by packet (LineFeed)."""

    def write(self, data: str) -> None: ...

    def write_eof(self) -> None: ...


class StreamSession:
    """A streamed command's SSH session (asyncssh's SSHClientSession, public API): stdout
    kept for a reader (`readline`, `read_lines`) until a writer is set (`hand_to`), then
    handed to it from `data_received` itself, packet by packet; the last `stderr_lines`
    lines of stderr kept; the stream's end (EOF, the channel closed, the link lost) said to
    both. Past READ_AHEAD characters not read, the channel pauses reading (the host waits
    on the SSH window) until the reader catches up."""

    def __init__(self, stderr_lines: int) -> None:
        self.chan: Any = None  # the SSHClientChannel, from connection_made
        self.stderr: deque[str] = deque(maxlen=stderr_lines)
        self._err = ""  # stderr's partial last line
        self._out = ""  # stdout no reader has taken yet
        self._writer: OutputWriter | None = None
        self._ended = False
        self._paused = False
        self._wake: asyncio.Future[None] | None = None

    # -- asyncssh's session callbacks
    def connection_made(self, chan: Any) -> None:
        self.chan = chan

    def data_received(self, data: str, datatype: int | None) -> None:
        if datatype is not None:  # stderr (the only extended data a session carries)
            *lines, self._err = (self._err + data).split("\n")
            self.stderr.extend(lines)
            return
        writer = self._writer
        if writer is not None:
            writer.write(data)
            return
        self._out += data
        self._wake_reader()
        if len(self._out) > READ_AHEAD and not self._paused and self.chan is not None:
            self._paused = True
            self.chan.pause_reading()

    def eof_received(self) -> bool:
        """The host's end of stdout; True: stdin stays open (a half-close, as asyncssh's
        own process keeps it), closed with the channel."""
        self._end()
        return True

    def connection_lost(self, exc: Exception | None) -> None:
        """The channel closed, or the link was lost: the stream ends there, no error."""
        self._end()

    # -- the reading side
    def hand_to(self, writer: OutputWriter) -> None:
        """From now on stdout goes to `writer` as it comes (what came before first)."""
        if self._out:
            out, self._out = self._out, ""
            writer.write(out)
        if self._ended:
            writer.write_eof()
            return
        self._writer = writer
        self._resume()

    async def readline(self) -> str:
        """stdout's next line with its newline ("" at the end, the partial last line whole)."""
        while True:
            cut = self._out.find("\n") + 1
            if cut or self._ended:
                line, self._out = (self._out[:cut], self._out[cut:]) if cut else (self._out, "")
                self._resume()
                return line
            await self._wait()

    async def read_lines(self) -> list[str]:
        """Every whole line stdout holds (waiting for one), without newlines; [] at the end
        (the partial last line handed on first)."""
        while True:
            if "\n" in self._out:
                *lines, self._out = self._out.split("\n")
                self._resume()
                return lines
            if self._ended:
                rest, self._out = self._out, ""
                return [rest] if rest else []
            await self._wait()

    def _end(self) -> None:
        if self._ended:
            return
        self._ended = True
        if self._err:
            self.stderr.append(self._err)
            self._err = ""
        if self._writer is not None:
            self._writer.write_eof()
        self._wake_reader()

    async def _wait(self) -> None:
        self._wake = asyncio.get_running_loop().create_future()
        try:
            await self._wake
        finally:
            self._wake = None

    def _wake_reader(self) -> None:
        if self._wake is not None and not self._wake.done():
            self._wake.set_result(None)

    def _resume(self) -> None:
        if self._paused and len(self._out) <= READ_AHEAD // 2:
            self._paused = False
            self.chan.resume_reading()


@functools.cache
def session_class() -> type[StreamSession]:
    """StreamSession as asyncssh's SSHClientSession (defined on first use: asyncssh is
    imported then, abtui.remote.sshlib), so that a callback a newer asyncssh adds has its
    default."""

    class Session(StreamSession, asyncssh.SSHClientSession):
        pass

    return Session


class RemoteProcess(Generic[L]):
    """A streamed remote command: its stdout lines, its process group, and how to end it;
    `link` the link that started it (a `RemoteProcess[HostLink]` from HostLink.stream);
    `chan` its SSH channel and `session` the channel's StreamSession."""

    def __init__(self, link: L, chan: Any, session: StreamSession, command: str) -> None:
        self.link = link
        self.command = command
        self.pgid: int | None = None
        self._chan = chan
        self._session = session

    async def _read_pgid(self) -> None:
        line = await self._session.readline()
        if line.startswith(PGID_MARK):
            with contextlib.suppress(ValueError, IndexError):
                pgid = int(line.split()[1])
                # a group abtui may never end is no group to end it by (abtui.core.pids)
                self.pgid = None if pgid_problem(pgid) else pgid

    @property
    def stderr(self) -> str:
        return "\n".join(self._session.stderr)

    async def lines(self) -> AsyncIterator[str]:
        """stdout, line by line, until the process ends or the link drops."""
        while lines := await self._session.read_lines():
            for line in lines:
                yield line

    def feed(self, handle: Callable[[list[str]], None]) -> LineFeed:
        """stdout handed to `handle` as it arrives, every line one packet carried in one call
        (see LineFeed); the other way to read it than `lines`, never both."""
        feed = LineFeed(handle)
        self._session.hand_to(feed)
        return feed

    async def follow(self, handle: Callable[[list[str]], None]) -> None:
        """stdout handed to `handle` as it arrives (see `feed`) until the stream ends."""
        await self.feed(handle).until_end()

    def write(self, data: str) -> None:
        self._chan.write(data)

    def close_stdin(self) -> None:
        """End of file on the command's stdin (a loop reading it ends by itself)."""
        self._chan.write_eof()

    async def wait(self, timeout: float | None = None) -> int | None:
        """The exit status (None when ended by a signal or the link dropped)."""
        with contextlib.suppress(asyncssh.Error, OSError):
            await asyncio.wait_for(self._chan.wait_closed(), timeout)
        status = self._chan.get_exit_status()
        return status if status is not None and status >= 0 else None

    async def terminate(self, grace: float = 2.0) -> None:
        """End the remote process and all its children, for certain."""
        if self.pgid is not None and self.link.state is LinkState.CONNECTED:
            with contextlib.suppress(RemoteError):
                await self.link.kill_group(self.pgid, grace)
        self._chan.close()
        with contextlib.suppress(Exception):
            await asyncio.wait_for(self._chan.wait_closed(), grace)
