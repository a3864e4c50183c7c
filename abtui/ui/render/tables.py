"""The console's tables, built outside the app: the phase table (a DataTable laid out from
ConsoleState), and what the compare screen shows for this session or against a saved one."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, TypeVar

from rich.text import Text
from textual import work
from textual.cache import LRUCache
from textual.widgets import DataTable
from textual.widgets.data_table import ColumnKey, RowKey

from abtui.core.events import Event
from abtui.core.labels import fit_labels
from abtui.core.numbers import Unit, rate_unit
from abtui.core.text import UNKNOWN, visible
from abtui.reports.throughput import configuration_rate
from abtui.ui.model.phase_rows import LOADED
from abtui.ui.model.state import ConsoleState

if TYPE_CHECKING:
    from abtui.sessions.session import Session

K = TypeVar("K", bound=tuple[Any, ...])
V = TypeVar("V")

CELL_WIDTH = 19  # "12.34 n999 +10.5%**"
LABEL_MIN = 24  # the configuration column's least width, when labels are that long


@dataclass(slots=True)
class Comparison:
    """What the compare screen shows, whatever it compares (this session, or two sessions)."""

    title: str
    columns: list[str]
    rows: list[list[str]]
    lines: dict[str, list[tuple[float, float]]]  # label -> (seconds, rate in `unit`)
    bar_names: list[str] = field(default_factory=list)  # one per table row
    # label -> rate in `unit` per row; None where that side has no figure for the row
    bars: dict[str, list[float | None]] = field(default_factory=dict)
    unit: Unit = field(default_factory=lambda: rate_unit([]))  # its table's, lines' and bars'
    note: str = ""  # said once above the table (the knobs every row shares)

    def drawn_bars(self) -> tuple[list[str], list[list[float]]]:
        """The bar chart as plotext draws it: a row's name marked UNKNOWN where a side has
        no figure, and that bar of height 0, which plotext leaves blank (it has no gap of
        its own: NaN draws a bar at 0, None fails)."""
        names = [f"{name}{UNKNOWN}" if any(v[i] is None for v in self.bars.values())
                 else name for i, name in enumerate(self.bar_names)]
        return names, [[0.0 if x is None else x for x in v] for v in self.bars.values()]


def column_widths(columns: list[str], rows: list[list[str]], room: int,
                  padding: int = 2) -> list[int]:
    """Each column's width so the table fits `room` cells (each column `padding` more): as
    wide as its widest cell where all fit, else the widest columns narrowed alike (their
    cells wrap), never below their header."""
    want = [max([len(c), *(len(r[i]) for r in rows if i < len(r))])
            for i, c in enumerate(columns)]
    floor = [max(len(c), 6) for c in columns]
    budget = room - padding * len(columns)
    if sum(want) <= budget:
        return want
    lo, hi = 1, max(want)
    while lo < hi:  # the widest cap under which the columns still fit
        cap = (lo + hi + 1) // 2
        if sum(max(min(w, cap), f) for w, f in zip(want, floor, strict=True)) <= budget:
            lo = cap
        else:
            hi = cap - 1
    return [max(min(w, lo), f) for w, f in zip(want, floor, strict=True)]


def pair_title(state: ConsoleState, label: str, unit: Unit) -> str:
    """A pair's column in the phase tables: what its cells hold (the mean in the table's
    unit, and for the others the Δ % vs the base pair)."""
    return f"{label} {unit.name} (base)" if label == state.base else \
        f"{label} {unit.name} Δ%"


def phase_rows(state: ConsoleState, unit: Unit | None = None) -> list[tuple[str, list[str]]]:
    """Each configuration's label and cells (in `unit`, the table's when not given), in the
    order they appeared."""
    unit = unit or state.rate_unit()
    return [(state.row_label(r), state.phase_cells(r, unit)) for r in state.phases.values()]


def label_width(state: ConsoleState, screen_width: int, labels: list[str],
                whole: bool = False) -> int:
    """The configuration column: as wide as its longest label, within what the pairs'
    columns leave of the table's share of the screen (`whole`: the screen is the table's,
    as on the compare screen), but never below LABEL_MIN (with many pairs on a narrow screen
    the table scrolls sideways instead)."""
    wide = screen_width >= 100 and not whole
    table = screen_width * 3 // 5 if wide else screen_width  # abtui.tcss: 3fr of 5
    room = table - len(state.pairs) * (CELL_WIDTH + 2) - 3  # cell padding, bar
    longest = max([len("configuration"), *(len(lb) for lb in labels)])
    return min(longest, max(room, LABEL_MIN))


class PhaseTable(DataTable[Text]):
    """One row per configuration, one column per pair; every width explicit (no jitter), every
    cell text, never markup.

    New numbers repaint only what changed (`set_row`): a cell whose text is the same is left
    alone, a changed cell's cached rendering is dropped with its row's lines, and only that
    row's region is refreshed. DataTable's own `update_cell` bumps a count that is part of
    every one of its cache keys, so one new number rendered every cell of the table again
    through rich (18 % of a live 2-pair console's main thread). That relies on DataTable's
    caches (tests/ui/test_phase_table_cells.py pins it against a whole re-render). Its
    repaints with new numbers (TABLE_HZ at most) are drawn on the screen's next idle
    (textual_privates.DrawnAtOnce)."""

    label_cols = 0  # the configuration column, as laid out
    unit: Unit | None = None  # the unit its columns name, as laid out
    _scipy_asked = False
    _on_loaded: Callable[[], None] | None = None
    # (textual_privates.DrawnAtOnce) a repaint with new numbers waits to be drawn
    repaint_due = False

    def drawn(self) -> None:
        """(textual_privates.DrawnAtOnce) its paced repaint was drawn."""
        self.repaint_due = False

    def load_stats(self, loaded: Callable[[], None]) -> None:
        """Import what the significance marks need (abtui.reports.stats, ~1.5 s with numpy)
        without stalling the screen; `loaded()` once it is there."""
        self._on_loaded = loaded
        self._load("abtui.reports.stats", "stats")

    @work(thread=True, exit_on_error=False, group="imports")
    def _load(self, module: str, key: str) -> None:
        import importlib

        loaded = importlib.import_module(module)
        self.app.call_from_thread(self._now_loaded, key, loaded)

    def _now_loaded(self, key: str, module: object) -> None:
        LOADED[key] = module if key == "stats" else True
        if self._on_loaded is not None:
            self._on_loaded()

    def fits(self, state: ConsoleState, screen_width: int) -> bool:
        """Whether the configuration column is still as wide as the labels want."""
        return not self.label_cols or self.label_cols == label_width(
            state, screen_width, [visible(state.row_label(r)) for r in state.phases.values()])

    def rebuild(self, state: ConsoleState, screen_width: int) -> None:
        """A new configuration: lay the table out again. Labels too long for their column are
        shortened alike (abtui.core.labels)."""
        unit = self.unit = state.rate_unit()
        width = label_width(state, screen_width,
                            [visible(state.row_label(r)) for r in state.phases.values()])
        self.label_cols = width
        cursor = self.cursor_row
        self.clear(columns=True)
        self.add_column(Text("configuration"), key="config", width=width)
        for label in state.pairs:
            self.add_column(Text(visible(pair_title(state, label, unit))), key=label,
                            width=CELL_WIDTH)
        rows = _table_rows(state, unit, width)
        for key, cells in rows:
            self.add_row(*(Text(c) for c in cells), key=key)
        if rows:
            self.move_cursor(row=min(max(cursor, 0), len(rows) - 1), scroll=False)
        self.repaint_due = True

    def rows_changed(self, state: ConsoleState) -> bool:
        """A new row, or one gone (a phase a run overrode before any interval: as many rows
        as before, other keys): the table is rebuilt, and at once."""
        return [k.value for k in self.rows] != [repr(k) for k in state.phases]

    def refresh_cells(self, state: ConsoleState, screen_width: int) -> None:
        """New numbers (or labels): the cells that changed updated in place, their rows alone
        repainted (a new row or unit, or labels that want another width, lay the table out
        again)."""
        unit = state.rate_unit()
        if self.rows_changed(state) or unit != self.unit or not self.fits(state, screen_width):
            self.rebuild(state, screen_width)  # or a new unit, or labels of another width
        else:
            for key, cells in _table_rows(state, unit, self.label_cols):
                self.set_row(key, cells)
        # asked for by the cells just made (a mark waiting, `…`): once it is imported the
        # table is repainted (load_stats' callback), even when no new number comes
        if LOADED.pop("want_scipy", False) and not self._scipy_asked:
            self._scipy_asked = True  # the verdict's t distribution (~0.8 s of imports)
            self._load("scipy.special", "scipy")

    def set_row(self, row_key: str, cells: list[str]) -> None:
        """A row's cells (one per column, in order) as `cells` say. Unchanged cells are not
        touched; a changed one's rendering is dropped, with the row's rendered lines, and the
        row's region alone is repainted."""
        key = RowKey(row_key)
        data = self._data[key]
        changed: set[ColumnKey] = set()
        for column, text in zip(self.ordered_columns, cells, strict=True):
            if str(data.get(column.key, "")) != text:
                data[column.key] = Text(text)
                changed.add(column.key)
        if changed:
            self._forget(key, changed)

    def _forget(self, key: RowKey, columns: set[ColumnKey]) -> None:
        """Drop what DataTable keeps of a row whose `columns` changed (its caches are keyed
        by a count that update_cell bumps for the whole table), and repaint the row."""
        index = self.get_row_index(key)
        region = self._get_row_region(index)
        _drop(self._cell_render_cache, lambda k: k[0] == key and k[1] in columns)
        _drop(self._row_render_cache, lambda k: k[0] == key)
        _drop(self._row_renderable_cache, lambda k: k[1] == index)
        _drop(self._line_cache, lambda k: region.y <= k[0] < region.bottom)  # y, table-wide
        self.refresh_row(index)
        self.repaint_due = True


def _drop(cache: LRUCache[K, V], unwanted: Callable[[K], bool]) -> None:
    """Every entry of `cache` whose key is `unwanted` dropped."""
    for key in list(filter(unwanted, cache.keys())):
        cache.discard(key)


def _table_rows(state: ConsoleState, unit: Unit, width: int) -> list[tuple[str, list[str]]]:
    """Each row's key and cells as the phase table shows them: its label fitted to `width`
    (abtui.core.labels), then one cell per pair in `unit`."""
    fitted = fit_labels([state.row_parts(r) for r in state.phases.values()], width)
    return [(repr(k), [shown, *state.phase_cells(r, unit)])
            for (k, r), shown in zip(state.phases.items(), fitted, strict=True)]


def session_comparison(name: str, state: ConsoleState,
                       series: dict[str, list[tuple[float, float]]],
                       screen_width: int) -> Comparison:
    """This session: the phase table, pairs over time, per-configuration bars; labels too
    long for the screen fitted as the phase table's are (abtui.core.labels)."""
    unit = state.rate_unit()
    rows = phase_rows(state, unit)
    width = label_width(state, screen_width, [lb for lb, _ in rows], whole=True)
    parts = [state.row_parts(r) for r in state.phases.values()]
    fitted = fit_labels(parts, width)
    bars = {label: [_scaled(configuration_rate(r.segments.get(label, [])), unit)
                    for r in state.phases.values()] for label in state.pairs}
    # each bar group named under it (fitted to a group's share of half the screen)
    names = fit_labels(parts, bar_width(screen_width, len(rows)))
    return Comparison(
        f"Compare: {name}, phase by phase",
        ["configuration", *(pair_title(state, lb, unit) for lb in state.pairs)],
        [[label, *cells] for label, (_, cells) in zip(fitted, rows, strict=True)],
        unit_lines(series, unit), names, bars, unit)


def unit_lines(series: dict[str, list[tuple[float, float]]], unit: Unit
               ) -> dict[str, list[tuple[float, float]]]:
    """Lines over time in bit/s as the compare screen draws them: in its table's unit."""
    return {lb: [(t, v / unit.div) for t, v in pts] for lb, pts in series.items()}


def bar_width(screen_width: int, groups: int) -> int:
    """The cells a bar group's name has under it: the bar chart takes half the screen, less
    its axis, shared by the groups (a gap between them)."""
    return max(3, (screen_width // 2 - 8) // max(groups, 1) - 2)


def _cut(text: str, width: int) -> str:
    return text if len(text) <= width else text[:width - 1] + "…"


def saved_comparison(saved: Session, events: list[Event], screen_width: int = 120
                     ) -> Comparison:
    """This session against a saved one (`abtui compare`'s table), read by the caller
    (abtui.sessions.session.Session.load)."""
    from abtui.reports import compare
    from abtui.reports.exports import interval_rows
    from abtui.reports.formatting import fmt_cell, fmt_compare, rate_unit_of
    from abtui.reports.naming import shown_config
    from abtui.sessions.session import Session

    now = Session.from_events(events, name="this session")
    # rows named by what sets them apart, as the report's tables are; the rest said once
    common = compare.common_knobs(saved, now)
    table = compare.rows(saved, now, common=common)
    unit = rate_unit_of(c for r in table for c in (r["left"], r["right"]))
    lines: dict[str, list[tuple[float, float]]] = {}
    for side, session in (("saved", saved), ("now", now)):
        for pair in session.pairs:
            lines[f"{side} {pair}"] = []
            for r in interval_rows(session, pair):  # --bidir's way back: a line of its own
                if r["bits_per_second"] is not None:
                    key = f"{side} {pair}" + (" rx" if r["direction"] == "rx" else "")
                    lines.setdefault(key, []).append((r["time"],
                                                      r["bits_per_second"] / unit.div))
    rows = [[r["pair"], r["shown"],
             fmt_cell(r["left"], unit.div), fmt_cell(r["right"], unit.div),
             fmt_compare(r["left"], r["right"])] for r in table]
    mean = [(r["left"].throughput.mean if r["left"] else None,
             r["right"].throughput.mean if r["right"] else None) for r in table]
    room = bar_width(screen_width, len(rows))
    return Comparison(
        f"Compare: {saved.name} → this session ({unit.name})",
        ["pair", "configuration", saved.name, "this session", "Δ"], rows, lines,
        [_cut(f"{r['pair']} {r['shown']}", room) for r in table],
        {"saved": [_scaled(a, unit) for a, _ in mean],
         "now": [_scaled(b, unit) for _, b in mean]}, unit,
        f"in every configuration: {shown_config(saved, common)}" if common else "")


def _scaled(bps: float | None, unit: Unit) -> float | None:
    return None if bps is None else bps / unit.div
