"""What the console's bisect panel shows, folded from a session's events alone (so a live
bisection and a replayed one show alike): the plan's mark names the candidates, each step's
mark its call (abtui.measure.bisect.search.Step rows), the BisectLook events the step under way, the
answer's mark the answer. The lines are short: an 80-column console shows them whole.
No Textual here: this is domain code."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from abtui.core.events import BisectLook
from abtui.measure.bisect.search import BAD, GOOD, UNDECIDED, Bisection, Step
from abtui.reports import stats

# beyond this many candidates, the untested ones outside the range left are one line each run
SHOWN_WHOLE = 7


class BisectBoard:
    """One bisection's state as its events tell it; `lines()` for the panel."""

    def __init__(self, plan: Mapping[str, Any]) -> None:
        self.knob = str(plan.get("knob", "?"))
        self.bisection = Bisection(tuple(str(c) for c in plan.get("candidates") or ()),
                                   float(plan.get("threshold") or 0.0))
        self.max_blocks = plan.get("max_blocks")
        self.calls: dict[int, Step] = {}  # each candidate's last call, by its index
        self.look: BisectLook | None = None  # the step under way
        self.answer: str | None = None  # the answer's line once recorded
        self.stopped: str | None = None  # the stop's line, when stopped before an answer

    @classmethod
    def of(cls, plan: object) -> BisectBoard | None:
        """A board for a recorded plan; None when it is not one (a damaged session)."""
        if not isinstance(plan, Mapping):
            return None
        try:
            return cls(plan)
        except (TypeError, ValueError):
            return None

    def step(self, row: Mapping[str, Any], text: str) -> None:
        """A step's mark (resumed ones too), a stop's, or the answer's."""
        if "answer" in row:
            self.answer, self.look = str(row.get("line") or row.get("answer")), None
            return
        try:
            step = Step.from_row(row)
        except ValueError:
            return  # a damaged record: nothing to show of it
        self.calls[step.index] = step
        self.look = None
        if row.get("stopped") and "resumed" not in row:
            self.stopped = text
            return
        try:
            if "resumed" in row:
                self.bisection.replay([row])
            else:
                self.bisection.record(step)
        except ValueError:
            pass  # a step this bisection would not take: shown, the range left as it was

    def lines(self) -> list[str]:
        b = self.bisection
        head = f"bisecting {self.knob}, {len(b.candidates)} candidates: bad when worse by " \
               f"{b.threshold:g} % or more (α {b.alpha:g} over ≤ {b.budget} steps)"
        out = [head, *self._candidates()]
        if self.look is not None:
            out.append(self._look_line(self.look))
        if self.answer is not None:
            out.append(self.answer)
        else:
            out.append(f"range left: {self._range()}")
            if self.stopped is not None:
                out.append("stopped: `abtui bisect … --resume` with this session goes on")
        return out

    def _range(self) -> str:
        b = self.bisection
        left = range(b.lo + 2, b.hi + 2)  # the candidates' numbers, from 1
        many = f"{len(left)} candidate{'s' if len(left) != 1 else ''}"
        return f"{left[0]}" + (f"–{left[-1]}" if len(left) > 1 else "") + f" ({many})"

    def _candidates(self) -> list[str]:
        b = self.bisection
        width = max(len(c) for c in b.candidates)
        rows: list[str] = []
        hidden = 0
        for i, name in enumerate(b.candidates):
            now = self.look is not None and self.look.index == i
            tested = i in self.calls
            if not (now or tested or i in (0, len(b.candidates) - 1)
                    or b.lo < i <= b.hi or len(b.candidates) <= SHOWN_WHOLE):
                hidden += 1
                continue
            if hidden:
                rows.append(f"   … {hidden} untested")
                hidden = 0
            rows.append(f"{i + 1:>2} {name:<{width}}  {self._call(i, now)}")
        return rows

    def _call(self, i: int, now: bool) -> str:
        if now:
            return "◀ now"
        step = self.calls.get(i)
        if step is not None:
            word = {GOOD: "good", BAD: "bad", UNDECIDED: "undecided"}[step.verdict]
            return f"{word:<9} {step.delta_text()}, {step.blocks} bl."
        if i == 0:
            return "good (given)"
        if i == len(self.bisection.candidates) - 1:
            return "untested (given bad)"
        return "untested"

    def _look_line(self, look: BisectLook) -> str:
        most = f"/{look.max_blocks}" if look.max_blocks else ""
        if look.pct is None:
            delta = "Δgeo —"
        else:
            ends = "" if look.low is not None else " (not bounded yet)"
            delta = f"Δgeo {stats.Delta(look.pct, look.low, look.high)}{ends}"
        so_far = f"{look.call} so far" if look.call else "no call yet"
        return f"step {look.number}: {look.index + 1} vs {self._number(look.good)}, " \
               f"{look.blocks}{most} blocks, {delta}, {so_far}"

    def _number(self, candidate: str) -> str:
        c = self.bisection.candidates
        return str(c.index(candidate) + 1) if candidate in c else candidate
