"""A bisection the console runs (`abtui bisect` without --headless): the same steps, calls and
marks as headless (abtui.measure.bisect.run.run_steps), in a task the console can stop. What
the bisect panel shows comes as events (the step marks and BisectLook), not from here; this
only says whether it runs and why it ended. No Textual here: this is domain code."""

from __future__ import annotations

import asyncio
from collections.abc import Callable

from abtui.core.model import Profile
from abtui.measure.alternate.design import STOP_WAIT_S
from abtui.measure.bisect.run import BisectHost, BisectPlan, run_steps
from abtui.measure.bisect.search import Bisection


class LiveBisection:
    """The bisection `plan` on `host` (measuring continuously already); `say` gets its
    progress lines, `notify` is called when it ends."""

    def __init__(self, host: BisectHost, profile: Profile, plan: BisectPlan,
                 say: Callable[[str], None], notify: Callable[[], None] = lambda: None) -> None:
        self.host = host
        self.profile = profile
        self.plan = plan
        self.say = say
        self.notify = notify
        self.why: str | None = None  # why it ended (its answer, stopped, an error); None: runs
        self.bisection: Bisection | None = None  # once ended by its steps
        self._stop = asyncio.Event()
        self._task: asyncio.Task[None] | None = None

    @property
    def failed(self) -> str | None:
        """What ended it when an error did (a refused value, a host lost)."""
        return self.why[len("error: "):] if self.why and self.why.startswith("error: ") \
            else None

    @property
    def running(self) -> bool:
        """Started and not ended (not once it has said why: `notify` comes just before its
        task is done)."""
        return self._task is not None and not self._task.done() and self.why is None

    def start(self) -> None:
        self._task = asyncio.get_running_loop().create_task(self._run())

    async def _run(self) -> None:
        try:
            self.bisection = await run_steps(self.host, self.profile, self.plan, self.say,
                                             stop=self._stop, started=True,
                                             say_marks=False)
            self.why = "stopped" if self._stop.is_set() else str(self.bisection.answer)
        except Exception as exc:  # a refused value, a host lost: it cannot go on (`failed`)
            self.why = f"error: {exc}"
        self.notify()  # (not when cancelled: the loop is ending, nothing to show it)

    async def stop(self, wait: float = STOP_WAIT_S) -> None:
        """No step goes on after this returns, unless a value being set is still under way
        after `wait` seconds (let finish, never cancelled: the engine's phases and the hosts
        must agree); the step stopped is recorded (run_steps)."""
        self._stop.set()
        task = self._task
        if task is not None and not task.done():
            await asyncio.wait([task], timeout=wait)
