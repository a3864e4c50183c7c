"""An alternation's answer, the table a report leads with: per pair and value compared, the Δ
of the live rule with its interval, the verdict, the blocks it stands on and the order's seed.

The rows are the live rule's own (abtui.measure.alternate's `Verdicts.table()`), recorded with
the alternation's end mark (`events.Mark.verdicts`); the reports copy them and never compute
them again, so the table says exactly what the run said. Its Δ is the live rule's, named by
the row (`Δgeo`: the ratio of geometric means, paired by block), not the cells' Δ of plain
means. A session with several alternations shows the last one's.

Each row names its design (`blocks`: every pair the same value, each pair judged alone;
`crossover`: two pairs in mirrored orders judged as one, its pair `A+B`; rows recorded before
abtui had designs ran blocks). A build knob's rows (kernel, module) also give each value's
boots and the boot-to-boot spread beside the within-boot spread (abtui.measure.boots).
"""

from __future__ import annotations

import csv
import html
import io
import math
from collections.abc import Mapping
from typing import Any

from abtui.reports.formatting import bounded, md_table
from abtui.sessions.session import Session

# (row key, column name) in the order every format prints them
COLUMNS = (("pair", "pair"), ("knob", "knob"), ("value", "value"), ("base", "vs"),
           ("delta", "Δ of"), ("pct", "Δ %"), ("low", "low %"), ("high", "high %"),
           ("verdict", "verdict"), ("blocks", "blocks"), ("dead", "dead stretches"),
           ("seed", "seed"), ("design", "design"), ("boots", "boots"),
           ("base_boots", "base boots"), ("boot_sd", "boot-to-boot sd %"),
           ("within_sd", "within-boot sd %"), ("interval_note", "interval note"))
DEFAULT_DELTA = "Δgeo"  # the live rule's Δ when a row does not name it
DEFAULT_DESIGN = "blocks"  # the only design before rows named theirs


def _design(row: Mapping[str, Any]) -> str:
    return str(row.get("design") or DEFAULT_DESIGN)


def verdicts(session: Session) -> list[dict[str, Any]]:
    """The last alternation's rows (empty when the session ran none, or an older abtui
    recorded its verdict as text only)."""
    for mark in reversed(session.marks):
        rows = mark.get("verdicts")
        if isinstance(rows, list) and rows:
            return [{**r, "design": _design(r)} for r in rows if isinstance(r, Mapping)]
    return []


def _text(value: Any) -> str:
    if value is None or value == "":
        return "—"
    if isinstance(value, float):
        return f"{value:+.1f}"
    return str(value)


def _delta_cell(row: Mapping[str, Any]) -> str:
    """`Δgeo -87.2% [-89.3, -84.8]`: the figure once, with its interval and its name."""
    name = row.get("delta") or DEFAULT_DELTA
    pct, low, high = row.get("pct"), row.get("low"), row.get("high")
    if not isinstance(pct, int | float):
        return f"{name} —"
    text = f"{name} {pct:+.1f}%"
    if isinstance(low, int | float) and isinstance(high, int | float) and low > -100.0 \
            and math.isfinite(high):
        return f"{text} [{low:+.1f}, {high:+.1f}]"
    if low is not None or high is not None:  # [-100, inf] (JSON: null) says nothing yet
        return f"{text} (interval not bounded yet)"
    return text


def _spread(value: Any) -> str:
    return f"{value:.1f}" if isinstance(value, int | float) else "—"


def _boots(row: Mapping[str, Any]) -> list[str]:
    """A build knob's cells: boots of the value / of the base, the two spreads."""
    return [f"{_text(row.get('boots'))} / {_text(row.get('base_boots'))}",
            _spread(row.get("boot_sd")), _spread(row.get("within_sd"))]


def table(rows: list[dict[str, Any]]) -> tuple[list[str], list[list[str]]]:
    """The rows as a table's header and cells (Markdown and HTML alike); a column of dead
    stretches only when some comparison had one, a build knob's boots and spreads only when
    its rows have them."""
    dead = any(r.get("dead") for r in rows)
    boots = any(r.get("boots") is not None for r in rows)
    header = ["pair", "design", "compared", "Δ [95 % interval]", "verdict", "blocks",
              *(["dead stretches"] if dead else []),
              *(["boots (value / base)", "boot-to-boot sd %", "within-boot sd %"]
                if boots else []), "seed"]
    body = [[_text(r.get("pair")), _design(r), f"{r.get('knob', '?')}={r.get('value', '?')} "
             f"vs {r.get('base', '?')}", _delta_cell(r), _text(r.get("verdict")),
             _text(r.get("blocks")), *([_text(r.get("dead"))] if dead else []),
             *(_boots(r) if boots else []), _text(r.get("seed"))] for r in rows]
    return header, body


def markdown(session: Session) -> list[str]:
    """The section a report leads with; nothing without an alternation's rows."""
    rows = verdicts(session)
    if not rows:
        return []
    return ["## Alternation verdict", "", md_table(*table(rows)), "",
            f"Δ: the live rule's ({rows[0].get('delta') or DEFAULT_DELTA}: the ratio of "
            "geometric means of each value's stretches, paired by block), as the run said "
            "it; replay the order with `--seed`."
            + (" Crossover: the two pairs ran mirrored orders (the other value in every "
               "stretch) and the Δ is the mean of their block log ratios."
               if any(_design(r) == "crossover" for r in rows) else ""), ""]


def to_csv(session: Session) -> str:
    """The rows as CSV, a header of COLUMNS' names (`abtui export --format csv --table
    verdicts`)."""
    buf = io.StringIO()
    writer = csv.writer(buf, lineterminator="\n")
    writer.writerow([key for key, _ in COLUMNS])
    for r in map(bounded, verdicts(session)):
        writer.writerow(["" if r.get(key) is None else r.get(key) for key, _ in COLUMNS])
    return buf.getvalue()


def to_json(session: Session) -> list[dict[str, Any]]:
    """The rows, each with every key of COLUMNS (null where the run recorded none)."""
    return [{key: r.get(key) for key, _ in COLUMNS} for r in map(bounded, verdicts(session))]


def to_html(session: Session) -> str:
    """An HTML table of the rows (the chart page leads with it); empty without them."""
    rows = verdicts(session)
    if not rows:
        return ""
    header, body = table(rows)

    def tr(cells: list[str], tag: str) -> str:
        return "<tr>" + "".join(f"<{tag}>{html.escape(c)}</{tag}>" for c in cells) + "</tr>\n"

    return ("<h2>Alternation verdict</h2>\n<table>\n" + tr(header, "th")
            + "".join(tr(row, "td") for row in body) + "</table>\n")
