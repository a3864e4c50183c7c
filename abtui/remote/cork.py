"""The corked release: writes to several hosts' SSH connections held by the kernel
(TCP_CORK) and let go together, so that commands that must start at once (the synchronized
start's release) leave one right after the other, apart by a system call, not by the Python
between them. abtui.remote.uring lifts the corks in one submission where it can.
"""

from __future__ import annotations

import contextlib
import socket
from collections.abc import Callable, Iterable, Iterator
from typing import Any


def corkable(sock: Any) -> Any | None:
    """`sock` when it is a TCP socket whose writes TCP_CORK can hold, else None."""
    return sock if getattr(sock, "type", None) == socket.SOCK_STREAM and \
        getattr(sock, "family", None) in (socket.AF_INET, socket.AF_INET6) and \
        hasattr(socket, "TCP_CORK") else None


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
    held = []
    try:
        for sock in socks:
            try:
                sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_CORK, 1)
            except OSError:
                continue
            held.append(sock)
        yield held
    finally:
        left = held
        if together is not None and held:
            # a host left corked would never start: whatever fails there, all lifted below
            with contextlib.suppress(Exception):
                left = together(held)
        for sock in left:
            with contextlib.suppress(OSError):
                sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_CORK, 0)
