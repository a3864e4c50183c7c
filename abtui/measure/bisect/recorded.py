"""What a session recorded of a bisection, checked before a `--resume` trusts it: the plan's
fields of the right type and range, the answer one of the three, every value quoted in a
message cut short (a recorded plan of 200 000 candidates must not make a 2 MB line)."""

from __future__ import annotations

import math
from collections.abc import Mapping
from typing import Any

from abtui.core.text import visible
from abtui.measure.bisect.search import FIRST_BAD, NONE_DIFFERS, UNDECIDED

SHOWN = 60  # characters of a recorded value a message quotes
MAX_LINE = 2000  # characters of a recorded answer line printed back
# the plan's fields a resume must match, and what each must be
PLAN_FIELDS = ("knob", "candidates", "threshold", "metric", "design")


def brief(value: object) -> str:
    """`value`'s repr, control characters spelled out, cut to SHOWN characters (saying how
    many items a long list had)."""
    text = visible(repr(value))
    if len(text) <= SHOWN:
        return text
    more = f" ({len(value)} items)" if isinstance(value, list | tuple) else ""
    return text[: SHOWN - 1] + "…" + more


def _kind_problem(key: str, value: object) -> str | None:
    """Why the recorded plan's `key` is not a value of its kind, or None."""
    if key == "threshold":
        if isinstance(value, bool) or not isinstance(value, int | float):
            return "is not a number"
        return None if math.isfinite(value) and 0 < value < 100 else \
            "is not a percentage between 0 and 100"
    if key == "candidates":
        if not isinstance(value, list) or not all(isinstance(v, str) for v in value):
            return "is not a list of values"
        return None
    return None if isinstance(value, str) else "is not a word"


def plan_problem(recorded: Mapping[str, Any], mine: Mapping[str, Any]) -> str | None:
    """Why the recorded plan is not this bisection's (one line), or None."""
    was = {"design": "blocks", **recorded}  # recorded before bisections had a design
    for key in PLAN_FIELDS:
        why = _kind_problem(key, was.get(key))
        if why is not None:
            return f"its bisection's {key} ({brief(was.get(key))}) {why}"
    for key in PLAN_FIELDS:
        if was[key] == mine[key]:
            continue
        if key == "candidates":
            old, new = was[key], mine[key]
            if len(old) != len(new):
                return (f"its bisection had {len(old)} candidates, not {len(new)}; give the "
                        "same")
            i = next(i for i, (a, b) in enumerate(zip(old, new, strict=True)) if a != b)
            return (f"its bisection's candidate {i + 1} was {brief(old[i])}, not "
                    f"{brief(new[i])}; give the same")
        return f"its bisection's {key} was {brief(was[key])}, not {brief(mine[key])}; give the same"
    return None


def answer_of(row: Mapping[str, Any]) -> tuple[str, str]:
    """A recorded answer mark's answer and line; ValueError naming what is not one."""
    answer, line = row.get("answer"), row.get("line", row.get("answer"))
    if not isinstance(answer, str) or answer not in (FIRST_BAD, NONE_DIFFERS, UNDECIDED):
        raise ValueError(f"its bisection's answer is {brief(answer)}, not one of "
                         f"{FIRST_BAD!r}, {NONE_DIFFERS!r}, {UNDECIDED!r}")
    if not isinstance(line, str) or not line.strip() or len(line) > MAX_LINE:
        raise ValueError(f"its bisection's answer line is {brief(line)}, not one line of "
                         f"at most {MAX_LINE} characters")
    return answer, visible(line)
