"""The table each procedure's community expects, chosen by the profile's `[report] layout`:

- `sweep` (ix enable_aim): pair | knob value | throughput | Δ vs the base pair at the same
  value; latency min/avg/max/stddev per pair and value; the watches (interrupt rate per queue)
  per pair and value.
- `before-after` (softirq crypto): per tunnel and direction, the base pair's and the other
  pairs' throughput and the speedup in percent.
- `builds` (WireGuard GRO): throughput per build (pair), Δ vs the first.

A cell is a pair's phases whose configuration has the cell's values; its figure, Δ, interval
and verdict are the generic table's (reports.stats.cell, reports.formatting.fmt_cell and
fmt_compare): the mean of its run-level values, never a second definition. What the lab ran
instead of the profile's settings (`abtui run --lab`) is listed too.
"""

from __future__ import annotations

import math
import tomllib
from collections.abc import Sequence
from typing import Any

import numpy as np

from abtui.reports import stats
from abtui.reports.formatting import fmt_cell, fmt_compare, legend, md_table, rate_unit_of
from abtui.sessions.session import Phase, Run, Session

DIRECTION = "direction"


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
             seen: list[stats.Delta | None] | None = None) -> list[str]:
    """Markdown lines of the procedure's sections (none without a layout), translations.
    Every Δ printed is appended to `seen` (the report's notes explain a missing interval)."""
    layout, doc = layout_of(session)
    out: list[str] = []
    builder = _LAYOUTS.get(layout or "")
    if builder is not None:
        out += builder(_Cells(session, seen if seen is not None else []), doc, base)
    if session.translations:
        out += ["## Lab translations", "",
                md_table(["what", "profile", "lab", "why"],
                         [[str(t.get("subject", "")), str(t.get("original", "")),
                           str(t.get("lab", "")), str(t.get("why", ""))]
                          for t in session.translations]), ""]
    return out


# ---- values ----------------------------------------------------------------------------

class _Cells:
    """A session's cells grouped by some of their knobs' values, and the Δ printed so far."""

    def __init__(self, session: Session, seen: list[stats.Delta | None]) -> None:
        self.session = session
        self.seen = seen

    def group(self, pair: str, keys: Sequence[str]) -> dict[tuple[str, ...], stats.Cell]:
        """The pair's phases grouped by their values of `keys` (`—` where unset), as cells."""
        phases: dict[tuple[str, ...], list[Phase]] = {}
        for ph in self.session.phases_of(pair):
            phases.setdefault(tuple(str(ph.config.get(k, "—")) for k in keys), []).append(ph)
        return {key: stats.cell(self.session, pair, ", ".join(key), group)
                for key, group in phases.items()}

    def delta(self, base: stats.Cell | None, other: stats.Cell | None) -> str:
        """fmt_compare, with the Δ noted for the report's notes."""
        return fmt_compare(base, other, seen=self.seen)

    def unit(self, groups: dict[str, dict[tuple[str, ...], stats.Cell]]) -> tuple[float, str]:
        return rate_unit_of(c for g in groups.values() for c in g.values())


def _run_groups(session: Session, pair: str, keys: Sequence[str]
                ) -> dict[tuple[str, ...], list[Run]]:
    """Runs by their configuration's values of `keys` (for the watches' time windows)."""
    out: dict[tuple[str, ...], list[Run]] = {}
    for r in session.runs_of(pair):
        if r.status in ("ok", "stopped"):
            out.setdefault(tuple(str(r.config.get(k, "—")) for k in keys), []).append(r)
    return out


def _natural(key: tuple[str, ...]) -> tuple[Any, ...]:
    """Numbers in numeric order, before words."""
    out: list[Any] = []
    for v in key:
        try:
            out.append((0, float(v), ""))
        except ValueError:
            out.append((1, 0.0, v))
    return tuple(out)


def _base(session: Session, doc: dict[str, Any], base: str | None) -> str | None:
    wanted = base or (doc.get("profile") or {}).get("base_pair")
    return wanted if wanted in session.pairs else (session.pairs[0] if session.pairs else None)


def _shown(session: Session, knob: str, value: str) -> str:
    """A value as the profile names it; `ipsec (lab: vxlan)` when the lab ran another."""
    for t in session.translations:
        if t.get("subject") == f"knob {knob}" and t.get("lab") == value:
            return f"{t.get('original')} (lab: {value})"
    return value


# ---- layouts ---------------------------------------------------------------------------

def _sweep(cells: _Cells, doc: dict[str, Any], base: str | None) -> list[str]:
    session = cells.session
    matrix = (doc.get("plan") or {}).get("matrix") or []
    knob = next((m for m in matrix if m != DIRECTION), None) or "configuration"
    bp = _base(session, doc, base)
    groups = {p: cells.group(p, [knob]) for p in session.pairs}
    div, unit = cells.unit(groups)
    values = sorted(dict.fromkeys(v for g in groups.values() for v in g), key=_natural)
    rows, lat = [], []
    for value in values:
        base_cell = groups.get(bp or "", {}).get(value)
        for pair in session.pairs:
            c = groups[pair].get(value)
            rows.append([pair, value[0], fmt_cell(c, div),
                         "(base)" if pair == bp else cells.delta(base_cell, c)])
            if c is not None and c.rtt.n:
                s = c.rtt
                lat.append([pair, value[0], f"{s.min:.3f}", f"{s.mean:.3f}", f"{s.max:.3f}",
                            f"{s.stdev:.3f}" if s.stdev is not None else "—", str(s.n)])
    out = [f"## Throughput per pair and {knob}", "",
           md_table(["pair", knob, f"throughput ({unit})", f"Δ vs {bp} at the same {knob}"],
                    rows), "", legend(f"{bp} at the same {knob}"), ""]
    out += [f"## Latency per pair and {knob} (ping RTT, ms)", "",
            md_table(["pair", knob, "min", "avg", "max", "stddev", "replies"], lat)
            if lat else "(no ping replies recorded)", ""]
    runs = {p: _run_groups(session, p, [knob]) for p in session.pairs}
    out += [f"## Watches per pair and {knob}", "", _watch_table(session, runs, knob), ""]
    return out


def _watch_table(session: Session, groups: dict[str, dict[tuple[str, ...], list[Run]]],
                 knob: str) -> str:
    """Each watch series (e.g. one per queue) sampled during a cell's runs: mean, min, max."""
    rows = []
    for (pair, _host, name), (times, vals) in sorted(session.watches.items(),
                                                     key=lambda kv: tuple(map(str, kv[0]))):
        if pair is None:
            continue
        t, v = np.asarray(times), np.asarray(vals)
        watch, _, series = name.partition(":")
        for value, runs in groups.get(pair, {}).items():
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


def _before_after(cells: _Cells, doc: dict[str, Any], base: str | None) -> list[str]:
    session = cells.session
    matrix = [m for m in (doc.get("plan") or {}).get("matrix") or [] if m != DIRECTION]
    keys = [*matrix, DIRECTION]
    bp = _base(session, doc, base)
    others = [p for p in session.pairs if p != bp]
    groups = {p: cells.group(p, keys) for p in session.pairs}
    div, unit = cells.unit(groups)
    order = ("tx", "rx", "bidir")
    combos = sorted(dict.fromkeys(c for g in groups.values() for c in g),
                    key=lambda c: (_natural(c[:-1]), order.index(c[-1]) if c[-1] in order
                                   else len(order)))
    rows = []
    for combo in combos:
        base_cell = groups.get(bp or "", {}).get(combo)
        label = [_shown(session, k, v) for k, v in zip(matrix, combo, strict=False)]
        direction = {"tx": "TX", "rx": "RX (-R)", "bidir": "bidir"}.get(combo[-1], combo[-1])
        row = [fmt_cell(base_cell, div)]
        for p in others:
            c = groups[p].get(combo)
            row += [fmt_cell(c, div), cells.delta(base_cell, c)]
        rows.append([*label, direction, *row])
    header = [*matrix, "direction", f"{bp} ({unit})"]
    for p in others:
        header += [f"{p} ({unit})", f"speedup {p} vs {bp}"]
    return ["## Throughput per " + " and ".join([*matrix, "direction"]), "",
            md_table(header, rows), "", legend(bp or "the base pair").replace(
                "Δ: change", "speedup: change"), ""]


def _builds(cells: _Cells, doc: dict[str, Any], base: str | None) -> list[str]:
    session = cells.session
    first = _base(session, doc, base)
    order = [first, *[p for p in session.pairs if p != first]] if first else []
    groups = {p: cells.group(p, []) for p in order}
    div, unit = cells.unit(groups)
    base_cell = groups.get(first or "", {}).get(())
    rows = [[p, fmt_cell(groups[p].get(()), div),
             "(first)" if p == first else cells.delta(base_cell, groups[p].get(()))]
            for p in order]
    return ["## Throughput per build", "",
            md_table(["build", f"throughput ({unit})", f"Δ vs {first}"], rows), "",
            legend(first or "the first build") + " With parallel streams (-P), each "
            "interval is their [SUM].", ""]


_LAYOUTS = {"sweep": _sweep, "before-after": _before_after, "builds": _builds}
