"""One session's lifecycle, the same for the console and `abtui run`: connect, measure, shut
down (every host set back), the session journal closed, whatever ends it.

    async with ControllerSession(engine, writer) as session:
        await session.start("plan")
        await engine.wait()
    session.closed  # the journal's file

The console holds the same object across its life instead of one `async with`: the command
that opens it makes the session on the engine's `Deferred` build (the
engine is imported and built by the session on first use, when the console connects after its
first frame, subscribers kept in order until then) and `open`s it (the journal subscribed
before the screen),
the console's calls (abtui.ui.flow.control) `start`, `stop` and `shutdown` through it, and the
command `close`s the journal once the console has gone, whatever ended it.

Entering connects (the journal hears every event from SESSION_START on); leaving, or a
failure while connecting, shuts the controller down (reason "interrupted" when cancelled or
interrupted, else "done") and closes the journal even when the shutdown fails. `start`
connects once (a later start keeps the links, and with them the originals to restore), ends
what runs, then starts in the mode given: the console's space key and `abtui run` alike.

A journal that cannot be written (the disk full, an I/O error) stops the session: its writer
says so once (`on_error`), the task in the session is cancelled, the controller shut down
(every host set back) with reason "write failed", and leaving raises WriteFailed with the
writer's line in place of the cancellation.
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from types import TracebackType
from typing import TYPE_CHECKING, Generic, Protocol, TypeVar

from abtui.core import signals
from abtui.core.controller import Mode
from abtui.core.errors import WriteFailed
from abtui.core.events import AnyEvent

if TYPE_CHECKING:
    from abtui.core.model import Profile


class Journal(Protocol):
    """Where a session's events are written (abtui.sessions.writer.SessionWriter): `write`
    never raises; a failure is said to `on_error` once, and `error` keeps it."""

    on_error: Callable[[str], None] | None
    error: str | None

    def write(self, event: AnyEvent) -> None: ...

    def close(self) -> Path: ...


class Measuring(Protocol):
    """What a session drives (abtui.measure.engine.front.Engine): a Controller whose shutdown
    says why the session ended."""

    profile: Profile
    session_path: Path | None

    def subscribe(self, callback: Callable[[AnyEvent], None]) -> object: ...

    async def connect(self) -> None: ...

    async def start(self, mode: Mode = "continuous") -> None: ...

    async def stop(self) -> None: ...

    async def shutdown(self, reason: str = "shutdown") -> None: ...


C = TypeVar("C", bound=Measuring)


@dataclass(frozen=True, slots=True)
class Deferred(Generic[C]):
    """A controller a session builds on first use (`build`), with what is known before: the
    console's engine, whose modules its first frame does not wait for."""

    build: Callable[[], C]
    profile: Profile
    session_path: Path | None


class ControllerSession(Generic[C]):
    """A controller's session from connect to journal close; see the module docstring.
    `on_write_error`: what a journal that cannot be written does (the console says so and
    stops measuring) in place of cancelling the task in the session (`abtui run`)."""

    def __init__(self, controller: C | Deferred[C], journal: Journal | None = None, *,
                 on_write_error: Callable[[str], None] | None = None) -> None:
        self._controller: C | None = None
        self._deferred: Deferred[C] | None = None
        if isinstance(controller, Deferred):
            self._deferred = controller
        else:
            self._controller = controller
        self._subscribers: list[Callable[[AnyEvent], None]] = []  # until built
        self._journal = journal
        self._on_write_error = on_write_error
        self._opened = False
        self._connected = False
        self.closed: Path | None = None  # the journal's file, once closed
        self._owner: asyncio.Task[object] | None = None  # the task that entered
        self._body = False  # that task is in the session (not yet ending it)
        self._failed = False  # the journal said it cannot write
        self._cancelled = False  # the session cancelled its task for that

    @property
    def controller(self) -> C:
        """The controller, built on first use (a deferred session), the subscribers given
        until then subscribed to it in their order."""
        if self._controller is None:
            assert self._deferred is not None
            self._controller = self._deferred.build()
            for callback in self._subscribers:
                self._controller.subscribe(callback)
            self._subscribers.clear()
        return self._controller

    @property
    def profile(self) -> Profile:
        """The controller's profile (known before a deferred one is built)."""
        return self._deferred.profile if self._deferred is not None else self.controller.profile

    @property
    def session_path(self) -> Path | None:
        """The controller's session file, if it journals one (known before it is built)."""
        return self._deferred.session_path if self._deferred is not None \
            else self.controller.session_path

    @property
    def built(self) -> bool:
        """Whether the controller exists yet (a deferred one is built on first use)."""
        return self._controller is not None

    def subscribe(self, callback: Callable[[AnyEvent], None]) -> None:
        """Every event of the controller's, from now on (kept in order until it is built)."""
        if self._controller is None:
            self._subscribers.append(callback)
        else:
            self._controller.subscribe(callback)

    @property
    def write_error(self) -> str | None:
        """Why the journal stopped being written (None: it was written whole)."""
        return self._journal.error if self._journal is not None else None

    @property
    def connected(self) -> bool:
        """The controller's connect() has returned."""
        return self._connected

    def open(self) -> None:
        """The journal hears every event from now on, before any other subscriber (once)."""
        if self._opened:
            return
        self._opened = True
        if self._journal is not None:
            self._journal.on_error = self._journal_failed
            self.subscribe(self._journal.write)

    async def __aenter__(self) -> ControllerSession[C]:
        self._owner, self._body = asyncio.current_task(), True
        self.open()
        try:
            await self.connect()
        except BaseException as exc:
            await self._end(_reason(type(exc)))
            self._raise_write_error(exc)
            raise
        return self

    async def __aexit__(self, kind: type[BaseException] | None, exc: BaseException | None,
                        tb: TracebackType | None) -> None:
        await self._end(_reason(kind))
        self._raise_write_error(exc)

    async def connect(self) -> None:
        """Open the links, once for the session."""
        if not self._connected:
            await self.controller.connect()
            self._connected = True

    async def start(self, mode: Mode = "continuous",
                    starting: Callable[[], object] | None = None) -> None:
        """Measure in `mode`: connected once, whatever runs ended first; `starting` is
        called in between (the console says what it starts)."""
        await self.connect()
        await self.controller.stop()
        if starting is not None:
            starting()
        await self.controller.start(mode)

    async def stop(self) -> None:
        """End whatever runs (the links kept)."""
        await self.controller.stop()

    async def shutdown(self, reason: str = "shutdown") -> None:
        """Stop, and set every host back (the controller's shutdown, saying `reason`:
        raising what restoring raised, so a console can say it and try again); the journal
        stays open."""
        await self.controller.shutdown(reason)

    def close(self) -> Path | None:
        """Close the journal, once (later calls return the same file); None: no journal."""
        if self._journal is not None and self.closed is None:
            self.closed = self._journal.close()
        return self.closed

    def _journal_failed(self, line: str) -> None:
        """The writer's one line: the session stops (the task in it cancelled, or
        `on_write_error` told), once. The cancellation is made once the running step is
        over, and only while the task is in the session's body: one delivered while the
        session ends would cut its set-back short."""
        self._failed = True
        if self._on_write_error is not None:
            self._on_write_error(line)
            return
        with contextlib.suppress(RuntimeError):  # no loop: nothing runs to stop
            asyncio.get_running_loop().call_soon(self._stop)

    def _stop(self) -> None:
        task = self._owner
        if self._body and not self._cancelled and task is not None and not task.done():
            self._cancelled = True
            task.cancel()

    def _raise_write_error(self, exc: BaseException | None) -> None:
        """A journal that failed, said as WriteFailed in place of the cancellation this
        session made for it (or of a normal end); any other exception goes on as it is."""
        ours = self._cancelled and isinstance(exc, asyncio.CancelledError)
        if ours and self._owner is not None:
            self._owner.uncancel()
        if self._failed and (exc is None or ours):
            raise WriteFailed(self.write_error or "the session could not be written") \
                from None

    async def _end(self, reason: str) -> None:
        self._body = False  # a failure from here on cancels nothing
        if self._failed:
            reason = "write failed"
        try:
            with signals.ending():  # a signal meanwhile waits: the set-back runs to its end
                await self.shutdown(reason)
        finally:
            self.close()


def _reason(kind: type[BaseException] | None) -> str:
    """Why the session ended, as SESSION_END says."""
    interrupted = kind is not None and issubclass(kind, (asyncio.CancelledError,
                                                         KeyboardInterrupt))
    return "interrupted" if interrupted else "done"
