"""A procedure's sections in the report: the session's `[report] layout` picks its first tables
(abtui.reports.procedure: one module per layout), then the lab's translations. The one entry
the report calls.
"""

from __future__ import annotations

import tomllib
from collections.abc import Callable
from typing import Any

from abtui.core.numbers import layout_units
from abtui.reports import stats
from abtui.reports.formatting import md_table
from abtui.reports.procedure.before_after import before_after_sections
from abtui.reports.procedure.builds import builds_sections
from abtui.reports.procedure.sweep import sweep_sections
from abtui.reports.procedure.table import Cells
from abtui.sessions.session import Session

# A profile's `[report] layout` -> the builder of its first tables (add a layout here)
LAYOUTS: dict[str, Callable[[Cells, dict[str, Any], str | None], list[str]]] = {
    "sweep": sweep_sections, "before-after": before_after_sections, "builds": builds_sections}


def layout_of(session: Session) -> tuple[str | None, dict[str, Any]]:
    """The `[report] layout` of the session's profile copy, and the whole profile table."""
    try:
        doc = tomllib.loads(session.profile_text)
    except tomllib.TOMLDecodeError:
        return None, {}
    report = doc.get("report")
    layout = report.get("layout") if isinstance(report, dict) else None
    return (layout if isinstance(layout, str) else None), doc


def sections(session: Session, base: str | None,
             seen: list[stats.Delta | None] | None = None, units: str | None = None
             ) -> list[str]:
    """Markdown lines of the procedure's sections (none without a layout), translations.
    Every Δ printed is appended to `seen` (the report's notes explain a missing interval).
    `units`: bits or bytes per second; None: the layout's own (LAYOUT_UNITS, else bits)."""
    layout, doc = layout_of(session)
    out: list[str] = []
    builder = LAYOUTS.get(layout or "")
    if builder is not None:
        own = units or layout_units(layout)
        out += builder(Cells(session, seen if seen is not None else [], own), doc, base)
    if session.translations:
        out += ["## Lab translations", "",
                md_table(["what", "profile", "lab", "why"],
                         [[str(t.get("subject", "")), str(t.get("original", "")),
                           str(t.get("lab", "")), str(t.get("why", ""))]
                          for t in session.translations]), ""]
    return out

