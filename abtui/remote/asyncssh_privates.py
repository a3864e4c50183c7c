"""Every use of asyncssh's undocumented API, in this one module, with a public fallback.

A streamed command's stdout is handed to a writer from asyncssh's own packet callback, with
no task woken per line (abtui.remote.streams.LineFeed): `SSHClientProcess.set_writer` and
`feed_recv_buf`, what asyncssh's own redirects use, are not in its documented API. They are
named in PRIVATES with the parameters used, pinned by tests/unit/remote/test_asyncssh_privates.py
against the installed asyncssh (pyproject.toml bounds it to the versions tested). Where one
is missing or has other parameters (or raises AttributeError or TypeError at its first use),
the stream goes the public way from then on, said once in the log: a task reads stdout
through `SSHReader.read` and hands the same writer each chunk as it comes (a task wake-up
per packet: slower, never a broken stream).
"""

from __future__ import annotations

import asyncio
import inspect
import logging
from typing import Any, Protocol

from abtui.remote.sshlib import asyncssh

__all__ = ["PRIVATES", "OutputWriter", "fallen_back", "hand_output", "missing", "reset"]

log = logging.getLogger(__name__)

CHUNK = 65536  # what one public read may take (a packet is at most 32 KiB)

# (name, its parameters) of each SSHClientProcess method used
PRIVATES: tuple[tuple[str, tuple[str, ...]], ...] = (
    ("set_writer", ("self", "writer", "recv_eof", "datatype")),
    ("feed_recv_buf", ("self", "datatype", "writer")),
)

_state: dict[str, str | bool] = {}  # "off": why; "checked": all were found
_pumps: set[asyncio.Task[None]] = set()  # the public way's readers, kept until they end


class OutputWriter(Protocol):
    """What asyncssh hands a channel's data to (its redirects' writer protocol)."""

    def write(self, data: str) -> None: ...

    def write_eof(self) -> None: ...

    def write_exception(self, exc: Exception) -> None: ...

    def close(self) -> None: ...


def missing(process_class: Any = None) -> list[str]:
    """The privates the installed asyncssh lacks, or has with other parameters."""
    owner = process_class or asyncssh.SSHClientProcess
    gone = []
    for name, parameters in PRIVATES:
        method = getattr(owner, name, None)
        if method is None:
            gone.append(f"SSHClientProcess.{name}")
            continue
        try:
            found = tuple(inspect.signature(method).parameters)
        except (TypeError, ValueError):
            found = ()
        if found != parameters:
            gone.append(f"SSHClientProcess.{name}{found}")
    return gone


def fallen_back() -> str | None:
    """Why streams go the public way, or None while they go the private one."""
    off = _state.get("off")
    return off if isinstance(off, str) else None


def reset() -> None:
    """Asked afresh (tests that take a private away, and put it back)."""
    _state.clear()


def _fall_back(why: str) -> None:
    if "off" not in _state:
        _state["off"] = why
        log.warning("asyncssh's private API changed (%s); streamed output goes the public "
                    "way, slower", why)


def _usable() -> bool:
    if "off" in _state:
        return False
    if "checked" not in _state:
        gone = missing()
        if gone:
            _fall_back(f"not in this asyncssh: {', '.join(gone)}")
            return False
        _state["checked"] = True
    return True


def hand_output(proc: asyncssh.SSHClientProcess[str], writer: OutputWriter) -> None:
    """The process's stdout handed to `writer` as it comes, from asyncssh's own callback
    (what came before first); the public way where the private one is not there."""
    if _usable():
        try:
            proc.set_writer(writer, True, None)
            proc.feed_recv_buf(None, writer)  # what came before (the pgid line was read)
            return
        except (AttributeError, TypeError) as exc:
            _fall_back(f"{type(exc).__name__}: {exc}")
    task = asyncio.get_running_loop().create_task(_pump(proc, writer))
    _pumps.add(task)
    task.add_done_callback(_pumps.discard)


async def _pump(proc: asyncssh.SSHClientProcess[str], writer: OutputWriter) -> None:
    """The public way: stdout read as it comes, each chunk handed on, then its end."""
    try:
        while data := await proc.stdout.read(CHUNK):
            writer.write(data)
    except (asyncssh.Error, OSError) as exc:
        writer.write_exception(exc)
        return
    writer.write_eof()
