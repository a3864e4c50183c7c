"""The table each procedure's community posts, chosen by the profile's `[report] layout`, as
the report's first table (the shapes: docs/reports.md):

- `sweep` (ix enable_aim): kernels (pairs) as groups, the knob's values in the profile's order,
  the host's own value marked `(default)`; the base pair's rows name their base (`base0`), every
  other pair's Δ is vs the base pair at the same value; a `[report] reference` pair appears
  once, at its host's own setting (`default`), with `-`. Then latency (min/avg/max, stddev, Δ
  of the runs' mean RTT) in the same shape, and the watches (interrupt rate per queue).
- `before-after` (softirq crypto): per tunnel and direction (profile order), the base pair's and
  the other pairs' throughput and the speedup in percent.
- `builds` (WireGuard GRO): per build, throughput and Δ vs the first, then iperf3's own `[SUM]`
  sender (with retransmits) and receiver figures.

A cell is a pair's phases whose configuration has the cell's values; its figure, Δ, interval
and verdict are the generic table's (reports.stats.cell, reports.formatting): the mean of its
run-level values, never a second definition. Configurations are named as the profile names
them (`ipsec (lab: vxlan)` when `abtui run --lab` ran another), and the lab's translations are
listed after the tables.

Every first table is made by `first_table` from rows of *slots* (a pair's cell); the column
groups shown per slot are `MEASURES` (plus a layout's own): add a group there and every
layout's first table shows it.
"""

from __future__ import annotations

import math
import tomllib
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from abtui.reports import stats
from abtui.reports.formatting import (
    Unit,
    fmt_bps,
    fmt_cell,
    fmt_compare,
    fmt_delta,
    fmt_ms,
    legend,
    md_table,
    rate_unit_of,
)
from abtui.sessions.session import Phase, Run, Session, config_key

DIRECTION = "direction"
DIRECTIONS = ("tx", "rx", "bidir")
DIRECTION_NAMES = {"tx": "TX", "rx": "RX (-R)", "bidir": "bidir"}


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
             seen: list[stats.Delta | None] | None = None, units: str = "bits") -> list[str]:
    """Markdown lines of the procedure's sections (none without a layout), translations.
    Every Δ printed is appended to `seen` (the report's notes explain a missing interval)."""
    layout, doc = layout_of(session)
    out: list[str] = []
    builder = _LAYOUTS.get(layout or "")
    if builder is not None:
        out += builder(_Cells(session, seen if seen is not None else [], units), doc, base)
    if session.translations:
        out += ["## Lab translations", "",
                md_table(["what", "profile", "lab", "why"],
                         [[str(t.get("subject", "")), str(t.get("original", "")),
                           str(t.get("lab", "")), str(t.get("why", ""))]
                          for t in session.translations]), ""]
    return out


# ---- the profile's order ---------------------------------------------------------------

def knob_values(doc: dict[str, Any], knob: str) -> list[str]:
    """A knob's values as the profile lists them (`direction`: the plan's directions)."""
    if knob == DIRECTION:
        return [str(d) for d in (doc.get("plan") or {}).get("directions") or DIRECTIONS]
    for k in doc.get("knobs") or []:
        if isinstance(k, dict) and k.get("name") == knob:
            return [_str(v) for v in k.get("values") or []]
    return []


def _str(v: Any) -> str:
    return ("true" if v else "false") if isinstance(v, bool) else str(v)


def config_order(doc: dict[str, Any], session: Session | None = None
                 ) -> Callable[[dict[str, Any]], tuple[Any, ...]]:
    """Sort key for configurations in the profile's order: the plan's matrix knobs first,
    each by the position of its value in the profile's list (a lab's stand-in where the
    original stood; values it does not list after, by name), then the other knobs alike."""
    matrix = [str(m) for m in (doc.get("plan") or {}).get("matrix") or []]
    others = [str(k.get("name")) for k in doc.get("knobs") or [] if isinstance(k, dict)]
    names = list(dict.fromkeys([*matrix, *others]))
    return _value_order(doc, names, session)


def _value_order(doc: dict[str, Any], names: Sequence[str], session: Session | None
                 ) -> Callable[[dict[str, Any]], tuple[Any, ...]]:
    orders = {n: knob_values(doc, n) for n in names}

    def key(config: dict[str, Any]) -> tuple[Any, ...]:
        out: list[Any] = []
        for n in names:
            v = _str(config.get(n, ""))
            v = _original(session, n, v) if session is not None else v
            values = orders[n]
            out.append((values.index(v), "") if v in values else (len(values), v))
        return tuple(out)

    return key


def _original(session: Session, knob: str, value: str) -> str:
    """The profile's value the lab ran `value` for (the value itself when none)."""
    for t in session.translations:
        if t.get("subject") == f"knob {knob}" and t.get("lab") == value:
            return str(t.get("original"))
    return value


def shown_config(session: Session, config: dict[str, Any]) -> str:
    """A configuration as tables name it, each value as the profile names it (`tunnel=ipsec
    (lab: vxlan)`); the session's own label otherwise."""
    if not any(str(t.get("subject", "")).startswith("knob ") for t in session.translations):
        return config_key(config)
    return ", ".join(f"{k}={_shown(session, k, _str(v))}" for k, v in sorted(config.items()))


# ---- values ----------------------------------------------------------------------------

class _Cells:
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
            out.setdefault(tuple(_str(ph.config.get(k, "—")) for k in keys), []).append(ph)
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


def _ordered(found: Sequence[tuple[str, ...]], doc: dict[str, Any], keys: Sequence[str],
             session: Session) -> list[tuple[str, ...]]:
    """Value tuples in the profile's order (values it does not list after, by name)."""
    key = _value_order(doc, keys, session)
    return sorted(dict.fromkeys(found), key=lambda t: key(dict(zip(keys, t, strict=True))))


def _base(session: Session, doc: dict[str, Any], base: str | None) -> str | None:
    wanted = base or (doc.get("profile") or {}).get("base_pair")
    return wanted if wanted in session.pairs else (session.pairs[0] if session.pairs else None)


def _pairs(session: Session, doc: dict[str, Any], first: str | None) -> list[str]:
    """The session's pairs in the profile's order (`first` first), then any it does not name."""
    named = [str(p.get("label")) for p in doc.get("pairs") or [] if isinstance(p, dict)]
    order = [p for p in named if p in session.pairs]
    order += [p for p in session.pairs if p not in order]
    return [*([first] if first in order else []), *[p for p in order if p != first]]


def references(session: Session, doc: dict[str, Any], base: str | None) -> list[str]:
    """The session's pairs the profile's `[report] reference` names (never `base`)."""
    report = doc.get("report") or {}
    refs = report.get("reference") if isinstance(report, dict) else None
    refs = [refs] if isinstance(refs, str) else refs if isinstance(refs, list) else []
    return [r for r in refs if r in session.pairs and r != base]


def _shown(session: Session, knob: str, value: str) -> str:
    """A value as the profile names it; `ipsec (lab: vxlan)` when the lab ran another."""
    for t in session.translations:
        if t.get("subject") == f"knob {knob}" and t.get("lab") == value:
            return f"{t.get('original')} (lab: {value})"
    return value


def _kernel(session: Session, pair: str) -> str:
    """A pair as a kernel group: its label and its sender's kernel release when known."""
    host = session.hosts_of(pair).get("sender")
    release = session.facts.get(host or "", {}).get("kernel_release")
    return f"{pair} ({release})" if release else pair


def _is_default(session: Session, pair: str, knob: str, value: str) -> bool:
    """`value` is the knob's value the pair's hosts had before abtui touched them."""
    return _str(session.initial_configs.get(pair, {}).get(knob, None)) == value


# ---- the first-table builder ---------------------------------------------------------------

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


def _titled(title: str, what: str) -> str:
    return f"{title} {what}" if title else what


THROUGHPUT = Measure(
    headers=lambda title, unit: [f"{title} ({unit.name})" if title else unit.name],
    cells=lambda s: [fmt_cell(s.cell, s.unit.div, spread=False)])

# The column groups every layout's first table shows per pair, left to right (add one here).
MEASURES: list[Measure] = [THROUGHPUT]


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
    groups = [*MEASURES, *extra]
    header = [*labels, *[h for t in titles for m in groups for h in m.headers(t, unit)],
              *deltas]
    body = [[*r.labels, *[c for s in r.slots for m in groups for c in m.cells(s)], *r.deltas]
            for r in rows]
    return md_table(header, body)


def _run_groups(session: Session, pair: str, keys: Sequence[str]
                ) -> dict[tuple[str, ...], list[Run]]:
    """Runs by their configuration's values of `keys` (for the watches' time windows)."""
    out: dict[tuple[str, ...], list[Run]] = {}
    for r in session.runs_of(pair):
        if r.status in ("ok", "stopped"):
            out.setdefault(tuple(_str(r.config.get(k, "—")) for k in keys), []).append(r)
    return out


# ---- sweep -------------------------------------------------------------------------------

def _os_settings(session: Session, doc: dict[str, Any], pair: str, knob: str,
                 values: Sequence[str]) -> dict[str, str]:
    """What each value sets on the pair's hosts: the knob's per-OS values for the host's OS
    (ix: on Linux 1 and 2 are both `adaptive-rx on`); each value itself when the lab ran a
    stand-in, or the profile says nothing for that OS."""
    if any(t.get("subject") == f"knob {knob}" for t in session.translations):
        return {v: v for v in values}
    host = session.hosts_of(pair).get("sender") or ""
    os_name = str(session.facts.get(host, {}).get("os", "")).lower()
    spec = next((k for k in doc.get("knobs") or []
                 if isinstance(k, dict) and k.get("name") == knob), {})
    per_os = ((spec.get("os") or {}).get(os_name) or {}).get("values") if os_name else None
    if isinstance(per_os, dict):
        return {v: _str(per_os.get(v, v)) for v in values}
    if isinstance(per_os, list) and len(per_os) == len(spec.get("values") or []):
        mapped = dict(zip(knob_values(doc, knob), map(_str, per_os), strict=True))
        return {v: mapped.get(v, v) for v in values}
    return {v: v for v in values}


def _reference_groups(session: Session, doc: dict[str, Any], pair: str, knob: str,
                      values: Sequence[str]) -> list[tuple[str, list[str]]]:
    """A reference pair's rows: (label, the values pooled). Values that set the same thing on
    its host are one setting; the setting its host had (`default`) is its one row; when that
    was not measured, one row per setting measured."""
    settings = _os_settings(session, doc, pair, knob, values)
    by_setting: dict[str, list[str]] = {}
    for v in values:
        by_setting.setdefault(settings[v], []).append(v)
    original = session.initial_configs.get(pair, {}).get(knob)
    for setting, pooled in by_setting.items():
        if original is not None and (_str(original) in pooled or _str(original) == setting):
            return [("default", pooled)]
    return [(", ".join(pooled), pooled) for pooled in by_setting.values()]


def _rtt_runs(session: Session, cell: stats.Cell | None) -> list[float]:
    """A cell's run-level RTT values: the mean ping RTT of each run within its phases."""
    if cell is None:
        return []
    cols = session.pings[cell.pair]
    if not len(cols):
        return []
    phase = np.frombuffer(cols["phase"], dtype=np.int32)
    run = np.frombuffer(cols["run"], dtype=np.int32)
    rtt = np.frombuffer(cols["rtt"], dtype=np.float64)
    keep = np.isin(phase, np.asarray(cell.phases, dtype=np.int32)) & np.isfinite(rtt)
    return [float(rtt[keep & (run == r)].mean()) for r in np.unique(run[keep]).tolist()]


def _latency_cells(s: Slot) -> list[str]:
    c = s.cell
    if c is None or not c.rtt.n or c.rtt.mean is None:
        return ["—", "—"]
    r = c.rtt
    return ["/".join(fmt_ms(x) for x in (r.min, r.mean, r.max)), fmt_ms(r.stdev)]


LATENCY = Measure(headers=lambda title, unit: ["min/avg/max ms", "stddev"], cells=_latency_cells)


def _sweep(cells: _Cells, doc: dict[str, Any], base: str | None) -> list[str]:
    session = cells.session
    matrix = (doc.get("plan") or {}).get("matrix") or []
    knob = next((m for m in matrix if m != DIRECTION), None) or "configuration"
    bp = _base(session, doc, base)
    refs = references(session, doc, bp)
    pairs = [p for p in _pairs(session, doc, bp) if p not in refs] + refs
    phases = {p: cells.phases(p, [knob]) for p in pairs}
    groups = {p: cells.group(p, [knob]) for p in pairs}
    unit = cells.unit(groups)
    values = [v[0] for v in _ordered([k for g in groups.values() for k in g], doc, [knob], session)]
    tp_rows, lat_rows = [], []
    for pair in pairs:
        rows = _sweep_rows(cells, doc, pair, bp, knob, values, phases, groups, unit, refs)
        for i, (label, slot, tp_delta, lat_delta) in enumerate(rows):
            group = _kernel(session, pair) if i == 0 else ""
            tp_rows.append(Row([group, label], [slot], [tp_delta]))
            lat_rows.append(Row([group, label], [slot], [lat_delta]))
    head = ["kernel", knob]
    delta = [f"Δ vs {bp} at the same {knob}"]
    note = (f"{legend(f'{bp} at the same {knob}', spread=False)} `(default)`: the hosts' "
            f"own value before abtui set it. `base0`: {bp}'s row at {knob} 0, the base of "
            f"the other kernels' rows at 0 (and so on)." +
            (f" {', '.join(refs)}: a reference, at its hosts' own setting, not compared."
             if refs else ""))
    out = [f"## Throughput per kernel and {knob}", "",
           first_table(head, [""], delta, tp_rows, unit), "", note, ""]
    out += [f"## Latency per kernel and {knob} (ping RTT)", "",
            _latency_table(head, lat_rows) if any(
                r.slots[0].cell is not None and r.slots[0].cell.rtt.n for r in lat_rows)
            else "(no ping replies recorded)", "",
            "min/avg/max, stddev: over every ping reply of the cell, ms. Δ avg: change of the "
            "mean of the runs' average RTT, its interval and verdict as above.", ""]
    runs = {p: _run_groups(session, p, [knob]) for p in pairs}
    out += [f"## Watches per pair and {knob}", "",
            _watch_table(session, runs, knob, _value_order(doc, [knob], session)), ""]
    return out


def _latency_table(head: list[str], rows: list[Row]) -> str:
    header = [*head, *LATENCY.headers("", Unit(1.0, "ms")), "Δ avg"]
    return md_table(header, [[*r.labels, *LATENCY.cells(r.slots[0]), *r.deltas] for r in rows])


def _sweep_rows(cells: _Cells, doc: dict[str, Any], pair: str, bp: str | None, knob: str,
                values: list[str], phases: dict[str, dict[tuple[str, ...], list[Phase]]],
                groups: dict[str, dict[tuple[str, ...], stats.Cell]], unit: Unit,
                refs: list[str]) -> list[tuple[str, Slot, str, str]]:
    """One pair's rows: (value label, slot, throughput Δ, latency Δ)."""
    session = cells.session
    if pair in refs:
        out = []
        for label, pooled in _reference_groups(session, doc, pair, knob, values):
            chosen = [ph for v in pooled for ph in phases[pair].get((v,), [])]
            cell = stats.cell(session, pair, label, chosen) if chosen else None
            out.append((label, Slot(session, pair, cell, unit), "-", "-"))
        return out
    out = []
    for v in values:
        cell = groups[pair].get((v,))
        label = v + (" (default)" if _is_default(session, pair, knob, v) else "")
        if pair == bp:
            tp = lat = f"base{v}"
        else:
            base_cell = groups.get(bp or "", {}).get((v,))
            tp = cells.delta(base_cell, cell)
            lat = _rtt_delta(cells, base_cell, cell)
        out.append((label, Slot(session, pair, cell, unit), tp, lat))
    return out


def _rtt_delta(cells: _Cells, base: stats.Cell | None, other: stats.Cell | None) -> str:
    if base is None or other is None:
        return "—"
    a, b = _rtt_runs(cells.session, base), _rtt_runs(cells.session, other)
    if not a or not b:
        return "—"
    d, v = stats.compare_samples(a, b)
    cells.seen.append(d)
    return fmt_delta(d, v)


def _watch_table(session: Session, groups: dict[str, dict[tuple[str, ...], list[Run]]],
                 knob: str, order: Callable[[dict[str, Any]], tuple[Any, ...]]) -> str:
    """Each watch series (e.g. one per queue) sampled during a cell's runs: mean, min, max;
    pairs as the first table shows them, values in the profile's order."""
    rows = []
    pairs = list(groups)
    found = sorted(((k, v) for k, v in session.watches.items() if k[0] in groups),
                   key=lambda kv: (pairs.index(str(kv[0][0])), str(kv[0][1]), str(kv[0][2])))
    for (pair, _host, name), (times, vals) in found:
        if pair is None:
            continue
        t, v = np.asarray(times), np.asarray(vals)
        watch, _, series = name.partition(":")
        for value, runs in sorted(groups.get(pair, {}).items(),
                                  key=lambda kv: order({knob: kv[0][0]})):
            inside = np.zeros(t.size, dtype=bool)
            for r in runs:
                if r.start is not None and r.end is not None:
                    inside |= (t >= r.start) & (t <= r.end)
            s = stats.summarize(v[inside])
            if not s.n or s.mean is None or math.isnan(s.mean):
                continue
            rows.append([pair, value[0], watch, series or watch, f"{s.mean:.0f}",
                         f"{s.min:.0f}", f"{s.max:.0f}", str(s.n)])
    if not rows:
        return "(no watch samples recorded)"
    return md_table(["pair", knob, "watch", "series (queue)", "mean", "min", "max", "samples"],
                    rows)


# ---- before-after ----------------------------------------------------------------------------

def _before_after(cells: _Cells, doc: dict[str, Any], base: str | None) -> list[str]:
    session = cells.session
    matrix = [m for m in (doc.get("plan") or {}).get("matrix") or [] if m != DIRECTION]
    keys = [*matrix, DIRECTION]
    bp = _base(session, doc, base)
    order = _pairs(session, doc, bp)
    others = order[1:]
    groups = {p: cells.group(p, keys) for p in order}
    unit = cells.unit(groups)
    rows = []
    for combo in _ordered([c for g in groups.values() for c in g], doc, keys, session):
        base_cell = groups.get(bp or "", {}).get(combo)
        label = [_shown(session, k, v) for k, v in zip(matrix, combo, strict=False)]
        slots = [Slot(session, p, groups[p].get(combo), unit) for p in order]
        deltas = [cells.delta(base_cell, groups[p].get(combo)) for p in others]
        rows.append(Row([*label, DIRECTION_NAMES.get(combo[-1], combo[-1])], slots, deltas))
    return ["## Throughput per " + " and ".join([*matrix, "direction"]), "",
            first_table([*matrix, "direction"], order, [f"speedup {p} vs {bp}" for p in others],
                        rows, unit), "",
            legend(bp or "the base pair", spread=False).replace("Δ: change", "speedup: change"),
            ""]


# ---- builds ---------------------------------------------------------------------------------

def _sum_lines(s: Slot) -> list[str]:
    """iperf3's own [SUM] summary figures of a build's runs (means over its runs): sender
    bitrate, retransmits, receiver bitrate."""
    runs = [r for r in s.session.runs_of(s.pair) if r.summary and r.status in ("ok", "stopped")
            and (s.cell is None or _in_phases(s.session, r, s.cell.phases))]

    def mean(key: str) -> float | None:
        xs = [float(r.summary[key]) for r in runs if r.summary
              and isinstance(r.summary.get(key), int | float)
              and not isinstance(r.summary.get(key), bool)]
        return math.fsum(xs) / len(xs) if xs else None

    retr = mean("retransmits")
    return [fmt_bps(mean("sender_bits_per_second"), s.unit.div),
            "—" if retr is None else f"{retr:.0f}",
            fmt_bps(mean("receiver_bits_per_second"), s.unit.div)]


def _in_phases(session: Session, run: Run, phases: Sequence[int]) -> bool:
    cols = session.intervals[run.pair]
    if not len(cols):
        return False
    run_col = np.frombuffer(cols["run"], dtype=np.int32)
    phase_col = np.frombuffer(cols["phase"], dtype=np.int32)
    return bool(np.isin(phase_col[run_col == run.index], np.asarray(phases)).any())


SUM_LINES = Measure(
    headers=lambda title, unit: [_titled(title, f"[SUM] sender ({unit.name})"), "retransmits",
                                 _titled(title, f"[SUM] receiver ({unit.name})")],
    cells=_sum_lines)


def _builds(cells: _Cells, doc: dict[str, Any], base: str | None) -> list[str]:
    session = cells.session
    first = _base(session, doc, base)
    order = _pairs(session, doc, first)
    groups = {p: cells.group(p, []) for p in order}
    unit = cells.unit(groups)
    base_cell = groups.get(first or "", {}).get(())
    rows = [Row([p], [Slot(session, p, groups[p].get(()), unit)],
                ["-" if p == first else cells.delta(base_cell, groups[p].get(()))])
            for p in order]
    return ["## Throughput per build", "",
            first_table(["build"], [""], [f"Δ vs {first}"], rows, unit, [SUM_LINES]), "",
            legend(first or "the first build", spread=False) + " With parallel streams (-P), each "
            "interval is their [SUM]. [SUM] sender, retransmits, receiver: iperf3's own "
            "summary lines, the mean over the build's runs.", ""]


_LAYOUTS = {"sweep": _sweep, "before-after": _before_after, "builds": _builds}


def group_knobs(doc: dict[str, Any]) -> list[str]:
    """Knobs whose values are separate tests, never compared with each other: the direction
    and the tunnel type (a Δ between them says nothing about a change)."""
    tunnels = [str(k.get("name")) for k in doc.get("knobs") or []
               if isinstance(k, dict) and k.get("kind") == "tunnel"]
    return [DIRECTION, *tunnels]


def comparable(doc: dict[str, Any], a: dict[str, Any], b: dict[str, Any]) -> bool:
    """Two configurations may be compared: the same direction and tunnel type."""
    return all(_str(a.get(k, "")) == _str(b.get(k, "")) for k in group_knobs(doc))
