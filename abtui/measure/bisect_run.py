"""`abtui bisect --headless`: a bisection's steps run on the engine, each one an alternation of
the knob between the good candidate and the one compared (abtui.measure.alternate's schedule,
stretches, verdicts and `drive`), stopped by the step's call (abtui.measure.bisect.call) or
its maximum of blocks. One continuous run measures throughout; each step's stretches count
only its own intervals. Every step is said and recorded as a mark carrying its row; the
answer too. The hosts are set back by the engine's shutdown, whatever ended it.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from abtui.core.events import AnyEvent, BuildSwitch, EventKind
from abtui.core.model import Profile
from abtui.measure.alternate import (
    Alternation,
    Verdicts,
    change_window,
    drive,
    order_line,
    verdicts_for,
)
from abtui.measure.bisect import UNDECIDED, Bisection, Step, bounded, call, worst
from abtui.measure.engine import Engine
from abtui.reports.sequential import Assessment


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

    def record(self) -> dict[str, Any]:
        """What the session's first bisect mark keeps: what a resume must match."""
        return {"knob": self.knob, "candidates": list(self.candidates),
                "threshold": self.threshold, "max_blocks": self.max_blocks,
                "every": self.every, "metric": self.metric,
                "pairs": None if self.pairs is None else list(self.pairs)}


def step_looks(verdicts: Verdicts, candidate: str) -> dict[str, Assessment]:
    """Each judged pair's look at the candidate against the good one, every pair at its own
    α share of the step's (Bonferroni over the pairs: no α passed on)."""
    return {pair: verdicts.assess((pair, candidate), 0) for pair in verdicts.stretches.pairs}


class BootCount:
    """The hosts' boots (or module reloads) the engine reports done while a step runs: a
    build switch on a pair is two."""

    def __init__(self) -> None:
        self.n = 0

    def __call__(self, event: AnyEvent) -> None:
        switch = event.payload if event.kind is EventKind.SWITCH else None
        if isinstance(switch, BuildSwitch) and switch.stage == "up":
            self.n += 1


async def run_steps(engine: Engine, profile: Profile, plan: BisectPlan,
                    say: Callable[[str], None]) -> Bisection:
    """The bisection's steps on the engine (connected, not yet measuring): an earlier run's
    steps replayed and recorded again, then one continuous run started with the first step
    and measuring until the answer (the caller stops it)."""
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
    started = False
    while (index := bisection.next()) is not None:
        step = await _step(engine, profile, plan, bisection, index, say, started)
        started = True
        bisection.record(step)
        line = f"step {step.number}: {step.candidate} vs {bisection.good}: {step.verdict}, " \
               f"{step.delta_text()} ({step.blocks} block{'s' if step.blocks != 1 else ''}" \
               f"{f', {step.boots} boots' if step.boots else ''}); range left " \
               f"{bisection.range_text()}"
        say(line)
        await engine.mark(f"bisect {line}", bisect=step.row(bisection.good))
    result = bisection.result_line()
    say(result)
    await engine.mark(f"bisect {result}", bisect={"answer": bisection.answer, "line": result,
                                                   "knob": plan.knob,
                                                   "candidates": list(plan.candidates)})
    return bisection


async def _step(engine: Engine, profile: Profile, plan: BisectPlan, bisection: Bisection,
                index: int, say: Callable[[str], None], started: bool) -> Step:
    """One step: the candidate alternated against the good one until the call or the
    maximum of blocks."""
    candidate = plan.candidates[index]
    number = bisection.judged + 1
    alt = Alternation(plan.knob, (bisection.good, candidate), plan.every,
                      max_runs=2 * plan.max_blocks,
                      window=change_window(profile, plan.every))
    verdicts = verdicts_for(profile, alt, alpha=bisection.step_alpha, pairs=plan.pairs,
                            metric=plan.metric, min_effect=plan.threshold)
    boots = BootCount()
    say(f"step {number}: {candidate} vs {bisection.good} (range left "
        f"{bisection.range_text()})")

    def decided() -> str | None:
        return call(list(step_looks(verdicts, candidate).values()), plan.threshold)

    with engine.subscribe(verdicts.stretches), engine.subscribe(boots):
        await engine.set_values(plan.knob, verdicts.values_at(0))
        seeded = order_line(plan.knob, verdicts.seed, alt.values)
        await engine.mark(f"bisect step {number}: {seeded}")
        if not started:
            await engine.start("continuous")
        why = await drive(engine.set_values, alt, verdicts, lambda line: say(f"  {line}"),
                          done=decided)
        verdicts.stretches.close()
    return _record(number, candidate, index, why, verdicts, plan, boots.n)


def _record(number: int, candidate: str, index: int, why: str, verdicts: Verdicts,
            plan: BisectPlan, boots: int) -> Step:
    looks = step_looks(verdicts, candidate)
    verdict = why if why in ("good", "bad") else UNDECIDED
    got = worst(looks, plan.threshold)
    pair, look = got if got is not None else ("", None)
    d = look.delta if look is not None else None
    low, high = bounded(d) or (None, None)  # an interval not bounded yet has no ends
    return Step(number, candidate, index, verdict,
                pct=d.pct if d is not None else None, low=low, high=high,
                blocks=verdicts.blocks(), boots=boots, pair=pair, seed=verdicts.seed)
