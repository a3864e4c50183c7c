"""The console's alternation: what it alternates, its choices, and `LiveAlternation`, the
same flips, rule and verdicts as `abtui run --alternate` in a task on the console's
controller."""

from __future__ import annotations

import asyncio
from collections.abc import Callable, Mapping
from typing import Any

from abtui.core.configuration import UNKNOWN
from abtui.core.controller import Controller
from abtui.core.errors import BadInput
from abtui.core.events import (
    AnyEvent,
)
from abtui.core.model import DEFAULT_MAX_RUNS, Profile
from abtui.measure.alternate.design import STOP_WAIT_S, Alternation, change_window, order_line
from abtui.measure.alternate.drive import drive, ended_lines
from abtui.measure.alternate.verdicts import verdicts_for

# the console's alternation: how long each value is held, and the min_effect key's choices
CONSOLE_EVERY_S = 5.0




MIN_EFFECTS = (0.5, 1.0, 2.0, 5.0, 10.0)


def next_min_effect(current: float) -> float:
    """The min_effect key's next choice after `current` (round the list)."""
    return next((m for m in MIN_EFFECTS if m > current), MIN_EFFECTS[0])


def console_alternation(profile: Profile, knob: str | None, config: Mapping[str, str],
                        every: float = CONSOLE_EVERY_S) -> Alternation:
    """What the console alternates: `knob` (the last one flipped; else the plan's first knob,
    else the profile's first), between its values, the one in force first (the base)."""
    names = [k.name for k in profile.knobs]
    if not names:
        raise BadInput("the profile has no knob to alternate")
    if knob not in names:
        knob = next((m for m in profile.plan.matrix if m in names), names[0])
    values = list(profile.knob(knob).values)
    now = config.get(knob)
    if now in values:
        values.remove(now)
        values.insert(0, now)
    elif now is not None:
        values.insert(0, now)
    if len(values) < 2:
        raise BadInput(f"knob {knob} has one value: nothing to alternate")
    return Alternation(knob, tuple(values), every, DEFAULT_MAX_RUNS, until_verdict=True,
                       window=change_window(profile, every))


class LiveAlternation:
    """An alternation the console starts and stops on its controller (measuring continuously):
    the same flips, rule and verdicts as `abtui run --alternate`, in a task. `notify` is called
    when the verdicts have a new look and when the alternation ends."""

    def __init__(self, controller: Controller, alt: Alternation, min_effect: float,
                 notify: Callable[[], None] = lambda: None,
                 before: Mapping[str, str] | None = None) -> None:
        self.controller = controller
        self.alt = alt
        # draws the order's seed
        self.verdicts = verdicts_for(controller.profile, alt, min_effect=min_effect)
        self.notify = notify
        self.why: str | None = None  # why it ended; None while it runs
        # the knob's value on each pair before it started, set back when it ends (None: the
        # base value, on every pair it flips); what was set back, for the line that says so
        self.before = dict(before) if before is not None else None
        self.set_back: list[str] = []
        self.held: str | None = None  # the value it set last
        self.flipping: str | None = None  # the value being set now, while a flip is under way
        self.stuck: str | None = None  # what a bounded stop found still under way
        self._keep = False  # stop(restore=False): the knob is left as it is
        self._task: asyncio.Task[Any] | None = None
        self._began = 0.0  # the loop's time when the first value was set
        self._stop = asyncio.Event()
        self._active = False
        self._starting = False  # start() is setting the first value
        controller.subscribe(self._on_event)

    def _on_event(self, event: AnyEvent) -> None:
        if self._active:
            self.verdicts.stretches(event)

    @property
    def running(self) -> bool:
        """From the moment `start` is called until the alternation ended: while the first
        value is still being set (a tunnel takes seconds) it is running too, so a second
        ctrl+a then stops it rather than starting another one beside it."""
        if self._task is not None:
            return not self._task.done()
        return self._starting

    async def start(self) -> None:
        """The schedule's first value set (a refusal raises KnobRefused), then flips on a
        clock. A `stop` while the first value is being set ends it as soon as that is set."""
        self._active = self._starting = True
        try:
            # stretch 0 opens in drive, after the window
            await self._flip(self.alt.knob, self.verdicts.values_at(0))
            self._began = asyncio.get_running_loop().time()
            await self.controller.mark(order_line(self.alt.knob, self.verdicts.seed,
                                                  self.alt.values))
            self._task = asyncio.get_running_loop().create_task(self._run())
        except BaseException:
            self._active = False
            raise
        finally:
            self._starting = False

    async def _flip(self, knob: str, values: Mapping[str, str]) -> None:
        """The schedule's values set: the console alternates in blocks (one value on every
        pair the knob touches)."""
        (value,) = set(values.values())
        self.flipping = value
        try:
            await self.controller.set_knob(knob, value)
        finally:
            self.flipping = None
        self.held = value

    async def _anew(self, knob: str, values: Mapping[str, str]) -> None:
        """A boundary: the schedule's values set as a new stretch (every pair's runs
        restart, changed or kept: the engine's `again`)."""
        (value,) = set(values.values())
        self.flipping = value
        try:
            await self.controller.set_values(knob, values, again=True)
        finally:
            self.flipping = None
        self.held = value

    async def _run(self) -> None:
        try:
            # the panel is redrawn once per boundary (`boundary`), its new lines with it
            why = await drive(self._flip, self.alt, self.verdicts, lambda _line: None,
                              stop=self._stop, boundary=self.notify, again=self._anew,
                              check=getattr(self.controller, "read_back", None))
        except Exception as exc:  # a refused flip: it cannot go on
            why = f"error: {exc}"
        self.why = why if self.stuck is None else f"{why}; {self.stuck} (then set)"
        self.verdicts.stretches.close()
        self._active = False
        self.notify()  # ended, said at once: setting the knob back takes a flip (seconds)
        elapsed = asyncio.get_running_loop().time() - self._began
        await self.controller.mark("; ".join(ended_lines(self.why, self.verdicts, elapsed)),
                                   verdicts=self.verdicts.table())
        if not self._keep:
            await self._restore()
            self.notify()

    async def _restore(self) -> None:
        """However it ended (the rule, the maximum, the key), the knob goes back to what each
        pair had before it started: an alternation is a measurement, not a change of the
        hosts' setting. A value that could not be set back is said in `why`."""
        if self.held is None:
            return  # it never set a value
        by_value: dict[str, list[str]] = {}
        for pair, value in (self.before or {}).items():
            if value != UNKNOWN:
                by_value.setdefault(value, []).append(pair)
        wanted: list[tuple[str, list[str] | None]] = [*by_value.items()] \
            if self.before is not None else [(self.alt.values[0], None)]  # the base, all
        for value, pairs in wanted:
            if value == self.held:
                continue
            try:
                await self.controller.set_knob(self.alt.knob, value, pairs)
            except Exception as exc:  # the hosts keep the last value: said, never raised
                self.why = f"{self.why}; {self.alt.knob} not set back to {value}: {exc}"
            else:
                self.set_back.append(value)

    async def stop(self, restore: bool = True, wait: float | None = None) -> None:
        """Stop flipping; the verdicts so far remain, and the knob goes back to its value
        from before (`restore`; not when a flip by hand or leaving follows). A flip under
        way is let finish, never cancelled: cancelled halfway, the hosts could have the new
        value while the engine's phase never learnt it, and every later interval would be
        counted nowhere. The wait for it is bounded (`wait` seconds): a flip still under way
        then is said in `why` and `stuck` (the alternation has ended: no flip follows it; it
        completes, and the knob is set back, in the background); None: STOP_WAIT_S."""
        wait = STOP_WAIT_S if wait is None else wait
        self._keep = not restore
        self._stop.set()
        task = self._task
        if task is not None and not task.done():
            await asyncio.wait([task], timeout=wait)  # never cancels the task
            if not task.done():
                what = f"{self.alt.knob}={self.flipping}" if self.flipping is not None \
                    else self.alt.knob
                self.stuck = f"setting {what} still under way after {wait:g} s"
                self.why = f"stopped; {self.stuck}"  # ended: said at once
                self.notify()
        self._active = False

    def stopped_line(self, how: str = "") -> str:
        """The log's line once `stop` returned (`how`: e.g. ": flipped by hand"): the values
        set back, and a flip still under way, said the same way whatever stopped it."""
        back = f"; {self.alt.knob} back to {', '.join(self.set_back)}" if self.set_back else ""
        stuck = f"; {self.stuck} (it completes; the alternation flips nothing after it)" \
            if self.stuck else ""
        return f"alternation of {self.alt.knob} stopped{how}{back}{stuck}"

    def set_min_effect(self, pct: float) -> None:
        self.verdicts.min_effect = pct
        self.notify()

    def lines(self) -> list[str]:
        """The header and one line per pair and compared value, as the console shows them."""
        state = f"ended: {self.why}" if self.why is not None else \
            "running" if self._task is not None else \
            "starting" if self._starting else "ended: not started"
        head = (f"alternating {self.alt.knob} every {self.alt.every or 0:g} s "
                f"({self.verdicts.blocks()}/{self.verdicts.family.max_runs} blocks, seed "
                f"{self.verdicts.seed}, min effect {self.verdicts.min_effect:g}%), {state}")
        return [head, *self.verdicts.summary()]
