"""The `sweep` layout's first tables (ix enable_aim): kernels (pairs) as groups, the knob's
values in the profile's order, throughput then latency (ping RTT) in the same shape, then the
watches (interrupt rate per queue) sampled during each cell's runs; a `[report] reference` pair
once, at its hosts' own setting.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from typing import Any

import numpy as np

from abtui.core.dimensions import DIRECTION
from abtui.core.numbers import Unit, sig
from abtui.reports import stats
from abtui.reports.formatting import fmt_delta, fmt_ms, legend, md_table
from abtui.reports.naming import (
    base_pair,
    is_default,
    kernel_group,
    knob_values,
    ordered,
    pairs_in_order,
    references,
    text_of,
    value_order,
)
from abtui.reports.procedure.table import Cells, Measure, Row, Slot, first_table, run_groups
from abtui.sessions.records import Phase, Run
from abtui.sessions.session import Session


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
        return {v: text_of(per_os.get(v, v)) for v in values}
    if isinstance(per_os, list) and len(per_os) == len(spec.get("values") or []):
        mapped = dict(zip(knob_values(doc, knob), map(text_of, per_os), strict=True))
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
        if original is not None and (text_of(original) in pooled or text_of(original) == setting):
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


UNSET = "—"  # Cells.phases' key of a phase without the knob
LATENCY = Measure(headers=lambda title, unit: ["min/avg/max ms", "stddev"], cells=_latency_cells)


def sweep_sections(cells: Cells, doc: dict[str, Any], base: str | None) -> list[str]:
    """The sweep's sections: throughput, latency and watches per kernel and value."""
    session = cells.session
    matrix = (doc.get("plan") or {}).get("matrix") or []
    knob = next((m for m in matrix if m != DIRECTION), None) or "configuration"
    bp = base_pair(session, doc, base)
    refs = references(session, doc, bp)
    pairs = [p for p in pairs_in_order(session, doc, bp) if p not in refs] + refs
    phases = {p: cells.phases(p, [knob]) for p in pairs}
    groups = {p: cells.group(p, [knob]) for p in pairs}
    unit = cells.unit(groups)
    values = [v[0] for v in ordered([k for g in groups.values() for k in g], doc, [knob], session)]
    # `—`: a pair the knob never touched (the lab could not set it there), not a value
    values = [v for v in values if v != UNSET] or values
    tp_rows, lat_rows = [], []
    for pair in pairs:
        rows = _sweep_rows(cells, doc, pair, bp, knob, values, phases, groups, unit, refs)
        for i, (label, slot, tp_delta, lat_delta) in enumerate(rows):
            group = kernel_group(session, pair) if i == 0 else ""
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
    runs = {p: run_groups(session, p, [knob]) for p in pairs}
    out += [f"## Watches per pair and {knob}", "",
            _watch_table(session, runs, knob, value_order(doc, [knob], session)), ""]
    return out


def _latency_table(head: list[str], rows: list[Row]) -> str:
    header = [*head, *LATENCY.headers("", Unit(1.0, "ms")), "Δ avg"]
    return md_table(header, [[*r.labels, *LATENCY.cells(r.slots[0]), *r.deltas] for r in rows])


def _sweep_rows(cells: Cells, doc: dict[str, Any], pair: str, bp: str | None, knob: str,
                values: list[str], phases: dict[str, dict[tuple[str, ...], list[Phase]]],
                groups: dict[str, dict[tuple[str, ...], stats.Cell]], unit: Unit,
                refs: list[str]) -> list[tuple[str, Slot, str, str]]:
    """One pair's rows: (value label, slot, throughput Δ, latency Δ)."""
    session = cells.session
    if pair in refs:
        unset = phases[pair].get((UNSET,))
        if unset and not any((v,) in phases[pair] for v in values if v != UNSET):
            # the knob never touched this pair (the lab could not set it there): one row
            alone = stats.cell(session, pair, "default", unset)
            return [("default", Slot(session, pair, alone, unit), "-", "-")]
        out = []
        for label, pooled in _reference_groups(session, doc, pair, knob, values):
            chosen = [ph for v in pooled for ph in phases[pair].get((v,), [])]
            cell = stats.cell(session, pair, label, chosen) if chosen else None
            out.append((label, Slot(session, pair, cell, unit), "-", "-"))
        return out
    out = []
    listed = knob_values(doc, knob)
    for v in values:
        cell = groups[pair].get((v,))
        label = value_label(v, listed, is_default(session, pair, knob, v))
        if pair == bp:
            tp = lat = base_text(v, listed)
        else:
            base_cell = groups.get(bp or "", {}).get((v,))
            tp = cells.delta(base_cell, cell)
            lat = _rtt_delta(cells, base_cell, cell)
        out.append((label, Slot(session, pair, cell, unit), tp, lat))
    return out


OWN = "hosts' own"  # a value the profile does not list: the hosts' own, as they had it


def value_label(value: str, listed: Sequence[str], default: bool) -> str:
    """A row's value: the profile's (`2 (default)` when the hosts had it), or, for one it
    does not list (a translated knob's host value, `4096 131072 33554432`), the hosts' own,
    named as such and never under the knob's name as if the profile had it."""
    if value in listed:
        return value + (" (default)" if default else "")
    return f"{OWN}: {value}"


def base_text(value: str, listed: Sequence[str]) -> str:
    """The base row's Δ cell: `base0` for a listed value, `base (hosts' own)` for another
    (never `base4096 131072 33554432`)."""
    return f"base{value}" if value in listed else f"base ({OWN})"


def _rtt_delta(cells: Cells, base: stats.Cell | None, other: stats.Cell | None) -> str:
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
            rows.append([pair, value[0], watch, series or watch, sig(s.mean), sig(s.min),
                         sig(s.max), str(s.n)])
    if not rows:
        return "(no watch samples recorded)"
    return md_table(["pair", knob, "watch", "series (queue)", "mean", "min", "max", "samples"],
                    rows)
