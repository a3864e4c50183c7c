"""Leaving the console: ctrl+q shows the quit screen while the controller stops and restores
every knob (abtui.ui.control), then the app exits; a second ctrl+q forces out at once."""

from __future__ import annotations

import asyncio
import contextlib
from typing import TYPE_CHECKING

from abtui.ui.control import CONTROL_WAIT_S
from abtui.ui.screens import QuitScreen

if TYPE_CHECKING:
    from abtui.ui.app import AbtuiApp


class Leaving:
    """The quit flow of one app; `begun` once ctrl+q (or a signal) started restoring."""

    def __init__(self, app: AbtuiApp) -> None:
        self.app = app
        self.begun = False
        self.screen: QuitScreen | None = None
        # how leaving went, for abtui.ui.guard: "done" or "failed" once the controller's
        # shutdown has returned or raised; forced_out after a second ctrl+q
        self.restore_outcome = ""
        self.forced_out = False
        self.stop_reason = ""  # a signal's name, when one ended the console

    def quit(self) -> None:
        """ctrl+q: restore the hosts and leave; a second one forces out."""
        app = self.app
        if self.begun:
            self.forced_out = True
            app.bench.leaving(app.state.intervals_seen)
            app.exit(1, return_code=1)
            return
        self.begun = True
        self.screen = QuitScreen()
        app.push_screen(self.screen)
        app.run_worker(self._restore_and_exit(), group="shutdown", exit_on_error=False)

    async def _restore_and_exit(self) -> None:
        app = self.app
        code = 0
        try:
            with contextlib.suppress(TimeoutError):  # an alternation flips no more
                await asyncio.wait_for(app.alternation.end(), CONTROL_WAIT_S)
            await app.calls.shutdown()
            self.restore_outcome = "done"
        except Exception as exc:
            code = 1
            self.restore_outcome = "failed"
            app.fail(f"restoring failed: {type(exc).__name__}: {exc}")
        self.leave(code)

    def show(self) -> None:
        """The restore lines so far, on the quit screen once it is up."""
        if self.screen is not None:
            self.screen.show(self.app.state.restoring)

    def leave(self, code: int) -> None:
        """The hosts are restored (or could not be): exit with `code`."""
        app = self.app
        app.events_now()  # the last events folded in (the bench counts them)
        app.bench.leaving(app.state.intervals_seen)
        app.exit(code, return_code=code)
