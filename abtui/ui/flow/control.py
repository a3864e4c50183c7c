"""The console's calls into its session (abtui.measure.session, the lifecycle `abtui run`
has too): one at a time in the order asked, a knob change, and the shutdown when leaving.
Start and stop are coroutines the app runs in a worker; a knob's flip is handed here by its
key and runs as a task of its own, never back through the app. What the screen should show
is posted as a typed message (abtui.ui.flow.messages), and a failure is said in the pane and the
log, never a traceback."""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import Awaitable, Callable
from typing import Any

from textual.message import Message

from abtui.core.controller import Controller, Mode
from abtui.core.errors import KnobRefused
from abtui.measure.session import ControllerSession
from abtui.ui.flow.messages import Failed, KnobSet, Said, Started
from abtui.ui.model.state import ConsoleState

CONTROL_WAIT_S = 10.0  # leaving waits this long for a controller call under way


class ControllerCalls:
    """What the console's keys ask of `session`'s controller; `post` hands a message to the
    screen."""

    def __init__(self, session: ControllerSession[Controller], state: ConsoleState,
                 post: Callable[[Message], object]) -> None:
        self.session = session
        self.state = state
        self.post = post
        self.lock = asyncio.Lock()
        self.mode: Mode | None = None  # what the console last started
        self.flips: set[asyncio.Task[None]] = set()  # knob changes under way

    @property
    def controller(self) -> Controller:
        """The session's controller (on hosts the engine, built by the session on first
        use)."""
        return self.session.controller

    @property
    def connected(self) -> bool:
        """The controller's connect() has returned."""
        return self.session.connected

    def plan_progress(self) -> dict[str, Any] | None:
        """The plan's last PROGRESS while the plan is what the console last started."""
        return self.state.progress if self.mode == "plan" else None

    def measuring(self) -> bool:
        """Runs going on, or a plan between its steps."""
        p = self.plan_progress()
        return self.state.running or (p is not None
                                      and (p.get("done") or 0) < (p.get("total") or 0))

    async def start(self, mode: Mode = "continuous") -> None:
        """Connect once, end whatever runs, then start in `mode` (after any call asked
        before this one)."""
        def starting() -> None:
            self.mode = mode
            self.state.progress = None  # the last plan's
            self.post(Started(mode))

        await self._in_turn("start", lambda: self.session.start(mode, starting))

    async def stop(self) -> None:
        async def call() -> None:
            self.mode = None
            await self.session.stop()

        await self._in_turn("stop", call)

    async def mark(self, text: str) -> None:
        await self._in_turn("mark", lambda: self.controller.mark(text))

    async def _in_turn(self, what: str, call: Callable[[], Awaitable[None]]) -> None:
        async with self.lock:
            try:
                await call()
            except Exception as exc:  # a host error must never take the console down
                self.post(Failed(f"{what} failed: {type(exc).__name__}: {exc}"))

    def flip(self, name: str, value: str, pairs: list[str]) -> None:
        """A knob's key: its change on `pairs` as a task of its own, straight to the
        controller's one knob entry point (`set_values`), what it did posted when it is done;
        keys pressed in a row change in parallel, as the controller allows."""
        if all(self.state.pairs[lb].config.get(name) == value for lb in pairs):
            self.post(Said(f"{name} is {value} already on {', '.join(pairs)}"))
            return
        self.post(Said(f"setting {name}={value} on {', '.join(pairs)}…"))
        task = asyncio.get_running_loop().create_task(
            self.controller.set_values(name, dict.fromkeys(pairs, value)))
        self.flips.add(task)
        task.add_done_callback(self.flips.discard)
        task.add_done_callback(lambda done: self._flipped(done, name, value, pairs))

    def _flipped(self, task: asyncio.Task[None], name: str, value: str,
                 pairs: list[str]) -> None:
        """What a flip did, posted: set, refused, or failed (never a traceback)."""
        if task.cancelled():
            return
        exc = task.exception()
        if exc is None:
            self.post(KnobSet(pairs))
        elif isinstance(exc, KnobRefused):
            self.post(Failed(f"{name}={value} refused: {exc}", pairs))
        else:  # a host error must never take the console down
            self.post(Failed(f"{name}={value} failed: {type(exc).__name__}: {exc}", pairs))

    def cancel_flips(self) -> None:
        """The console is gone: a change still under way is cut short (the shutdown that
        follows sets every host back)."""
        for task in list(self.flips):
            task.cancel()

    async def shutdown(self) -> None:
        """Leaving: a call under way ends first (CONTROL_WAIT_S at most), then the
        controller stops and restores every knob (raising what restoring raised)."""
        with contextlib.suppress(TimeoutError):
            await asyncio.wait_for(self.lock.acquire(), CONTROL_WAIT_S)
        await self.session.shutdown()
