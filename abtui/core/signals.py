"""Every command ends on SIGTERM and SIGHUP as on ctrl+c (SIGINT).

`run(main)` is `asyncio.run(main)` for a command that changes hosts (`abtui run`, `bisect`,
`check`, `recover`): the first of SIGINT, SIGTERM or SIGHUP cancels the command's task, so
what it holds open ends the way ctrl+c ends it (a session stops and sets every host back, its
undo journal removed only when all is restored), then `Signalled` says which signal ended it
and exits 128 + its number (130, 143, 129: the shell's own convention). A later signal is
only said: it never cuts the set-back short (`timeout(1)` and systemd send SIGTERM again, a
closed terminal SIGHUP after SIGTERM). While a task ends (`ending()`), a signal is recorded
and not delivered: the restore under way runs to its end, then the command exits as the
signal asks.

CI cancellations, `timeout(1)` and systemd send SIGTERM; a terminal that closes, SIGHUP.
"""

from __future__ import annotations

import asyncio
import contextlib
import signal
from collections.abc import Coroutine, Iterator
from typing import Any, TypeVar

from abtui.core.errors import AbtuiError

STOP_SIGNALS = (signal.SIGINT, signal.SIGTERM, signal.SIGHUP)
T = TypeVar("T")


class Signalled(AbtuiError):
    """A command ended by a signal: exit 128 + its number (130 SIGINT, 143 SIGTERM, 129
    SIGHUP), its line says which."""

    def __init__(self, signum: int, then: str = "") -> None:
        name = signal.Signals(signum).name
        said = "interrupted" if signum == signal.SIGINT else f"ended by {name}"
        super().__init__(f"{said}: {then}" if then else said)
        self.signum = signum
        self.exit_code = 128 + signum


class _Watch:
    """The signal that arrived first, and whether the task may still be cancelled by it."""

    def __init__(self) -> None:
        self.signum: int | None = None
        self.task: asyncio.Task[Any] | None = None
        self.ending = 0  # > 0 while a task sets hosts back: a signal waits for it

    def arrived(self, signum: int) -> None:
        if self.signum is not None:
            return  # the first one is being acted on: a second never cuts a restore short
        self.signum = signum
        if not self.ending and self.task is not None and not self.task.done():
            self.task.cancel()


_watch: _Watch | None = None


@contextlib.contextmanager
def ending() -> Iterator[None]:
    """A signal that arrives in this block is recorded, not delivered: a set-back under way
    runs to its end (the command then exits as the signal asks)."""
    watch = _watch
    if watch is None:
        yield
        return
    watch.ending += 1
    try:
        yield
    finally:
        watch.ending -= 1


def run(main: Coroutine[Any, Any, T]) -> T:
    """`asyncio.run(main)`, ended by SIGINT, SIGTERM or SIGHUP as ctrl+c ends it; raises
    `Signalled` once it has ended when one arrived."""
    return asyncio.run(_guarded(main))


async def _guarded(main: Coroutine[Any, Any, T]) -> T:
    global _watch
    loop = asyncio.get_running_loop()
    watch = _watch = _Watch()
    watch.task = asyncio.current_task()
    for sig in STOP_SIGNALS:
        loop.add_signal_handler(sig, watch.arrived, sig)
    try:
        result = await main
    except asyncio.CancelledError:
        if watch.signum is None:
            raise
        if watch.task is not None:
            watch.task.uncancel()
        raise Signalled(watch.signum) from None
    finally:
        for sig in STOP_SIGNALS:
            loop.remove_signal_handler(sig)
        _watch = None
    if watch.signum is not None:  # it came while the command was ending: it ended anyway
        raise Signalled(watch.signum)
    return result
