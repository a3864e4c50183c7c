"""The `before-after` layout's first table (softirq crypto): per tunnel and direction, in the
profile's order, the base pair's and the other pairs' throughput (each pair titled with its
kernel release) and each one's speedup in percent.
"""

from __future__ import annotations

from typing import Any

from abtui.core.dimensions import DIRECTION, DIRECTION_NAMES
from abtui.reports.formatting import legend
from abtui.reports.naming import (
    base_pair,
    kernel_group,
    ordered,
    pairs_in_order,
    shown_value,
)
from abtui.reports.procedure.table import Cells, Row, Slot, first_table


def before_after_sections(cells: Cells, doc: dict[str, Any], base: str | None) -> list[str]:
    """The before-after table: per tunnel and direction, each pair and its speedup."""
    session = cells.session
    matrix = [m for m in (doc.get("plan") or {}).get("matrix") or [] if m != DIRECTION]
    keys = [*matrix, DIRECTION]
    bp = base_pair(session, doc, base)
    order = pairs_in_order(session, doc, bp)
    others = order[1:]
    groups = {p: cells.group(p, keys) for p in order}
    unit = cells.unit(groups)
    rows = []
    for combo in ordered([c for g in groups.values() for c in g], doc, keys, session):
        base_cell = groups.get(bp or "", {}).get(combo)
        label = [shown_value(session, k, v) for k, v in zip(matrix, combo, strict=False)]
        slots = [Slot(session, p, groups[p].get(combo), unit) for p in order]
        deltas = [cells.delta(base_cell, groups[p].get(combo)) for p in others]
        rows.append(Row([*label, DIRECTION_NAMES.get(combo[-1], combo[-1])], slots, deltas))
    return ["## Throughput per " + " and ".join([*matrix, "direction"]), "",
            first_table([*matrix, "direction"], [kernel_group(session, p) for p in order],
                        [f"speedup {p} vs {bp}" for p in others],
                        rows, unit), "",
            legend(bp or "the base pair", spread=False).replace("Δ: change", "speedup: change"),
            ""]
