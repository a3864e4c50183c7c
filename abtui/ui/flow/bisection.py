"""The console's bisection (`abtui bisect` without --headless): measuring starts, then the
bisection runs on the controller (abtui.measure.bisect.live) while the panes stream as in any
session. Its panel is the alternation's (abtui.ui.render.verdict_panel), showing the
lines the console's state folds from the bisection's events (abtui.measure.bisect.board): a
replayed bisect session shows the same panel. Escape closes it only once the bisection has
ended; leaving stops it first (bounded), and the hosts are set back as always."""

from __future__ import annotations

from typing import TYPE_CHECKING

from abtui.core.model import Profile
from abtui.ui.flow.control import ControllerCalls
from abtui.ui.flow.messages import Failed, Post, RunWorker, Said, VerdictsShown
from abtui.ui.model.state import ConsoleState

if TYPE_CHECKING:  # numpy and scipy behind them: loaded when the bisection starts
    from abtui.measure.bisect.live import LiveBisection
    from abtui.measure.bisect.run import BisectPlan


class ConsoleBisection:
    """The bisection `plan` (None: the console was opened without one) on the controller of
    `calls`; its
    lines (for the log) and its panel's (for the verdict panel) are posted as messages
    (abtui.ui.flow.messages); `run_worker` runs its start as the app's worker."""

    def __init__(self, post: Post, run_worker: RunWorker, profile: Profile,
                 state: ConsoleState, calls: ControllerCalls,
                 plan: BisectPlan | None = None) -> None:
        self.post = post
        self.run_worker = run_worker
        self.profile = profile
        self.state = state  # its `bisect`: the panel's lines, from the events
        self.calls = calls
        self.plan = plan
        self.live: LiveBisection | None = None
        self.closed = False  # escape closed an ended bisection's panel

    def begin(self) -> None:
        """Measure continuously, then bisect (the console's start, in place of measuring
        only)."""
        self.run_worker(self._begin(), group="bisect", exit_on_error=False)

    async def _begin(self) -> None:
        from abtui.measure.bisect.live import LiveBisection

        assert self.plan is not None
        await self.calls.start("continuous")
        if not self.calls.connected:
            self.post(Failed(f"bisect of {self.plan.knob} not started: the "
                             "hosts could not be measured (the log says why)"))
            return
        self.live = LiveBisection(self.calls.controller, self.profile, self.plan, say=self.say,
                                  notify=self._ended)
        self.live.start()

    def _ended(self) -> None:
        """The bisection ended: its panel says so (escape closes it); an error is said as a
        failure."""
        live = self.live
        if live is not None and live.failed is not None and self.plan is not None:
            self.post(Failed(f"bisect of {self.plan.knob} failed: {live.failed}; "
                             "stopped (quit to set the hosts back)"))
        self.show()

    def say(self, line: str) -> None:
        """A line of the bisection's in the log."""
        self.post(Said(line))

    @property
    def running(self) -> bool:
        return self.live is not None and self.live.running

    def holds(self, knob: str) -> bool:
        """The bisection is running and sets `knob`: nothing else may set it meanwhile."""
        return self.running and self.plan is not None and self.plan.knob == knob

    def shown(self) -> bool:
        """The panel shows a bisection (running, ended, or replayed)."""
        return self.state.bisect is not None and not self.closed

    def ended(self) -> bool:
        """The panel shows a bisection that has ended (or was only replayed)."""
        return self.shown() and not self.running and not (
            self.plan is not None and self.live is None)  # one about to start runs

    def close(self) -> None:
        """escape: an ended bisection's panel closed."""
        if self.ended():
            self.closed = True
            self.post(VerdictsShown(None))

    async def end(self) -> None:
        """Leaving: no step goes on after this returns (a value being set finishes first,
        within abtui.measure.alternate.design.STOP_WAIT_S); the hosts are set back after it."""
        if self.live is not None and self.live.running:
            await self.live.stop()
            self.show()

    def show(self) -> None:
        """The panel redrawn from the state's bisection (its events changed it, or the
        bisection ended)."""
        board = self.state.bisect
        if board is not None and not self.closed:
            self.post(VerdictsShown(board.lines(), self.ended()))
