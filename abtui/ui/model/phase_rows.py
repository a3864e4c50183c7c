"""The phase table's rows: one per configuration, each pair's intervals and run-level
segments under it, and the cells the table prints (throughput as every table defines it, runs,
Δ vs the base pair and the significance mark). Apart from abtui.ui.model.state (which fills the rows
from events) because the cells' statistics load lazily, off the way to the first frame; no
Textual.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Any

from abtui.core.numbers import Unit, rate_unit
from abtui.core.text import UNKNOWN
from abtui.reports.throughput import Segment, change_pct, configuration_rate, run_values
from abtui.ui.model.pair_state import Running


@dataclass(slots=True)
class PhaseRow:
    """One configuration's row: every pair's intervals under it and its run-level segments."""

    config: dict[str, str]
    per_pair: dict[str, Running] = field(default_factory=dict)  # every interval
    segments: dict[str, list[Segment]] = field(default_factory=dict)  # one per stretch


# Filled by the console from a background thread (abtui.reports.stats needs numpy, its test
# scipy.special's t distribution: ~1.5 s of imports that must not delay the first frame or stall
# the screen): "stats" -> the module, "scipy" -> True once scipy.special is imported;
# "want_scipy" asks.
LOADED: dict[str, Any] = {}


def significance(base: list[Segment], other: list[Segment]) -> str:
    """abtui.reports.stats' verdict on run-level values (abtui.reports.throughput: one per
    segment, a stretch of one run under this configuration; intervals within a run are not
    independent): '*' significant, '~' not, '' while there are too few segments to judge,
    '…' while scipy (the verdict's t distribution) is still loading (statistics are never
    imported on the way to the first frame)."""
    stats = LOADED.get("stats")
    if stats is None:
        return ""  # loads right after the first frame
    a, b = run_values(base), run_values(other)
    if min(len(a), len(b)) < stats.MIN_RUNS:
        return ""
    if not LOADED.get("scipy"):
        LOADED["want_scipy"] = True
        return "…"
    return "*" if stats.verdict(a, b).significant else "~"


def table_unit(rows: Iterable[PhaseRow], pairs: Iterable[str], units: str = "bits") -> Unit:
    """The one unit of the phase table's figures, so its rows and columns compare: the
    largest in which its smallest figure still reads ≥ 1 (abtui.core.numbers.rate_unit), in
    `units` (bits or bytes per second)."""
    labels = list(pairs)
    return rate_unit((configuration_rate(r.segments.get(p, [])) for r in rows for p in labels),
                     units)


def phase_cells(row: PhaseRow, pairs: Iterable[str], base_pair: str, unit: Unit) -> list[str]:
    """One cell per pair: the configuration's throughput in the table's `unit` as every table
    defines it (abtui.reports.throughput: the mean of its run-level values) to 3 significant
    digits, their number, then the Δ vs the base pair and the significance mark; UNKNOWN
    where the pair has no figure."""
    base = configuration_rate(row.segments.get(base_pair, []))
    cells = []
    for label in pairs:
        segments = row.segments.get(label, [])
        rate = configuration_rate(segments)
        if rate is None:
            cells.append(UNKNOWN)
            continue
        text = f"{unit.figure(rate)} n{len(run_values(segments))}"
        delta = change_pct(base, rate) if label != base_pair else None
        if delta is not None:
            mark = significance(row.segments.get(base_pair, []), segments)
            text += f" {delta:+.1f}%{mark}"
        cells.append(text)
    return cells
