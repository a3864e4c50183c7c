"""One session's lifecycle (abtui.measure.session): connect, measure, shutdown, journal
closed, however the session ends."""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from pathlib import Path

import pytest

from abtui.core.errors import AbtuiError, WriteFailed
from abtui.core.events import PAYLOADS, Event, EventKind
from abtui.measure.session import ControllerSession


class Journal:
    def __init__(self) -> None:
        self.kinds: list[EventKind] = []
        self.closed = 0
        self.error: str | None = None
        self.on_error: Callable[[str], None] | None = None

    def write(self, event: Event) -> None:
        self.kinds.append(event.kind)

    def close(self) -> Path:
        self.closed += 1
        return Path("session.jsonl")


class Controller:
    """Records the calls; `fail` names a call that raises."""

    def __init__(self, fail: str = "") -> None:
        self.calls: list[str] = []
        self.fail = fail
        self._subscribers: list[Callable[[Event], None]] = []

    def subscribe(self, callback: Callable[[Event], None]) -> None:
        self._subscribers.append(callback)

    async def _call(self, name: str, kind: EventKind | None = None) -> None:
        self.calls.append(name)
        if kind is not None:
            for callback in self._subscribers:
                callback(Event.of(PAYLOADS[kind].from_data({})))
        if name.split(" ")[0] == self.fail:
            raise AbtuiError(f"{name} failed")

    async def connect(self) -> None:
        await self._call("connect", EventKind.SESSION_START)

    async def start(self, mode: str = "continuous") -> None:
        await self._call(f"start {mode}")

    async def stop(self) -> None:
        await self._call("stop")

    async def shutdown(self, reason: str = "shutdown") -> None:
        await self._call(f"shutdown {reason}", EventKind.SESSION_END)


async def test_a_session_connects_once_and_ends_with_shutdown_then_the_journal_closed():
    ctl, journal = Controller(), Journal()
    async with ControllerSession(ctl, journal) as session:
        await session.start("plan")
        await session.start("continuous")  # the links are kept: no second connect
    assert ctl.calls == ["connect", "stop", "start plan", "stop", "start continuous",
                         "shutdown done"]
    assert journal.kinds == [EventKind.SESSION_START, EventKind.SESSION_END]
    assert journal.closed == 1 and session.closed == Path("session.jsonl")


async def test_a_cancelled_session_is_interrupted_and_still_set_back():
    ctl, journal = Controller(), Journal()
    entered = asyncio.Event()

    async def measure() -> None:
        async with ControllerSession(ctl, journal):
            entered.set()
            await asyncio.Event().wait()  # until cancelled

    task = asyncio.get_running_loop().create_task(measure())
    await entered.wait()
    task.cancel()
    with pytest.raises(asyncio.CancelledError):
        await task
    assert ctl.calls[-1] == "shutdown interrupted" and journal.closed == 1


async def test_a_failed_connect_or_shutdown_still_sets_back_and_closes_the_journal():
    ctl, journal = Controller(fail="connect"), Journal()
    with pytest.raises(AbtuiError, match="connect failed"):
        async with ControllerSession(ctl, journal):
            pytest.fail("never entered")
    assert ctl.calls == ["connect", "shutdown done"] and journal.closed == 1
    ctl, journal = Controller(fail="shutdown"), Journal()
    with pytest.raises(AbtuiError, match="shutdown done failed"):
        async with ControllerSession(ctl, journal):
            pass
    assert journal.closed == 1


async def test_a_journal_that_fails_stops_the_session_and_sets_the_hosts_back():
    """The writer says it cannot write (the disk full): the task in the session is stopped,
    the controller shut down with reason "write failed" (hosts set back), the journal closed,
    and leaving raises WriteFailed with the writer's line, not a cancellation."""
    ctl, journal = Controller(), Journal()
    with pytest.raises(WriteFailed, match=r"s\.jsonl: could not write"):
        async with ControllerSession(ctl, journal) as session:
            await session.start("continuous")
            assert journal.on_error is not None
            journal.error = "s.jsonl: could not write the session (No space left on device)"
            journal.on_error(journal.error)
            await asyncio.sleep(3600)  # measuring, until stopped
    assert ctl.calls[-1] == "shutdown write failed" and journal.closed == 1
    assert session.write_error is not None
    task = asyncio.current_task()
    assert task is not None and not task.cancelling()  # the cancellation was the session's


async def test_a_journal_that_fails_while_the_session_ends_cancels_nothing():
    """The writer fails as the body ends (the last events of a plan, or the shutdown's own):
    the shutdown runs to its end, uncut by a cancellation, and leaving says WriteFailed."""
    ctl, journal = Controller(), Journal()
    ended: list[str] = []
    shutdown = ctl.shutdown

    async def slow_shutdown(reason: str = "shutdown") -> None:
        await asyncio.sleep(0.05)  # the set-back takes a while: a cancellation would cut it
        await shutdown(reason)
        ended.append(reason)

    ctl.shutdown = slow_shutdown  # type: ignore[method-assign]
    with pytest.raises(WriteFailed):
        async with ControllerSession(ctl, journal):
            assert journal.on_error is not None
            journal.error = "s.jsonl: could not write the session (Input/output error)"
            journal.on_error(journal.error)  # no await after it: the body ends at once
    assert ended == ["write failed"] and journal.closed == 1
