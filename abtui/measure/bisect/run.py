"""`abtui bisect`: a bisection's steps run on the engine, each one an alternation of
the knob between the good candidate and the one compared (abtui.measure.alternate's schedule,
stretches, verdicts and `drive`), stopped by the step's call (abtui.measure.bisect.search.call) or
its maximum of blocks. One continuous run measures throughout; each step's stretches count
only its own intervals. Every step is said and recorded as a mark carrying its row; the
answer too; at its start and at every block a step says how it goes (a BisectLook event,
which the console's bisect panel reads). The hosts are set back by the engine's shutdown,
whatever ended it. Headless (abtui.measure.headless) or in the console (LiveBisection, in a
task the console stops when it is left).
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any, Protocol

from abtui.core.events import AnyEvent, BisectLook, BuildSwitch, EventKind, Payload
from abtui.core.model import Profile
from abtui.measure.alternate.design import Alternation, change_window, order_line
from abtui.measure.alternate.drive import anew, drive
from abtui.measure.alternate.verdicts import Verdicts, verdicts_for
from abtui.measure.bisect.search import UNDECIDED, Bisection, Step, bounded, call, worst
from abtui.reports.sequential import FIRST_LOOK, Assessment


class BisectHost(Protocol):
    """What a bisection needs of the side that measures: the engine (headless), or the
    console's controller (abtui.core.controller.Controller)."""

    def subscribe(self, callback: Callable[[AnyEvent], None]) -> object: ...

    def note(self, payload: Payload) -> None: ...

    async def start(self, mode: Any = "continuous") -> None: ...

    async def set_values(self, knob: str, values: Mapping[str, str],
                         again: bool = False) -> None: ...

    async def mark(self, text: str, verdicts: list[dict[str, Any]] | None = None,
                   bisect: dict[str, Any] | None = None) -> None: ...


@dataclass(frozen=True, slots=True)
class BisectPlan:
    """What `abtui bisect` was asked: the knob, its candidates (good first, bad last), the
    threshold (percent worse), blocks at most a step, seconds a value is held, the pairs
    judged (None: every pair the knob touches)."""

    knob: str
    candidates: tuple[str, ...]
    threshold: float
    max_blocks: int = 10
    every: float = 5.0
    pairs: tuple[str, ...] | None = None
    metric: str = "throughput"
    # an earlier run's step rows (its session's marks), replayed first; and that session
    resumed: tuple[dict[str, Any], ...] = ()
    resumed_from: str = ""
    design: str = "blocks"  # abtui.measure.alternate.design.DESIGNS: a crossover over two pairs

    def record(self) -> dict[str, Any]:
        """What the session's first bisect mark keeps: what a resume must match."""
        return {"knob": self.knob, "candidates": list(self.candidates),
                "threshold": self.threshold, "max_blocks": self.max_blocks,
                "every": self.every, "metric": self.metric,
                "pairs": None if self.pairs is None else list(self.pairs),
                "design": self.design}


def step_looks(verdicts: Verdicts, candidate: str) -> dict[str, Assessment]:
    """Each judged pair's look at the candidate against the good one, every pair at its own
    α share of the step's (Bonferroni over the pairs: no α passed on); a crossover's two
    pairs are one unit (`A+B`)."""
    return {unit: verdicts.assess((unit, candidate), 0) for unit, _ in verdicts.units}


class BootCount:
    """The hosts' boots (or module reloads) the engine reports done while a step runs: a
    build switch on a pair is two."""

    def __init__(self) -> None:
        self.n = 0

    def __call__(self, event: AnyEvent) -> None:
        switch = event.payload if event.kind is EventKind.SWITCH else None
        if isinstance(switch, BuildSwitch) and switch.stage == "up":
            self.n += 1


class StepRoute:
    """The one subscription a bisection holds: every event goes to the step running now (its
    stretches and its boot count), to nothing between steps."""

    def __init__(self) -> None:
        self.to: tuple[Callable[[AnyEvent], None], ...] = ()

    def __call__(self, event: AnyEvent) -> None:
        for callback in self.to:
            callback(event)


async def run_steps(engine: BisectHost, profile: Profile, plan: BisectPlan,
                    say: Callable[[str], None], *, stop: asyncio.Event | None = None,
                    started: bool = False, say_marks: bool = True) -> Bisection:
    """The bisection's steps on the engine (connected; measuring when `started`, else
    started with the first step): an earlier run's steps replayed and recorded again, then
    one continuous run measuring until the answer (the caller stops it). `stop` set ends it
    between flips (the console's quit): a step that had its first look then is recorded
    undecided and `stopped` (a resume judges it again, its α counted as spent), one that had
    not is not recorded; no answer is recorded. `say_marks` False: the lines the marks
    carry are not said as well (the console's log shows the marks)."""
    tell = say if say_marks else (lambda _line: None)
    bisection = Bisection(plan.candidates, plan.threshold)
    bisection.replay(plan.resumed)
    await engine.mark(f"bisect {plan.knob}: {len(plan.candidates)} candidates",
                      bisect={"plan": plan.record()})
    for row in plan.resumed:  # the table of this session shows the whole bisection
        await engine.mark(f"bisect step {row['number']}: {row['verdict']} (resumed from "
                          f"{plan.resumed_from})", bisect={**row, "resumed": plan.resumed_from})
    if plan.resumed:
        say(f"resumed from {plan.resumed_from}: {len(plan.resumed)} step"
            f"{'s' if len(plan.resumed) != 1 else ''} recorded, range left "
            f"{bisection.range_text()}"
            + (f"; {bisection.retried} undecided step judged again" if bisection.retried
               else ""))
    measure = "throughput" if plan.metric == "throughput" else \
        "1/RTT (ping; -50 % is the RTT doubled)"
    say(f"bisecting {plan.knob} by {measure} over {len(plan.candidates)} candidates, "
        f"{plan.candidates[0]} (good) … {plan.candidates[-1]} (bad): a step calls a candidate "
        f"bad when it is worse by {plan.threshold:g} % or more; α "
        f"{bisection.alpha:g} split over at most {bisection.budget} steps "
        f"({bisection.step_alpha:.4g} each)")
    stop = stop or asyncio.Event()
    route = StepRoute()
    handle = engine.subscribe(route)
    try:
        while (index := bisection.next()) is not None:
            step = await _step(engine, profile, plan, bisection, index, say, started, stop,
                               route)
            started = True
            if stop.is_set():
                await _stopped(engine, bisection, step, tell)
                return bisection
            bisection.record(step)
            line = f"step {step.number}: {step.candidate} vs {bisection.good}: " \
                   f"{step.verdict}{step.decided_by()}, {step.delta_text()} " \
                   f"({_blocks(step.blocks)}" \
                   f"{f', {step.boots} boots' if step.boots else ''}); range left " \
                   f"{bisection.range_text()}"
            tell(line)
            await engine.mark(f"bisect {line}", bisect=step.row(bisection.good))
    finally:
        route.to = ()
        close = getattr(handle, "close", None)
        if callable(close):
            close()
    result = bisection.result_line()
    tell(result)
    await engine.mark(f"bisect {result}", bisect={"answer": bisection.answer, "line": result,
                                                   "knob": plan.knob,
                                                   "candidates": list(plan.candidates)})
    return bisection


def _blocks(n: int) -> str:
    return f"{n} block{'s' if n != 1 else ''}"


async def _stopped(engine: BisectHost, bisection: Bisection, step: Step,
                   say: Callable[[str], None]) -> None:
    """A step stopped before its call: recorded undecided (and `stopped`) once it has had a
    look (its α may have been spent), else left out; said either way."""
    line = f"bisect stopped in step {step.number} ({step.candidate} vs {bisection.good}) " \
           f"after {_blocks(step.blocks)}; the first bad is one of {bisection.range_text()}" \
           "; `abtui bisect … --resume` with this session goes on"
    say(line)
    if step.blocks >= FIRST_LOOK:
        await engine.mark(line, bisect={**step.row(bisection.good), "stopped": True})
    else:
        await engine.mark(line)


async def _step(engine: BisectHost, profile: Profile, plan: BisectPlan, bisection: Bisection,
                index: int, say: Callable[[str], None], started: bool, stop: asyncio.Event,
                route: StepRoute) -> Step:
    """One step: the candidate alternated against the good one until the call, the
    maximum of blocks or `stop`; its look emitted at its start and at every block."""
    candidate = plan.candidates[index]
    number = bisection.judged + 1
    alt = Alternation(plan.knob, (bisection.good, candidate), plan.every,
                      max_runs=2 * plan.max_blocks,
                      window=change_window(profile, plan.every), design=plan.design)
    verdicts = verdicts_for(profile, alt, alpha=bisection.step_alpha, pairs=plan.pairs,
                            metric=plan.metric, min_effect=plan.threshold)
    boots = BootCount()
    say(f"step {number}: {candidate} vs {bisection.good} (range left "
        f"{bisection.range_text()})")

    def decided() -> str | None:
        return call(list(step_looks(verdicts, candidate).values()), plan.threshold)

    told = [-1]  # the blocks the last look said: a look a block, not one a boundary

    def look() -> None:
        blocks = verdicts.blocks()
        if blocks == told[0]:
            return
        told[0] = blocks
        if blocks < FIRST_LOOK:  # nothing to judge yet (the rule's first use costs seconds)
            engine.note(BisectLook(number=number, candidate=candidate, index=index,
                                   good=bisection.good, blocks=blocks,
                                   max_blocks=plan.max_blocks))
            return
        pair, pct, low, high = deciding(step_looks(verdicts, candidate), plan.threshold)
        engine.note(BisectLook(
            number=number, candidate=candidate, index=index, good=bisection.good,
            blocks=blocks, max_blocks=plan.max_blocks, call=decided(),
            pct=pct, low=low, high=high, pair=pair))

    route.to = (verdicts.stretches, boots)
    look()
    await engine.set_values(plan.knob, verdicts.values_at(0))
    seeded = order_line(plan.knob, verdicts.seed, alt.values)
    await engine.mark(f"bisect step {number}: {seeded}")
    if not started:
        await engine.start("continuous")
    why = await drive(engine.set_values, alt, verdicts, lambda line: say(f"  {line}"),
                      stop=stop, boundary=look, done=decided,
                      again=anew(engine), check=getattr(engine, "read_back", None))
    verdicts.stretches.close()
    route.to = ()
    return _record(number, candidate, index, why, verdicts, plan, boots.n)


def deciding(looks: dict[str, Assessment], threshold: float
             ) -> tuple[str, float | None, float | None, float | None]:
    """The pair that decides a step (abtui.measure.bisect.search.worst) and its Δ with the
    interval's ends (None while not bounded)."""
    got = worst(looks, threshold)
    pair, look = got if got is not None else ("", None)
    d = look.delta if look is not None else None
    low, high = bounded(d) or (None, None)  # an interval not bounded yet has no ends
    return pair, d.pct if d is not None else None, low, high


def _record(number: int, candidate: str, index: int, why: str, verdicts: Verdicts,
            plan: BisectPlan, boots: int) -> Step:
    verdict = why if why in ("good", "bad") else UNDECIDED
    pair, pct, low, high = deciding(step_looks(verdicts, candidate), plan.threshold)
    return Step(number, candidate, index, verdict, pct=pct, low=low, high=high,
                blocks=verdicts.blocks(), boots=boots, pair=pair, seed=verdicts.seed)
