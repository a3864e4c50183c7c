"""Auto-alternation: one knob flipped back and forth (ABAB…) on a continuous run, each stretch a
run-level sample, and the live verdict of the sequential rule (abtui.reports.sequential).

Flipping the knob ends a phase on every pair it touches; when a phase closes, its counted
intervals (in the pair's direction, not omitted, not straddling a flip) make that stretch's
value: bits ÷ seconds, as every segment (abtui.reports.throughput). A stretch that counted
less than half of `every` (the one a stop cut short, one whose run failed) is no sample.
The first value is the base; each other value is compared with it on each pair.

`Stretches` and `Verdicts` are plain subscribers (the console uses them too); `drive` is the
headless loop that flips on a clock and stops by the rule, a time limit or the maximum.
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any

from abtui.core.controller import Controller
from abtui.core.errors import BadInput
from abtui.core.events import Event, EventKind
from abtui.core.model import DEFAULT_MAX_RUNS, DEFAULT_MIN_EFFECT, Profile
from abtui.measure.plan import PlanStep
from abtui.reports.sequential import FIRST_LOOK, Assessment, Design, assess
from abtui.reports.throughput import Segment, counted


@dataclass(frozen=True, slots=True)
class Alternation:
    """What to alternate and when to stop."""

    knob: str
    values: tuple[str, ...]  # the first is the base
    every: float | None  # seconds a value is held; None: one plan-mode run per stretch
    max_runs: int = DEFAULT_MAX_RUNS  # stretches per value at most
    until_verdict: bool = False  # stop when every comparison is significant


def parse_alternate(text: str, profile: Profile) -> tuple[str, tuple[str, ...]]:
    """`KNOB=V1,V2[,…]`, or `KNOB` alone for the profile's values of it."""
    name, sep, listed = text.partition("=")
    knobs = [k.name for k in profile.knobs]
    if name not in knobs:
        raise BadInput(f"--alternate {text}: the profile has no knob {name!r} "
                       f"(it has: {', '.join(knobs) or 'none'})")
    values = tuple(v.strip() for v in listed.split(",")) if sep else profile.knob(name).values
    if len(values) < 2 or any(not v for v in values) or len(set(values)) < len(values):
        raise BadInput(f"--alternate {text}: give two or more different values, "
                       f"KNOB=V1,V2 (the first is the base)")
    return name, tuple(values)


@dataclass(slots=True)
class Stretches:
    """Each pair's stretch values by knob value, from the engine's events."""

    knob: str
    values: tuple[str, ...]
    pairs: tuple[str, ...]
    min_seconds: float
    samples: dict[str, dict[str, list[float]]] = field(default_factory=dict)
    _open: dict[tuple[str, int], Segment] = field(default_factory=dict)

    def __post_init__(self) -> None:
        self.samples = {p: {v: [] for v in self.values} for p in self.pairs}

    def __call__(self, event: Event) -> None:
        pair = event.pair
        if pair not in self.samples:
            return
        d = event.data
        if event.kind is EventKind.INTERVAL and not d.get("straddles"):
            got = counted(event)
            if got is not None and isinstance(d.get("phase"), int):
                self._open.setdefault((pair, d["phase"]), Segment()).add(*got)
        elif event.kind is EventKind.PHASE and isinstance(d.get("phase"), int):
            seg = self._open.pop((pair, d["phase"]), None)
            value = (d.get("config") or {}).get(self.knob)
            if seg is not None and seg.rate is not None and seg.seconds >= self.min_seconds \
                    and value in self.samples[pair]:
                self.samples[pair][value].append(seg.rate)

    def count(self) -> int:
        """Stretches taken on every side of every pair (the smallest count)."""
        return min(len(s) for by in self.samples.values() for s in by.values())


@dataclass(slots=True)
class Verdicts:
    """The live verdict of each configuration against its base on each pair; a comparison
    that turned significant keeps that verdict (the rule stopped for it there)."""

    stretches: Stretches
    design: Design
    min_effect: float = DEFAULT_MIN_EFFECT
    decided: dict[tuple[str, str], Assessment] = field(default_factory=dict)
    _said: dict[tuple[str, str], int] = field(default_factory=dict)

    @property
    def keys(self) -> list[tuple[str, str]]:
        return [(p, v) for p in self.stretches.pairs for v in self.stretches.values[1:]]

    def current(self) -> dict[tuple[str, str], Assessment]:
        """(pair, value) -> where it stands now."""
        out = {}
        base = self.stretches.values[0]
        for pair, value in self.keys:
            got = self.decided.get((pair, value))
            if got is None:
                by = self.stretches.samples[pair]
                got = assess(by[base], by[value], self.design, self.min_effect)
                if got.significant:
                    self.decided[(pair, value)] = got
            out[(pair, value)] = got
        return out

    @property
    def all_significant(self) -> bool:
        self.current()
        return all(k in self.decided for k in self.keys)

    @property
    def at_maximum(self) -> bool:
        return self.stretches.count() >= self.design.max_runs

    def new_lines(self) -> list[str]:
        """A line for each comparison with a new look (one more stretch on each side); one
        that is decided keeps its look, so it is said once."""
        lines = []
        for key, got in self.current().items():
            if got.n >= FIRST_LOOK and self._said.get(key) != got.n:
                lines.append(self.line(key, got))
            self._said[key] = got.n
        return lines

    def line(self, key: tuple[str, str], got: Assessment) -> str:
        pair, value = key
        return f"{pair}: {self.stretches.knob}={value} vs {self.stretches.values[0]}: " \
               f"{got.line()}"

    def summary(self) -> list[str]:
        return [self.line(k, a) for k, a in self.current().items()]


def verdicts_for(profile: Profile, alt: Alternation, stretch_s: float | None = None
                 ) -> Verdicts:
    """The verdicts of an alternation on the pairs its knob touches; a stretch lasts
    `alt.every` seconds, or `stretch_s` (a plan run's length) when that is None."""
    knob = profile.knob(alt.knob)
    pairs = tuple(p.label for p in profile.pairs if not knob.pairs or p.label in knob.pairs)
    stretches = Stretches(alt.knob, alt.values, pairs,
                          min_seconds=(alt.every or stretch_s or 0.0) / 2)
    return Verdicts(stretches, Design.make(alt.max_runs), profile.min_effect)


def plan_steps(alt: Alternation) -> list[PlanStep]:
    """Per run in plan mode: ABAB…, `max_runs` runs of each value."""
    n = len(alt.values)
    return [PlanStep(i, {alt.knob: alt.values[i % n]}, i // n + 1)
            for i in range(n * alt.max_runs)]


async def drive(set_knob: Callable[[str, str], object], alt: Alternation, verdicts: Verdicts,
                say: Callable[[str], None], duration: float | None = None,
                stop: asyncio.Event | None = None) -> str:
    """Hold each value `every` seconds, ABAB…, from the second value on (the caller set the
    first before starting); after each flip, the verdicts that have a new look are said.
    Returns why it stopped: `verdict`, `max-runs`, `time limit` or `stopped` (`stop` set:
    only ever between flips, so a flip under way always completes and the engine's
    phases and the hosts never disagree)."""
    assert alt.every is not None, "drive flips on a clock; plan mode runs plan_steps"
    loop = asyncio.get_running_loop()
    start = loop.time()
    flips = 0
    stop = stop or asyncio.Event()
    while True:
        left = None if duration is None else duration - (loop.time() - start)
        if left is not None and left <= alt.every / 2:
            if left > 0 and await _stopped_within(stop, left):
                return "stopped"
            return "time limit"
        if await _stopped_within(stop, alt.every if left is None else min(alt.every, left)):
            return "stopped"
        flips += 1
        result = set_knob(alt.knob, alt.values[flips % len(alt.values)])
        if asyncio.iscoroutine(result):
            await result
        for line in verdicts.new_lines():
            say(line)
        if alt.until_verdict and verdicts.all_significant:
            return "verdict"
        if verdicts.at_maximum:
            return "max-runs"


async def _stopped_within(stop: asyncio.Event, seconds: float) -> bool:
    """Wait `seconds`, or less when `stop` is set meanwhile; whether it was."""
    with contextlib.suppress(TimeoutError):
        await asyncio.wait_for(stop.wait(), seconds)
    return stop.is_set()


def stopped_line(why: str, verdicts: Verdicts, seconds: float) -> str:
    rounds = verdicts.stretches.count()
    what = {"verdict": "every comparison significant",
            "max-runs": f"--max-runs {verdicts.design.max_runs} reached",
            "time limit": "time limit"}.get(why, why)
    return f"alternation ended ({what}) after {rounds} stretch{'es' if rounds != 1 else ''} " \
           f"per value, {seconds:.0f} s"


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
    return Alternation(knob, tuple(values), every, DEFAULT_MAX_RUNS, until_verdict=True)


class LiveAlternation:
    """An alternation the console starts and stops on its controller (measuring continuously):
    the same flips, rule and verdicts as `abtui run --alternate`, in a task. `notify` is called
    when the verdicts have a new look and when the alternation ends."""

    def __init__(self, controller: Controller, alt: Alternation, min_effect: float,
                 notify: Callable[[], None] = lambda: None) -> None:
        self.controller = controller
        self.alt = alt
        self.verdicts = verdicts_for(controller.profile, alt)
        self.verdicts.min_effect = min_effect
        self.notify = notify
        self.why: str | None = None  # why it ended; None while it runs
        self._task: asyncio.Task[Any] | None = None
        self._stop = asyncio.Event()
        self._active = False
        controller.subscribe(self._on_event)

    def _on_event(self, event: Event) -> None:
        if self._active:
            self.verdicts.stretches(event)

    @property
    def running(self) -> bool:
        return self._task is not None and not self._task.done()

    async def start(self) -> None:
        """The base value set (a refusal raises KnobRefused), then flips on a clock."""
        self._active = True
        await self.controller.set_knob(self.alt.knob, self.alt.values[0])
        self._task = asyncio.get_running_loop().create_task(self._run())

    async def _run(self) -> None:
        try:
            self.why = await drive(self.controller.set_knob, self.alt, self.verdicts,
                                   lambda _line: self.notify(), stop=self._stop)
        except Exception as exc:  # a refused flip: it cannot go on
            self.why = f"error: {exc}"
        self._active = False
        self.notify()

    async def stop(self) -> None:
        """Stop flipping (the knob stays where it is); the verdicts so far remain. A flip
        under way is let finish first: cancelled halfway, the hosts could have the new value
        while the engine's phase never learnt it, and every later interval would be counted
        nowhere."""
        self._stop.set()
        if self._task is not None and not self._task.done():
            await self._task
        self._active = False

    def set_min_effect(self, pct: float) -> None:
        self.verdicts.min_effect = pct
        self.notify()

    def lines(self) -> list[str]:
        """The header and one line per pair and compared value, as the console shows them."""
        state = "running" if self._task is not None and self.why is None else \
            f"ended: {self.why or 'not started'}"
        head = (f"alternating {self.alt.knob} every {self.alt.every or 0:g} s "
                f"({self.verdicts.stretches.count()}/{self.alt.max_runs} stretches each, "
                f"min effect {self.verdicts.min_effect:g}%), {state}")
        return [head, *self.verdicts.summary()]
