"""The console's live verdict: an auto-alternation's verdicts (Δ, interval, verdict,
stretches still needed), fed by abtui.measure.alternate.live.LiveAlternation, shown in the
verdict panel (abtui.ui.render.verdict_panel). The rule, the flips and the lines are the
domain's; this only starts, stops and shows them."""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from typing import TYPE_CHECKING

from abtui.core.errors import AbtuiError
from abtui.core.model import Profile
from abtui.ui.flow.control import ControllerCalls
from abtui.ui.flow.messages import Failed, Notice, Post, RunWorker, Said, VerdictsShown
from abtui.ui.model.state import ConsoleState

if TYPE_CHECKING:  # numpy and scipy behind it: loaded when an alternation starts
    from abtui.measure.alternate.live import LiveAlternation
    from abtui.measure.why_book import WhyBook

NO_PROFILE = ("why: no profile is taken; set [test] profile_hz in the profile (or start "
              "with `abtui tui PROFILE --profile`) to see which functions moved")


def has_ended(live: LiveAlternation) -> bool:
    """The alternation has said why it ended (its last notice comes just before its task is
    done), or is not running."""
    return live.why is not None or not live.running


class ConsoleAlternation:
    """ctrl+a and ctrl+e: start or stop alternating the knob last flipped (measuring
    continuously first), and step min_effect; its verdicts (for the verdict panel) and its
    lines (for the log) are posted as messages (abtui.ui.flow.messages); `run_worker` runs
    its starts and stops as the app's workers."""

    def __init__(self, post: Post, run_worker: RunWorker, profile: Profile,
                 state: ConsoleState, calls: ControllerCalls) -> None:
        self.post = post
        self.run_worker = run_worker
        self.profile = profile
        self.state = state
        self.calls = calls
        self.live: LiveAlternation | None = None
        self.min_effect = profile.min_effect
        self.every: float | None = None  # seconds a value is held (None: the default)
        self.why: WhyBook | None = None  # the alternation's profiles (when profiled)
        self.why_shown = False  # ctrl+y: the why table under the verdicts
        self._why_noted = False  # the ended alternation's WHY recorded

    @property
    def last_knob(self) -> str | None:
        """The knob ctrl+a alternates: the one flipped last, by a key (when pressed) or by
        anything else the console saw change (the plan's steps: a KNOB event)."""
        return self.state.last_knob

    @last_knob.setter
    def last_knob(self, knob: str | None) -> None:
        self.state.last_knob = knob

    def toggle(self) -> None:
        self.run_worker(self._toggle(), group="alternate", exit_on_error=False)

    async def _toggle(self) -> None:
        from abtui.measure.alternate.live import LiveAlternation, console_alternation

        live = self.live
        if live is not None and live.running:
            await live.stop()  # bounded: a flip still under way is said, not waited on
            self.post(Said(live.stopped_line()))
            self.show()
            return
        first = next(iter(self.state.pairs))
        try:
            alt = console_alternation(self.profile, self.last_knob,
                                      self.state.pairs[first].config,
                                      *([self.every] if self.every else []))
        except AbtuiError as exc:
            self.post(Failed(str(exc)))
            return
        if not self.state.running or self.calls.mode != "continuous":
            await self.calls.start("continuous")
        knob = self.profile.knob(alt.knob)
        before = {lb: ps.config[alt.knob] for lb, ps in self.state.pairs.items()
                  if (not knob.pairs or lb in knob.pairs) and alt.knob in ps.config}
        live = self.live = LiveAlternation(self.calls.controller, alt, self.min_effect,
                                           notify=self.show, before=before)
        self.why, self._why_noted = self._why_book(live), False
        self.post(Said(f"alternating {alt.knob}: {' / '.join(alt.values)} "
                       f"every {alt.every:g} s"))
        starting = asyncio.ensure_future(live.start())
        await asyncio.sleep(0)  # start() under way: the panel says "starting", not "ended"
        self.show()
        try:
            await starting
        except Exception as exc:  # a host error must never take the console down
            self.post(Failed(f"alternation of {alt.knob} failed: {exc}"))
        self.show()

    async def end(self) -> None:
        """Leaving: no flip after this returns (one under way finishes first), so restoring
        the hosts is the last change they see."""
        if self.live is not None and self.live.running:
            await self.live.stop(restore=False)  # restoring the hosts sets it back
            self.show()

    def alternating(self, knob: str) -> bool:
        """Whether `knob` is being alternated now (a flip of it by hand must end that first:
        the two would fight over the hosts' value)."""
        live = self.live
        return live is not None and live.running and live.alt.knob == knob

    def flipped_by_hand(self, then: Callable[[], None]) -> None:
        """The knob being alternated (`alternating`) flipped by its key: the alternation
        ends first (the two would fight over the hosts' value), then `then` sets it."""
        live = self.live
        if live is None:
            then()
            return

        async def stop_then() -> None:
            await live.stop(restore=False)  # the key's value follows (bounded, as ctrl+a)
            self.post(Said(live.stopped_line(": flipped by hand")))
            self.show()
            then()

        self.run_worker(stop_then(), group="alternate", exit_on_error=False)

    def next_min_effect(self) -> None:
        """The smallest effect worth resolving, next choice (0.5, 1, 2, 5, 10 %)."""
        from abtui.measure.alternate.live import next_min_effect

        self.min_effect = next_min_effect(self.min_effect)
        if self.live is not None:
            self.live.set_min_effect(self.min_effect)
        self.post(Notice(f"min effect {self.min_effect:g}%", timeout=2))

    def ended(self) -> bool:
        """An alternation has ended and its panel still shows it."""
        return self.live is not None and has_ended(self.live)

    def close(self) -> None:
        """escape: an ended alternation's panel closed (ctrl+a starts another)."""
        if self.ended():
            self.live = None
            self.show()

    def _why_book(self, live: LiveAlternation) -> WhyBook | None:
        from abtui.measure.why_book import profiled, why_book

        if not profiled(self.profile):
            return None
        book = why_book(live.verdicts)
        self.calls.session.subscribe(book)  # after the alternation's own subscriber
        return book

    def toggle_why(self) -> None:
        """ctrl+y: the why table (the frames that moved, with intervals) shown under the
        verdicts, or hidden."""
        self.why_shown = not self.why_shown
        self.show()

    def _why_lines(self) -> list[str]:
        if not self.why_shown:
            return []
        if self.why is None:
            return [NO_PROFILE if self.live is None or not self._profiled() else
                    "why: start an alternation (ctrl+a) to judge the profiles"]
        return self.why.lines() or [f"why: {self.why.windows} profile windows so far; a "
                                    "table once a block is complete"]

    def _profiled(self) -> bool:
        from abtui.measure.why_book import profiled

        return profiled(self.profile)

    def show_recorded(self, lines: list[str] | None) -> None:
        """A recording's verdicts (a journalled alternation's mark, as `abtui view` reads
        it): shown when no alternation of this console's own holds the panel."""
        if self.live is None and lines:
            self.post(VerdictsShown(lines, ended=True))

    def show(self) -> None:
        live = self.live
        ended = live is not None and has_ended(live)
        if ended and self.why is not None and not self._why_noted:
            self._why_noted = True
            found = self.why.found()
            if found.rows:  # the reports' Why section reads it
                self.calls.controller.note(found)
        lines = [*(live.lines() if live is not None else []), *self._why_lines()]
        self.post(VerdictsShown(lines if live is not None or self.why_shown else None, ended))
