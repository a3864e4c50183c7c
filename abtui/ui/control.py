"""The console's calls into the controller, each in a worker: one at a time in the order
asked, a knob change, and leaving (stop, restore every knob, exit). A failure is said in the
pane and the log, never a traceback."""

from __future__ import annotations

import asyncio
import contextlib
from typing import TYPE_CHECKING, Any

from abtui.core.controller import Mode
from abtui.core.errors import KnobRefused
from abtui.ui.screens import TextPrompt

if TYPE_CHECKING:
    from abtui.ui.app import AbtuiApp

CONTROL_WAIT_S = 10.0  # leaving waits this long for a controller call under way


class ControllerCalls:
    """What the app's keys ask of the controller."""

    def __init__(self, app: AbtuiApp) -> None:
        self.app = app
        self.lock = asyncio.Lock()
        self.connected = False  # the controller's connect() has returned
        self.mode: Mode | None = None  # what the console last started

    def started(self, mode: Mode) -> None:
        """The controller is about to start in `mode`: the last plan's progress goes."""
        self.mode = mode
        self.app.state.progress = None
        self.app.progress = None
        self.app.update_knobbar()

    def plan_progress(self) -> dict[str, Any] | None:
        """The plan's last PROGRESS while the plan is what the console last started."""
        return self.app.state.progress if self.mode == "plan" else None

    def measuring(self) -> bool:
        """Runs going on, or a plan between its steps."""
        p = self.plan_progress()
        return self.app.state.running or (p is not None
                                          and (p.get("done") or 0) < (p.get("total") or 0))

    def start_stop(self) -> None:
        """space: stop while measuring, else start measuring continuously."""
        self.run("stop") if self.measuring() else self.run("start", "continuous")

    def run(self, method: str, *args: Any) -> None:
        """One controller call at a time, in the order asked (a second key waits for the
        first). "start" connects once, ends whatever runs, then starts in the mode given."""
        self.app.run_worker(self._run(method, *args), group="controller", exit_on_error=False)

    async def _run(self, method: str, *args: Any) -> None:
        app, controller = self.app, self.app.controller
        async with self.lock:
            try:
                if method == "start":
                    if not self.connected:
                        await controller.connect()
                        self.connected = True
                    await controller.stop()
                    mode: Mode = args[0] if args else "continuous"
                    self.started(mode)
                    await controller.start(mode)
                    return
                if method == "stop":
                    self.mode = None
                await getattr(controller, method)(*args)
            except Exception as exc:
                app.fail(f"{method} failed: {type(exc).__name__}: {exc}")

    def mark(self) -> None:
        """m: ask what just happened, then have the controller mark the timeline."""
        def done(text: object) -> None:
            if isinstance(text, str) and text:
                self.run("mark", text)

        self.app.push_screen(TextPrompt("Mark the timeline", "what just happened?"), done)

    def set_knob(self, name: str, value: str, pairs: list[str]) -> None:
        self.app.run_worker(self._set_knob(name, value, pairs), group="knobs",
                            exit_on_error=False)

    async def _set_knob(self, name: str, value: str, pairs: list[str]) -> None:
        app = self.app
        if all(app.state.pairs[lb].config.get(name) == value for lb in pairs):
            app.say(f"{name} is {value} already on {', '.join(pairs)}")
            return
        app.say(f"setting {name}={value} on {', '.join(pairs)}…")
        try:
            await app.controller.set_knob(name, value, pairs)
        except KnobRefused as exc:
            app.fail(f"{name}={value} refused: {exc}", pairs)
        except Exception as exc:  # a host error must never take the console down
            app.fail(f"{name}={value} failed: {type(exc).__name__}: {exc}", pairs)
        else:
            for label in pairs:
                app.state.pairs[label].error = ""

    def restore_and_exit(self) -> None:
        self.app.run_worker(self._restore_and_exit(), group="shutdown", exit_on_error=False)

    async def _restore_and_exit(self) -> None:
        app = self.app
        code = 0
        try:
            with contextlib.suppress(TimeoutError):  # an alternation flips no more
                await asyncio.wait_for(app.alternation.end(), CONTROL_WAIT_S)
            with contextlib.suppress(TimeoutError):  # a start or stop under way ends first
                await asyncio.wait_for(self.lock.acquire(), CONTROL_WAIT_S)
            await app.controller.shutdown()
            app.exit_flow.restore_outcome = "done"
        except Exception as exc:
            code = 1
            app.exit_flow.restore_outcome = "failed"
            app.fail(f"restoring failed: {type(exc).__name__}: {exc}")
        app.exit_flow.leave(code)
