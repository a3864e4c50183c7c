"""Leaving the console: ctrl+q shows the quit screen while the controller stops and restores
every knob (abtui.ui.flow.control), then the console leaves; a second ctrl+q forces out at once.
The screen and the leaving are posted as messages (abtui.ui.flow.messages) the app acts on."""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import Callable
from typing import TYPE_CHECKING

from abtui.ui.flow.alternation import ConsoleAlternation
from abtui.ui.flow.bisection import ConsoleBisection
from abtui.ui.flow.control import CONTROL_WAIT_S, ControllerCalls
from abtui.ui.flow.messages import Leave, Post, RunWorker, ShowScreen
from abtui.ui.model.bench import BenchProbe
from abtui.ui.model.state import ConsoleState

if TYPE_CHECKING:
    from abtui.ui.render.screens import QuitScreen


class Leaving:
    """The quit flow of one console; `begun` once ctrl+q (or a signal) started restoring.
    The quit screen and the leaving are posted (`post`), the restore run as the app's
    worker (`run_worker`); `fail` says a failure; `fold` folds in the events still queued
    for the screen."""

    def __init__(self, post: Post, run_worker: RunWorker, state: ConsoleState,
                 calls: ControllerCalls, alternation: ConsoleAlternation, bench: BenchProbe,
                 fail: Callable[[str], None], fold: Callable[[], object],
                 bisection: ConsoleBisection | None = None) -> None:
        self.post, self.run_worker = post, run_worker
        self.state, self.calls = state, calls
        self.alternation, self.bench = alternation, bench
        self.bisection = bisection
        self.fail, self.fold = fail, fold
        self.begun = False
        self.screen: QuitScreen | None = None
        # how leaving went, for abtui.ui.guard: "done" or "failed" once the controller's
        # shutdown has returned or raised; forced_out after a second ctrl+q
        self.restore_outcome = ""
        self.forced_out = False
        self.stop_reason = ""  # a signal's name, when one ended the console

    def quit(self) -> None:
        """ctrl+q: restore the hosts and leave; a second one forces out."""
        if self.begun:
            self.forced_out = True
            self.bench.leaving(self.state.intervals_seen)
            self.post(Leave(1))
            return
        self.begun = True
        from abtui.ui.render.screens import QuitScreen  # (its first use: not in the first frame)

        self.screen = QuitScreen()
        self.post(ShowScreen(self.screen))
        self.run_worker(self._restore_and_exit(), group="shutdown", exit_on_error=False)

    async def _restore_and_exit(self) -> None:
        code = 0
        try:
            with contextlib.suppress(TimeoutError):  # an alternation flips no more
                await asyncio.wait_for(self.alternation.end(), CONTROL_WAIT_S)
            if self.bisection is not None:  # nor a bisection (its step is recorded)
                with contextlib.suppress(TimeoutError):
                    await asyncio.wait_for(self.bisection.end(), CONTROL_WAIT_S)
            await self.calls.shutdown()
            self.restore_outcome = "done"
        except Exception as exc:
            code = 1
            self.restore_outcome = "failed"
            self.fail(f"restoring failed: {type(exc).__name__}: {exc}")
        self.leave(code)

    def show(self) -> None:
        """The restore lines so far, on the quit screen once it is up."""
        if self.screen is not None:
            self.screen.show(self.state.restoring)

    def leave(self, code: int) -> None:
        """The hosts are restored (or could not be): exit with `code`."""
        self.fold()  # the last events folded in (the bench counts them)
        self.bench.leaving(self.state.intervals_seen)
        self.post(Leave(code))
