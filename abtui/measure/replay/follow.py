"""A Controller that watches a session another abtui records (`abtui view --follow`, `abtui
serve`): its events as the journal grows (abtui.sessions.follow), shown as they were written,
and nothing else. Read-only: every call that would change a host (a knob, a plan, a mark in
someone else's journal) is refused with one line; stop only stops following.
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import Any

from abtui.core import events
from abtui.core.controller import Mode
from abtui.core.errors import KnobRefused
from abtui.core.events import AnyEvent, Event
from abtui.core.model import Profile
from abtui.sessions.follow import SessionTail

POLL_S = 0.2  # how often the file is looked at: well under the console's 1 s intervals
READ_ONLY = "read-only: this console follows {name}; the console recording it changes hosts"


class FollowController:
    """abtui.core.controller.Controller over a session file as it grows."""

    def __init__(self, profile: Profile, path: Path, *, follow: bool = True,
                 poll_s: float = POLL_S) -> None:
        self.profile = profile
        self.session_path: Path | None = None  # nothing of ours is written
        self.path = path
        self.poll_s = poll_s
        self.tail = SessionTail(path, once=not follow)
        self._subscribers: list[Callable[[AnyEvent], None]] = []
        self._task: asyncio.Task[None] | None = None
        self.connected = False
        self.read_only = True

    def subscribe(self, callback: Callable[[AnyEvent], None]) -> None:
        self._subscribers.append(callback)

    def _emit(self, event: AnyEvent) -> None:
        for cb in self._subscribers:
            cb(event)

    @property
    def running(self) -> bool:
        return self._task is not None and not self._task.done()

    @property
    def finished(self) -> bool:
        """The whole session has been read: its recording ended."""
        return self.tail.finished

    def refusal(self) -> str:
        return READ_ONLY.format(name=self.path.name)

    async def connect(self) -> None:
        self.connected = True

    async def start(self, mode: Mode = "continuous") -> None:
        """Follow the file (a plan is the recording console's to start: refused)."""
        if mode == "plan":
            raise KnobRefused(self.refusal())
        if not self.running:
            self._task = asyncio.create_task(self._follow())

    async def _follow(self) -> None:
        while True:
            for ev in self.tail.poll():
                self._emit(ev)
            if self.tail.finished:
                return
            await asyncio.sleep(self.poll_s)

    async def stop(self) -> None:
        """Stop following (the recording goes on: nothing of it is ours to stop)."""
        if self._task is not None:
            self._task.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await self._task
            self._task = None

    async def set_knob(self, knob: str, value: str, pairs: Sequence[str] | None = None) -> None:
        raise KnobRefused(self.refusal())

    async def set_values(self, knob: str, values: Mapping[str, str],
                         again: bool = False) -> None:
        raise KnobRefused(self.refusal())

    async def mark(self, text: str, verdicts: list[dict[str, Any]] | None = None,
                   bisect: dict[str, Any] | None = None) -> None:
        raise KnobRefused(self.refusal())

    def note(self, payload: events.Payload) -> None:
        """What the console says of itself, shown here only (never in the journal)."""
        self._emit(Event.of(payload))

    async def shutdown(self, reason: str = "shutdown") -> None:
        await self.stop()
