"""The corked release: writes to several hosts' SSH connections held by the kernel
(TCP_CORK) and let go together, so that commands that must start at once (the synchronized
start's release) leave one right after the other, apart by a system call, not by the Python
between them. abtui.remote.uring lifts the corks in one submission where it can.
"""

from __future__ import annotations

import asyncio
import contextlib
import contextvars
import socket
from collections.abc import Callable, Iterable, Iterator
from typing import Any


def corkable(sock: Any) -> Any | None:
    """`sock` when it is a TCP socket whose writes TCP_CORK can hold, else None."""
    return sock if getattr(sock, "type", None) == socket.SOCK_STREAM and \
        getattr(sock, "family", None) in (socket.AF_INET, socket.AF_INET6) and \
        hasattr(socket, "TCP_CORK") else None


def cork(sock: Any) -> bool:
    """Hold `sock`'s writes in the kernel (TCP_CORK); False where it cannot be corked."""
    try:
        sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_CORK, 1)
    except OSError:
        return False
    return True


def uncork(held: list[Any], together: Callable[[list[Any]], list[Any]] | None) -> None:
    """Let every held socket go: at once through `together` where it can (it returns the
    sockets it could not), the rest one by one. A host left corked would never start, so
    whatever fails in `together`, every socket is lifted here."""
    left = held
    if together is not None and held:
        with contextlib.suppress(Exception):
            left = together(held)
    for sock in left:
        with contextlib.suppress(OSError):
            sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_CORK, 0)


@contextlib.contextmanager
def corked(socks: Iterable[Any],
           together: Callable[[list[Any]], list[Any]] | None = None) -> Iterator[list[Any]]:
    """What is written to these sockets inside is held by the kernel (TCP_CORK) and leaves at
    the end, each socket's as one segment, one socket right after the other: writes to
    several hosts that must arrive together are apart by a system call, not by the Python
    between them (each write is an encryption and a packet of asyncssh's). Yields the sockets
    it could cork; one it could not is written to as usual. `together`, when given, lifts the
    corks at once where it can (abtui.remote.uring.Uncorker.lift) and returns the sockets it
    could not, lifted here one by one."""
    held: list[Any] = []
    try:
        held.extend(sock for sock in socks if cork(sock))
        yield held
    finally:
        uncork(held, together)


class Release:
    """Commands to several hosts written corked and let go together: the first host's write,
    uncorked alone, woke its sshd, which on a loaded machine took the core before the next
    host's command was even written (a knob flip's four hosts started up to a millisecond
    apart). Inside `together`, a control shell's write is held (ControlShell.send) and the
    held sockets are uncorked at once — in one system call where `uncorker` can (no task runs
    between them) — as soon as `expected` commands are written, or at the event loop's next
    pass at the latest (a host whose shell was busy, or failed before its write, holds back
    no other one for longer). Once lifted it holds nothing: a later write (a command sent
    again after a reconnect) leaves at once."""

    def __init__(self, expected: int,
                 uncorker: Callable[[list[Any]], list[Any]] | None = None) -> None:
        self.expected = expected
        self.uncorker = uncorker
        self.held: list[Any] = []
        self.written = 0
        self.open = expected > 1

    def hold(self, sock: Any) -> bool:
        """Cork `sock` for a write to be let go with the others; False (nothing done) once
        lifted or when the socket cannot be corked (the write then leaves at once)."""
        if not self.open or not cork(sock):
            return False
        if not self.held:  # at the loop's next pass at the latest
            asyncio.get_running_loop().call_soon(self.lift)
        self.held.append(sock)
        return True

    def wrote(self) -> None:
        """A held write is done (or failed): the last one expected lets them all go."""
        self.written += 1
        if self.written >= self.expected:
            self.lift()

    def lift(self) -> None:
        """Every held socket uncorked (a socket lifted twice is harmless)."""
        self.open = False
        held, self.held = self.held, []
        uncork(held, self.uncorker)


_RELEASE: contextvars.ContextVar[Release | None] = contextvars.ContextVar("abtui_release",
                                                                            default=None)


def release() -> Release | None:
    """The release the running task's writes join (`together`), if any."""
    return _RELEASE.get()


@contextlib.contextmanager
def together(expected: int, uncorker: Callable[[list[Any]], list[Any]] | None = None
             ) -> Iterator[Release]:
    """The control-shell commands written by the tasks made inside (a gather over several
    hosts, each task one command) leave together (`Release`); everything held is let go on
    the way out, whatever happened."""
    r = Release(expected, uncorker)
    token = _RELEASE.set(r)
    try:
        yield r
    finally:
        _RELEASE.reset(token)
        r.lift()
