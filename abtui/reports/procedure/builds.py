"""The `builds` layout's first table (WireGuard GRO): per build (its label and kernel release),
throughput and Δ vs the first, then iperf3's own `[SUM]` sender (with retransmits) and
receiver figures.
"""

from __future__ import annotations

import math
from typing import Any

from abtui.reports import samples
from abtui.reports.formatting import legend
from abtui.reports.naming import base_pair, kernel_group, pairs_in_order
from abtui.reports.procedure.table import Cells, Measure, Row, Slot, first_table, titled


def _sum_lines(s: Slot) -> list[str]:
    """iperf3's own [SUM] summary figures of a build's runs (means over its runs): sender
    bitrate, retransmits, receiver bitrate. Only runs wholly within the cell's phases: a
    continuous run that crossed a knob change summarizes more than the cell (`—` then)."""
    runs = [r for r in s.session.runs_of(s.pair) if r.summary and r.status in ("ok", "stopped")
            and (s.cell is None or samples.within(s.session, r, s.cell.phases))]

    def mean(key: str) -> float | None:
        xs = [float(r.summary[key]) for r in runs if r.summary
              and isinstance(r.summary.get(key), int | float)
              and not isinstance(r.summary.get(key), bool)]
        return math.fsum(xs) / len(xs) if xs else None

    retr = mean("retransmits")
    return [s.unit.figure(mean("sender_bits_per_second")),
            "—" if retr is None else f"{retr:.0f}",
            s.unit.figure(mean("receiver_bits_per_second"))]


SUM_LINES = Measure(
    headers=lambda title, unit: [titled(title, f"[SUM] sender ({unit.name})"), "retransmits",
                                 titled(title, f"[SUM] receiver ({unit.name})")],
    cells=_sum_lines)


def builds_sections(cells: Cells, doc: dict[str, Any], base: str | None) -> list[str]:
    """The builds table: per build, throughput, Δ vs the first and the [SUM] lines."""
    session = cells.session
    first = base_pair(session, doc, base)
    order = pairs_in_order(session, doc, first)
    groups = {p: cells.group(p, []) for p in order}
    unit = cells.unit(groups)
    base_cell = groups.get(first or "", {}).get(())
    rows = [Row([kernel_group(session, p)], [Slot(session, p, groups[p].get(()), unit)],
                ["-" if p == first else cells.delta(base_cell, groups[p].get(()))])
            for p in order]
    return ["## Throughput per build", "",
            first_table(["build"], [""], [f"Δ vs {first}"], rows, unit, [SUM_LINES]), "",
            legend(first or "the first build", spread=False) + " With parallel streams (-P), each "
            "interval is their [SUM]. [SUM] sender, retransmits, receiver: iperf3's own "
            "summary lines, the mean over the build's runs.", ""]
