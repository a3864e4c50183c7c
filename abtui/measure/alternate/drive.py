"""The alternation's headless loop: flips on a clock, every boundary handled alike, until the
rule, a time limit, the maximum or a stop; and the lines an ended alternation says."""

from __future__ import annotations

import asyncio
import contextlib
import random
from collections.abc import Awaitable, Callable, Mapping
from typing import TYPE_CHECKING, Protocol

from abtui.core.errors import AbtuiError

if TYPE_CHECKING:
    from abtui.measure.alternate.design import Alternation
    from abtui.measure.alternate.verdicts import Verdicts


async def drive(set_values: Callable[[str, Mapping[str, str]], object], alt: Alternation,
                verdicts: Verdicts,
                say: Callable[[str], None], duration: float | None = None,
                stop: asyncio.Event | None = None,
                boundary: Callable[[], None] | None = None,
                done: Callable[[], str | None] | None = None,
                again: Callable[[str, Mapping[str, str]], object] | None = None,
                check: Callable[[], Awaitable[object]] | None = None) -> str:
    """Hold each value of the schedule `every` seconds. Every boundary is handled alike,
    whether the value changes or not, so that a stretch's timing never depends on the drawn
    order: the stretch in force closes; the verdicts that have a new look (a complete block)
    are said and `boundary` is called (the blocks counted change even when no verdict has a
    new look); then the next stretch is set up, every pair's value of the schedule in one
    call, awaited (the host confirms it; a flip that takes a boot delays the next stretch,
    never lengthens it): with `again` (the engine's `set_values(..., again=True)`: `anew`)
    at every boundary, changed value or kept, so every pair's runs restart alike and the
    hosts clear what the last stretch's connections left (a build knob's hosts boot the
    stretch's build: one boot per stretch); without it `set_values(knob, {pair: value})`
    only when a pair's value changes (a crossover's two pairs switch together, each to its
    own value). A boundary that keeps the value then pauses until it has lasted as long as
    one of the changes so far, drawn (seeded by the schedule's seed), so that the time
    between stretches has one distribution whatever the order (a periodic load's phase
    would otherwise follow the flips); `check` (the engine's read-back of every setting it
    set, `Engine.read_back`) is awaited before each stretch closes, so one in which someone
    else changed a setting is left out; `alt.window` seconds are dropped; then the next
    stretch opens, and counts only intervals that began after that (Stretches). The caller
    set the schedule's first value; stretch 0 opens after the window too (unless the caller
    began it). Returns why it stopped: `verdict`, `max-runs`, `time limit`, what `done`
    returned (asked at every boundary after the verdicts: a bisection's step call) or
    `stopped` (`stop` set: only ever between flips, so a flip under way always completes
    and the engine's phases and the hosts never disagree). A stretch in force when it
    returns is closed by the caller (`stretches.close()`), once the engine stopped."""
    assert alt.every is not None, "drive flips on a clock; plan mode runs plan_steps"
    prepare_looks(verdicts)
    loop = asyncio.get_running_loop()
    start = loop.time()
    stretches = verdicts.stretches
    stop = stop or asyncio.Event()
    flips: list[float] = []  # how long each change took
    pad = random.Random(verdicts.seed)
    i = stretches.index if stretches.index is not None else stretches.closed - 1
    if stretches.index is None:  # stretch i + 1 opens after the window, as at every boundary
        if await _stopped_within(stop, alt.window):
            return "stopped"
        i += 1
        stretches.begin(i, verdicts.values_at(i))
    while True:
        left = None if duration is None else duration - (loop.time() - start)
        if left is not None and left <= alt.every / 2:
            if left > 0 and await _stopped_within(stop, left):
                return "stopped"
            return "time limit"
        if await _stopped_within(stop, alt.every if left is None else min(alt.every, left)):
            return "stopped"
        if check is not None:  # settings read back: a stretch someone else changed is left out
            with contextlib.suppress(AbtuiError, OSError):
                await check()
        stretches.close(full=True)
        for line in verdicts.new_lines():
            say(line)
        if boundary is not None:
            boundary()
        if alt.until_verdict and verdicts.all_significant:
            return "verdict"
        if done is not None and (why := done()) is not None:
            return why
        if verdicts.at_maximum:
            return "max-runs"
        i += 1
        now = verdicts.values_at(i)
        changed = now != verdicts.values_at(i - 1)
        began = loop.time()
        flip = again if again is not None else set_values if changed else None
        if flip is not None:
            result = flip(alt.knob, now)
            if asyncio.iscoroutine(result):
                await result
        took = loop.time() - began
        # as long as a change: one of those so far, drawn; at every boundary when each
        # restarts the runs (`again`: a kept value's boundary takes a restart of its own, and
        # padding it alone to a drawn change made kept boundaries the longer ones: A/A false
        # claims 0.077 under a load of 2 stretches), else where the value is kept
        drawn = pad.choice(flips) if flips and (again is not None or not changed) else None
        if changed:
            flips.append(took)
        pause = max(0.0, drawn - took) if drawn is not None else 0.0
        if await _stopped_within(stop, pause + alt.window):
            return "stopped"
        stretches.begin(i, now)


class SetsValues(Protocol):
    """What sets a knob's values on pairs: the engine, the console's controller."""

    async def set_values(self, knob: str, values: Mapping[str, str],
                         again: bool = False) -> None: ...


def anew(engine: SetsValues) -> Callable[[str, Mapping[str, str]], object]:
    """What drive calls at every boundary: the engine's `set_values(..., again=True)` (a new
    stretch: every pair's runs restart and its hosts clear what the last ones left, the
    value changed or kept; a build's hosts boot it again: one boot per stretch)."""
    return lambda knob, values: engine.set_values(knob, values, again=True)


async def _stopped_within(stop: asyncio.Event, seconds: float) -> bool:
    """Wait `seconds`, or less when `stop` is set meanwhile; whether it was."""
    with contextlib.suppress(TimeoutError):
        await asyncio.wait_for(stop.wait(), seconds)
    return stop.is_set()


def stopped_line(why: str, verdicts: Verdicts, seconds: float) -> str:
    blocks = verdicts.blocks()
    what = {"verdict": "every comparison significant",
            "max-runs": f"the maximum of {verdicts.family.max_runs} blocks reached",
            "time limit": "time limit"}.get(why, why)
    return f"alternation ended ({what}) after {blocks} block{'s' if blocks != 1 else ''} " \
           f"({verdicts.stretches.closed} stretches), {seconds:.0f} s"


def ended_lines(why: str, verdicts: Verdicts, seconds: float) -> list[str]:
    """What an ended alternation says and records in the session (joined, as one mark):
    why and when it stopped, the verdict of each comparison, how the error is controlled.
    Headless and in the console alike, so a session read later tells how each one ended."""
    return [stopped_line(why, verdicts, seconds), *verdicts.summary(), verdicts.family_line()]


def prepare_looks(verdicts: Verdicts) -> asyncio.Future[None]:
    """Make the family's designs in a thread now (Family.prepare), so the first look, a
    block from now, finds them made instead of computing them on the event loop. Nothing
    waits for it; a failure here is the first look's to meet again."""
    future = asyncio.get_running_loop().run_in_executor(None, verdicts.family.prepare)
    future.add_done_callback(lambda f: f.cancelled() or f.exception())
    return future
