"""One session's lifecycle, the same for the console and `abtui run`: connect, measure, shut
down (every host set back), the session journal closed, whatever ends it.

    async with ControllerSession(engine, writer) as session:
        await session.start("plan")
        await engine.wait()
    session.closed  # the journal's file

Entering connects (the journal hears every event from SESSION_START on); leaving, or a
failure while connecting, shuts the controller down (reason "interrupted" when cancelled or
interrupted, else "done") and closes the journal even when the shutdown fails. `start`
connects once (a later start keeps the links, and with them the originals to restore), ends
what runs, then starts in the mode given: the console's space key and `abtui run` alike.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from pathlib import Path
from types import TracebackType
from typing import Protocol

from abtui.core.controller import Mode
from abtui.core.events import AnyEvent


class Journal(Protocol):
    """Where a session's events are written (abtui.sessions.writer.SessionWriter)."""

    def write(self, event: AnyEvent) -> None: ...

    def close(self) -> Path: ...


class Measuring(Protocol):
    """What a session drives (abtui.measure.engine.Engine): a Controller whose shutdown
    says why the session ended."""

    def subscribe(self, callback: Callable[[AnyEvent], None]) -> object: ...

    async def connect(self) -> None: ...

    async def start(self, mode: Mode = "continuous") -> None: ...

    async def stop(self) -> None: ...

    async def shutdown(self, reason: str = "shutdown") -> None: ...


class ControllerSession:
    """A controller's session from connect to journal close; see the module docstring."""

    def __init__(self, controller: Measuring, journal: Journal | None = None) -> None:
        self.controller = controller
        self._journal = journal
        self._connected = False
        self.closed: Path | None = None  # the journal's file, once closed

    async def __aenter__(self) -> ControllerSession:
        if self._journal is not None:
            self.controller.subscribe(self._journal.write)
        try:
            await self.connect()
        except BaseException as exc:
            await self._end(_reason(type(exc)))
            raise
        return self

    async def __aexit__(self, kind: type[BaseException] | None, exc: BaseException | None,
                        tb: TracebackType | None) -> None:
        await self._end(_reason(kind))

    async def connect(self) -> None:
        """Open the links, once for the session."""
        if not self._connected:
            await self.controller.connect()
            self._connected = True

    async def start(self, mode: Mode = "continuous") -> None:
        """Measure in `mode`: connected once, whatever runs ended first."""
        await self.connect()
        await self.controller.stop()
        await self.controller.start(mode)

    async def _end(self, reason: str) -> None:
        try:
            await self.controller.shutdown(reason)
        finally:
            if self._journal is not None:
                self.closed = self._journal.close()


def _reason(kind: type[BaseException] | None) -> str:
    """Why the session ended, as SESSION_END says."""
    interrupted = kind is not None and issubclass(kind, (asyncio.CancelledError,
                                                         KeyboardInterrupt))
    return "interrupted" if interrupted else "done"
