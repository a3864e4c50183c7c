"""A bisection's table (`abtui bisect`): one row per step (candidate, its call, Δgeo with its
interval, blocks, boots) and the answer, as the run recorded them in its marks
(abtui.measure.bisect.search.Step.row; the answer's mark carries `answer`). The reports copy the
rows and never judge them again, so the table says exactly what the run said."""

from __future__ import annotations

import csv
import io
from collections.abc import Mapping
from typing import Any

from abtui.reports.formatting import bounded, md_table
from abtui.reports.stats import delta_text
from abtui.sessions.session import Session

# the row keys in the order every format prints them
COLUMNS = ("number", "candidate", "good", "verdict", "pct", "low", "high", "blocks", "boots",
           "pair", "seed", "interval_note")


def _rows(session: Session) -> tuple[list[dict[str, Any]], dict[str, Any] | None]:
    steps: list[dict[str, Any]] = []
    answer = None
    for mark in session.marks:
        row = mark.get("bisect")
        if not isinstance(row, Mapping):
            continue
        if "answer" in row:
            answer = dict(row)
        elif "plan" not in row:
            steps.append(dict(row))
    return steps, answer


def steps(session: Session) -> list[dict[str, Any]]:
    """The steps' rows, each with every key of COLUMNS (null where none was recorded)."""
    return [bounded({key: r.get(key) for key in COLUMNS}) for r in _rows(session)[0]]


def to_json(session: Session) -> dict[str, Any] | None:
    """`{"steps": [...], "answer", "line", "knob", "candidates"}`; None when none ran."""
    rows, answer = _rows(session)
    if not rows and answer is None:
        return None
    out: dict[str, Any] = {"steps": steps(session), "answer": None, "line": None}
    if answer is not None:
        out.update({k: answer.get(k) for k in ("answer", "line", "knob", "candidates")})
    return out


def _delta(r: Mapping[str, Any]) -> str:
    pct, low, high = r.get("pct"), r.get("low"), r.get("high")
    if not isinstance(pct, int | float):
        return "—"
    bounds = isinstance(low, int | float) and isinstance(high, int | float)
    return delta_text(pct, low if bounds else None, high if bounds else None)  # type: ignore[arg-type]


def _verdict(r: Mapping[str, Any]) -> str:
    """The step's verdict; a step the console's quit stopped says so (it is undecided)."""
    return f"{r.get('verdict', '?')}{' (stopped)' if r.get('stopped') is True else ''}"


def markdown(session: Session) -> list[str]:
    """The section a report leads with when a bisection ran; nothing otherwise."""
    rows, answer = _rows(session)
    if not rows and answer is None:
        return []
    header = ["step", "candidate", "vs good", "verdict", "Δgeo [interval]", "blocks", "boots"]
    body = [[str(r.get("number", "?")), str(r.get("candidate", "?")), str(r.get("good", "?")),
             _verdict(r), _delta(r), str(r.get("blocks", "—")), str(r.get("boots", 0))]
            for r in rows]
    line = answer.get("line") if answer is not None else "not finished (no answer recorded)"
    return ["## Bisect", "", f"**{line}**", "", md_table(header, body), "",
            "Each step alternated the candidate against the good one in blocks of four "
            "stretches; Δgeo is the live rule's (ratio of geometric means), its interval the "
            "repeated one at the step's share of α.", ""]


def to_csv(session: Session) -> str:
    """The steps as CSV, a header of COLUMNS (`abtui export --format csv --table bisect`)."""
    buf = io.StringIO()
    writer = csv.writer(buf, lineterminator="\n")
    writer.writerow(COLUMNS)
    for r in steps(session):
        writer.writerow(["" if r.get(k) is None else r.get(k) for k in COLUMNS])
    return buf.getvalue()
