"""Bisection: which candidate of an ordered list (good first, bad last) made things worse.

Each step compares one candidate against the good one with the alternation's own rule
(abtui.measure.alternate: blocks in a random order, the sequential verdict of
abtui.reports.sequential, its repeated confidence interval valid at whatever look it stops)
and calls it

- **bad**: worse by at least the threshold (the interval lies wholly at or beyond −threshold,
  and the rule's significance, randomisation check included, agrees);
- **good**: not worse by the threshold (the interval's worse end lies short of −threshold);
- **undecided**: neither by `--max-blocks` blocks. An undecided step is never turned into a
  good or a bad one: the bisection stops there and reports the range it could not split.

The range is [lo, hi]: lo known good, hi the first bad candidate so far. Until a step has
called hi bad, the bad end is only the user's word, so when the range has narrowed to two
neighbours with hi never judged, hi itself is compared (the confirmation): called good, no
candidate differs and no first bad is named.

Error control across the steps (Bonferroni): a bisection of n candidates takes at most
⌈log₂(n − 1)⌉ steps to narrow the range, and one more to confirm the bad end; each step is
judged at α / that many, so the chance that any step's call is wrong (bad when the candidate
is not worse by the threshold, good when it is) is at most α for the whole bisection. If the
effect grows with the candidates' order, every call right names the true first bad.

The step's call is made from the alternation's assessments (`call`); the simulation of its
error rates is tests/bench/bench_bisect.py (docs/bisect.md has the figures).
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import asdict, dataclass, field
from typing import Any

from abtui.core.text import visible
from abtui.reports import stats
from abtui.reports.sequential import FIRST_LOOK, Assessment

GOOD, BAD, UNDECIDED = "good", "bad", "undecided"
# the answers a bisection ends with
FIRST_BAD, NONE_DIFFERS = "first bad", "no candidate differs"


def family_steps(n: int) -> int:
    """The most steps a bisection of `n` candidates (n ≥ 2) can take: ⌈log₂(n − 1)⌉ to narrow
    the range to two neighbours, and one to confirm the bad end."""
    if n < 2:
        raise ValueError("a bisection needs a good and a bad candidate")
    return math.ceil(math.log2(n - 1)) + 1


def bounded(d: stats.Delta | None) -> tuple[float, float] | None:
    """The interval's ends when it has two finite ones (an unbounded look says nothing)."""
    if d is None or d.low is None or d.high is None:
        return None
    if not math.isfinite(d.high) or (d.low <= -99.95 and d.high >= 1e6):
        return None
    return d.low, d.high


def pair_call(got: Assessment, threshold: float) -> str | None:
    """One pair's call from its look: BAD, GOOD, or None (not yet). Worse is a negative Δ
    (throughput, or 1 / RTT: the stretches say which)."""
    ends = bounded(got.delta) if got.n >= FIRST_LOOK else None
    if ends is None:
        return None
    low, high = ends
    if high <= -threshold and got.significant:
        return BAD
    if low > -threshold:
        return GOOD
    return None


def call(looks: Sequence[Assessment], threshold: float) -> str | None:
    """A step's call from each judged pair's look: BAD when one pair is worse by the
    threshold, GOOD when every pair is not, None while neither (the step goes on)."""
    calls = [pair_call(a, threshold) for a in looks]
    if BAD in calls:
        return BAD
    if calls and all(c == GOOD for c in calls):
        return GOOD
    return None


@dataclass(frozen=True, slots=True)
class Step:
    """One step's record: the candidate compared with the good one, its call, the Δ with its
    interval (the pair that decided it: the worst), the blocks and boots it took."""

    number: int
    candidate: str
    index: int
    verdict: str
    pct: float | None = None
    low: float | None = None
    high: float | None = None
    blocks: int = 0
    boots: int = 0
    pair: str = ""
    seed: int | None = None

    def row(self, good: str) -> dict[str, Any]:
        """The step as the session records it and the reports print it."""
        return {"good": good, **asdict(self)}

    @classmethod
    def from_row(cls, row: Mapping[str, Any]) -> Step:
        """A recorded step back (`row`); ValueError naming the field that is not one."""
        kinds: dict[str, tuple[type, ...]] = {
            "number": (int,), "candidate": (str,), "index": (int,), "verdict": (str,),
            "pct": (int, float, type(None)), "low": (int, float, type(None)),
            "high": (int, float, type(None)), "blocks": (int,), "boots": (int,),
            "pair": (str,), "seed": (int, type(None))}
        for key, kind in kinds.items():
            if not isinstance(row.get(key), kind) or isinstance(row.get(key), bool):
                raise ValueError(f"a recorded step's {key!r} is {_brief(row.get(key))}")
        if row["verdict"] not in (GOOD, BAD, UNDECIDED):
            raise ValueError(f"a recorded step's verdict is {_brief(row['verdict'])}")
        for key, least in (("number", 1), ("index", 0), ("blocks", 0), ("boots", 0)):
            if row[key] < least:
                raise ValueError(f"a recorded step's {key!r} is {row[key]}, less than {least}")
        for key in ("pct", "low", "high"):
            if row[key] is not None and not (math.isfinite(row[key]) and row[key] > -100):
                raise ValueError(f"a recorded step's {key!r} is {row[key]!r}, not a change "
                                 "in percent")
        if row["low"] is not None and row["high"] is not None and row["low"] > row["high"]:
            raise ValueError(f"a recorded step's interval is [{row['low']}, {row['high']}]: "
                             "its low end above its high end")
        return cls(**{key: row[key] for key in kinds})

    def decided_by(self) -> str:
        """` (pair A decided)`: the pair whose look made the call and whose Δ is shown ("" for
        a step that recorded none)."""
        return f" (pair {self.pair} decided)" if self.pair else ""

    def delta_text(self) -> str:
        """`Δgeo -87.2% [-93.1, -80.4]` (the interval's ends as the alternation prints them)."""
        if self.pct is None:
            return "Δgeo —"
        ends = "" if self.low is not None else " (interval not bounded yet)"
        return f"Δgeo {stats.Delta(self.pct, self.low, self.high)}{ends}"


def _brief(value: object) -> str:
    """A recorded value, as a message quotes it: spelled out, cut to 60 characters."""
    text = visible(repr(value))
    return text if len(text) <= 60 else text[:59] + "…"


def blocks_needed(step: Step, threshold: float) -> int | None:
    """Roughly how many blocks in all would split an undecided step at the spread it saw:
    the interval's half-width shrinks as 1/√blocks, and it must come within the distance
    from its Δ to −threshold (None when the Δ sits on the threshold, or no interval)."""
    if step.pct is None or step.low is None or step.high is None or step.blocks < 1:
        return None
    if step.low <= -100 or not math.isfinite(step.high) or threshold >= 100:
        return None
    mid, low, high = (math.log1p(x / 100) for x in (step.pct, step.low, step.high))
    gap = abs(mid - math.log1p(-threshold / 100))
    half = (high - low) / 2
    if gap <= 0 or half <= 0:
        return None
    return max(step.blocks + 1, math.ceil(step.blocks * (half / gap) ** 2))


def worst(looks: dict[str, Assessment], threshold: float) -> tuple[str, Assessment] | None:
    """The pair that decides a step (the one called bad, else the one furthest from good),
    and its look."""
    if not looks:
        return None

    def key(item: tuple[str, Assessment]) -> tuple[int, float]:
        a = item[1]
        c = pair_call(a, threshold)
        low = a.delta.low if a.delta is not None and a.delta.low is not None else -math.inf
        return (0 if c == BAD else 1 if c is None else 2, low)

    return min(looks.items(), key=key)


@dataclass(slots=True)
class Bisection:
    """The range left and the steps so far; `next` says which candidate to compare."""

    candidates: tuple[str, ...]
    threshold: float
    alpha: float = stats.ALPHA
    steps: list[Step] = field(default_factory=list)
    lo: int = 0
    hi: int = -1
    confirmed: bool = False  # a step has called `hi` bad
    clean: bool = False  # the bad end itself was called good
    retried: int = 0  # undecided steps of an earlier run, judged again (each spent its α)

    def __post_init__(self) -> None:
        if len(self.candidates) < 2:
            raise ValueError("a bisection needs a good and a bad candidate")
        if self.hi < 0:
            self.hi = len(self.candidates) - 1

    @property
    def good(self) -> str:
        return self.candidates[0]

    @property
    def budget(self) -> int:
        """The steps α is split over."""
        return family_steps(len(self.candidates))

    @property
    def step_alpha(self) -> float:
        return self.alpha / self.budget

    @property
    def judged(self) -> int:
        """Steps judged so far, the undecided ones of an earlier run included."""
        return len(self.steps) + self.retried

    def replay(self, rows: Sequence[Mapping[str, Any]]) -> None:
        """The steps an earlier run of this bisection recorded (their rows, in order): their
        calls narrow the range again; an undecided one is judged again, its α counted in
        `retried` (it was spent: the bound grows by one step's share). ValueError when a row
        is not the step this bisection takes next."""
        for row in rows:
            step = Step.from_row(row)
            want = self.next()
            if want is None or step.index != want or step.candidate != self.candidates[want]:
                nothing = "nothing more" if want is None else _brief(self.candidates[want])
                raise ValueError(f"recorded step {step.number} compared {_brief(step.candidate)}; "
                                 f"this bisection compares {nothing} next")
            if step.verdict == UNDECIDED:
                self.retried += 1
            else:
                self.record(step)

    @property
    def stalled(self) -> Step | None:
        """The undecided step that stopped the bisection, if one did."""
        return next((s for s in self.steps if s.verdict == UNDECIDED), None)

    def next(self) -> int | None:
        """The index of the candidate the next step compares, None when it is done."""
        if self.stalled is not None or self.clean:
            return None
        if self.hi - self.lo > 1:
            return (self.lo + self.hi) // 2
        return None if self.confirmed else self.hi

    def record(self, step: Step) -> None:
        """A step's call narrows the range (an undecided one stops the bisection)."""
        if len(self.steps) >= self.budget:
            raise ValueError(f"more steps than the {self.budget} α was split over")
        self.steps.append(step)
        if step.verdict == BAD:
            self.hi, self.confirmed = step.index, True
        elif step.verdict == GOOD:
            if step.index == self.hi:
                self.clean = True
            else:
                self.lo = step.index

    @property
    def answer(self) -> str | None:
        """FIRST_BAD, NONE_DIFFERS, UNDECIDED, or None while it goes on."""
        if self.stalled is not None:
            return UNDECIDED
        if self.clean:
            return NONE_DIFFERS
        if self.confirmed and self.hi - self.lo == 1:
            return FIRST_BAD
        return None

    def error_text(self) -> str:
        """`family-wise error ≤ 5 % over 3 steps`; with steps judged again after a resume,
        the bound their spent α adds (Bonferroni over every judgement)."""
        k = self.budget
        steps = f"{k} step{'s' if k != 1 else ''}"
        if not self.retried:
            return f"family-wise error ≤ {self.alpha * 100:g} % over {steps}"
        bound = self.alpha * (k + self.retried) / k * 100
        return f"family-wise error ≤ {bound:.3g} % over {steps}, {self.retried} of them " \
               "judged again after a resume"

    def result_line(self) -> str:
        """`first bad: X (family-wise error ≤ 5 % over 3 steps)`, `no candidate differs: …`,
        or `undecided: …` with the range left and what would split it."""
        c, fwe = self.candidates, self.error_text()
        match self.answer:
            case "first bad":
                return f"first bad: {c[self.hi]} ({fwe}); last good: {c[self.lo]}; " \
                       f"worse by {self.threshold:g} % or more"
            case "no candidate differs":
                return f"no candidate differs: {c[-1]} is not worse than {self.good} by " \
                       f"{self.threshold:g} % ({fwe})"
            case "undecided":
                return f"undecided: the first bad is one of {self.range_text()}; " \
                       f"{self.hint()} ({fwe})"
        return f"not finished: the first bad is one of {self.range_text()}"

    def range_text(self) -> str:
        """The candidates the first bad may be, e.g. `B … D (3 candidates)`."""
        left = self.candidates[self.lo + 1:self.hi + 1]
        if len(left) == 1:
            return f"{left[0]} (1 candidate{'' if self.confirmed else ', not confirmed bad'})"
        return f"{left[0]} … {left[-1]} ({len(left)} candidates)"

    def hint(self) -> str:
        """What the undecided step would need: more blocks, or a threshold its interval
        already decides at."""
        s = self.stalled
        assert s is not None
        what = [f"step {s.number} ({s.candidate} vs {self.good}) was undecided after "
                f"{s.blocks} block{'s' if s.blocks != 1 else ''}: {s.delta_text()}"]
        need = blocks_needed(s, self.threshold)
        if s.pct is None:
            what.append("no complete block had every stretch measured (the step's lines say "
                        "which were left out and why): more blocks, or steadier hosts")
        elif s.low is None:
            what.append("its interval was not bounded yet (no step can call anything before "
                        "its 3rd block, its 4th when α is split further): more blocks")
        elif need is not None:
            what.append(f"at the spread seen about {need} blocks in all would split it "
                        f"(--max-blocks {need})")
        else:
            what.append("its Δ sits on the threshold: more blocks may not split it")
        if s.low is not None and s.low > -100:
            what.append(f"a threshold above {-s.low:.1f} % would call it good")
        if s.high is not None and s.high < 0:
            what.append(f"one of {-s.high:.1f} % or less could call it bad")
        return "; ".join(what)
