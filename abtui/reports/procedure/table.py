"""The first-table builder every procedure layout shares: a session's cells grouped by knob
values (`Cells`), a pair's cell in a row (`Slot`), the column groups shown per slot (`Measure`,
`MEASURES`) and `first_table`, which lays rows of slots out as one Markdown table. Apart from
the layouts so a column group added here shows in every layout's first table.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field

from abtui.core.numbers import Unit
from abtui.reports import cpu, stats
from abtui.reports.formatting import fmt_cell, fmt_compare, md_table, rate_unit_of
from abtui.reports.naming import text_of
from abtui.sessions.records import Phase, Run
from abtui.sessions.session import Session


class Cells:
    """A session's cells grouped by some of their knobs' values, the Δ printed so far, and
    the units the report shows rates in."""

    def __init__(self, session: Session, seen: list[stats.Delta | None],
                 units: str = "bits") -> None:
        self.session = session
        self.seen = seen
        self.units = units

    def phases(self, pair: str, keys: Sequence[str]) -> dict[tuple[str, ...], list[Phase]]:
        """The pair's phases grouped by their values of `keys` (`—` where unset)."""
        out: dict[tuple[str, ...], list[Phase]] = {}
        for ph in self.session.phases_of(pair):
            out.setdefault(tuple(text_of(ph.config.get(k, "—")) for k in keys), []).append(ph)
        return out

    def group(self, pair: str, keys: Sequence[str]) -> dict[tuple[str, ...], stats.Cell]:
        """The pair's phases grouped by their values of `keys`, as cells."""
        return {key: stats.cell(self.session, pair, ", ".join(key), group)
                for key, group in self.phases(pair, keys).items()}

    def delta(self, base: stats.Cell | None, other: stats.Cell | None) -> str:
        """fmt_compare, with the Δ noted for the report's notes."""
        return fmt_compare(base, other, seen=self.seen)

    def unit(self, groups: dict[str, dict[tuple[str, ...], stats.Cell]]) -> Unit:
        return rate_unit_of((c for g in groups.values() for c in g.values()), units=self.units)


@dataclass(frozen=True, slots=True)
class Slot:
    """One pair's cell in a row of a first table (None: that pair never ran it)."""

    session: Session
    pair: str
    cell: stats.Cell | None
    unit: Unit


@dataclass(frozen=True, slots=True)
class Measure:
    """A column group shown for every slot of a first table: its headers (given the slot's
    title, "" for a table with one slot per row, and the table's unit) and its cells."""

    headers: Callable[[str, Unit], list[str]]
    cells: Callable[[Slot], list[str]]
    # whether a session's tables show this group at all (CPU: only sessions that have it)
    shown: Callable[[Session], bool] = lambda session: True
    # the caveat its cells need, printed right under the table (CPU: a shared machine's)
    note: Callable[[Session, list[Slot]], list[str]] = lambda session, slots: []


def titled(title: str, what: str) -> str:
    """A column header under a slot's title (the bare header for a one-slot table)."""
    return f"{title} {what}" if title else what


THROUGHPUT = Measure(
    headers=lambda title, unit: [f"{title} ({unit.name})" if title else unit.name],
    cells=lambda s: [fmt_cell(s.cell, s.unit.div, spread=False)])

CPU = Measure(
    headers=lambda title, unit: [titled(title, "sender CPU %"),
                                 titled(title, "receiver CPU %")],
    cells=lambda s: cpu.slot_cells(s.session, s.pair, s.cell.phases if s.cell else None),
    shown=cpu.has_cpu,
    note=lambda session, slots: cpu.shared_note(
        session, [cpu.CpuCell(session, s.pair, s.cell.phases) for s in slots if s.cell]))

# The column groups every layout's first table shows per pair, left to right (add one here).
MEASURES: list[Measure] = [THROUGHPUT, CPU]


@dataclass(slots=True)
class Row:
    """A first table's row: its label cells, its slots, then its Δ cells."""

    labels: list[str]
    slots: list[Slot]
    deltas: list[str] = field(default_factory=list)


def first_table(labels: list[str], titles: list[str], deltas: list[str], rows: list[Row],
                unit: Unit, extra: Sequence[Measure] = ()) -> str:
    """The table: label columns, each slot's column groups (MEASURES, then the layout's
    `extra`) under its title, then the Δ columns."""
    session = next((s.session for r in rows for s in r.slots), None)
    groups = [m for m in (*MEASURES, *extra) if session is None or m.shown(session)]
    header = [*labels, *[h for t in titles for m in groups for h in m.headers(t, unit)],
              *deltas]
    body = [[*r.labels, *[c for s in r.slots for m in groups for c in m.cells(s)], *r.deltas]
            for r in rows]
    slots = [s for r in rows for s in r.slots]
    notes = [line for m in groups if session is not None
             for line in m.note(session, slots) if line]
    return "\n\n".join([md_table(header, body), *notes])


def run_groups(session: Session, pair: str, keys: Sequence[str]
                ) -> dict[tuple[str, ...], list[Run]]:
    """Runs by their configuration's values of `keys` (for the watches' time windows)."""
    out: dict[tuple[str, ...], list[Run]] = {}
    for r in session.runs_of(pair):
        if r.status in ("ok", "stopped"):
            out.setdefault(tuple(text_of(r.config.get(k, "—")) for k in keys), []).append(r)
    return out
