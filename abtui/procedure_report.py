"""The table each procedure's community expects, chosen by the profile's `[report] layout`:

- `sweep` (ix enable_aim): pair | knob value | throughput | Δ vs the base pair at the same
  value; latency min/avg/max/stddev per pair and value; the watches (interrupt rate per queue)
  per pair and value.
- `before-after` (softirq crypto): per tunnel and direction, the base pair's and the other
  pairs' throughput and the speedup in percent.
- `builds` (WireGuard GRO): throughput per build (pair), Δ vs the first.

Throughput is iperf3's own end-of-run figure (the receiver's line, the `[SUM]` one with
several streams) averaged over the runs of a cell; a run without one counts its intervals'
mean. What the lab ran instead of the profile's settings (`abtui run --lab`) is listed too.
"""

from __future__ import annotations

import math
import tomllib
from collections.abc import Sequence
from typing import Any

import numpy as np

from abtui import stats
from abtui.plots import rate_unit
from abtui.report import md_table
from abtui.session import Run, Session

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


def sections(session: Session, base: str | None) -> list[str]:
    """Markdown lines of the procedure's sections (none without a layout), translations."""
    layout, doc = layout_of(session)
    out: list[str] = []
    builder = _LAYOUTS.get(layout or "")
    if builder is not None:
        out += builder(session, doc, base)
    if session.translations:
        out += ["## Lab translations", "",
                md_table(["what", "profile", "lab", "why"],
                         [[str(t.get("subject", "")), str(t.get("original", "")),
                           str(t.get("lab", "")), str(t.get("why", ""))]
                          for t in session.translations]), ""]
    return out


# ---- values ----------------------------------------------------------------------------

def run_rate(session: Session, run: Run) -> float | None:
    """iperf3's figure for a run (receiver, else sender), else its intervals' mean."""
    s = run.summary or {}
    for key in ("receiver_bits_per_second", "sender_bits_per_second"):
        v = s.get(key)
        if isinstance(v, int | float) and not isinstance(v, bool) and v > 0:
            return float(v)
    mean = stats.run_stats(session, run)["throughput"].mean
    return mean if mean else None


def _groups(session: Session, pair: str, keys: Sequence[str]) -> dict[tuple[str, ...],
                                                                       list[Run]]:
    out: dict[tuple[str, ...], list[Run]] = {}
    for r in session.runs_of(pair):
        if r.status in ("ok", "stopped"):
            out.setdefault(tuple(str(r.config.get(k, "—")) for k in keys), []).append(r)
    return out


def _rates(session: Session, runs: Sequence[Run]) -> list[float]:
    return [v for v in (run_rate(session, r) for r in runs) if v is not None]


def _fmt(rates: Sequence[float], div: float) -> str:
    if not rates:
        return "—"
    s = stats.summarize(rates)
    text = f"{s.mean / div:.2f}" if s.mean is not None else "—"
    return text + (f" ± {s.stdev / div:.2f}" if s.stdev is not None else "") + (
        f" (n={s.n})" if s.n > 1 else "")


def _pct(base: Sequence[float], other: Sequence[float]) -> str:
    if not base or not other:
        return "—"
    b, o = float(np.mean(base)), float(np.mean(other))
    return f"{(o - b) / b * 100:+.1f}%" if b else "—"


def _natural(key: tuple[str, ...]) -> tuple[Any, ...]:
    """Numbers in numeric order, before words."""
    out: list[Any] = []
    for v in key:
        try:
            out.append((0, float(v), ""))
        except ValueError:
            out.append((1, 0.0, v))
    return tuple(out)


def _unit(session: Session) -> tuple[float, str]:
    peak = max((v for r in session.runs for v in [run_rate(session, r)] if v), default=0.0)
    return rate_unit(peak)


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

def _sweep(session: Session, doc: dict[str, Any], base: str | None) -> list[str]:
    matrix = (doc.get("plan") or {}).get("matrix") or []
    knob = next((m for m in matrix if m != DIRECTION), None) or "configuration"
    bp = _base(session, doc, base)
    div, unit = _unit(session)
    groups = {p: _groups(session, p, [knob]) for p in session.pairs}
    values = sorted(dict.fromkeys(v for g in groups.values() for v in g), key=_natural)
    rows, lat = [], []
    for value in values:
        base_rates = _rates(session, groups.get(bp or "", {}).get(value, []))
        for pair in session.pairs:
            runs = groups[pair].get(value, [])
            rates = _rates(session, runs)
            rows.append([pair, value[0], _fmt(rates, div),
                         "(base)" if pair == bp else _pct(base_rates, rates)])
            rtt = stats.values(session, pair, "rtt", runs=[r.index for r in runs])
            if rtt.size:
                s = stats.summarize(rtt)
                lat.append([pair, value[0], f"{s.min:.3f}", f"{s.mean:.3f}", f"{s.max:.3f}",
                            f"{s.stdev:.3f}" if s.stdev is not None else "—", str(s.n)])
    out = [f"## Throughput per pair and {knob}", "",
           md_table(["pair", knob, f"throughput ({unit})", f"Δ vs {bp} at the same {knob}"],
                    rows), "",
           f"iperf3's end-of-run figure (receiver), mean ± stdev over runs; Δ: change of the "
           f"mean vs {bp}.", ""]
    out += [f"## Latency per pair and {knob} (ping RTT, ms)", "",
            md_table(["pair", knob, "min", "avg", "max", "stddev", "replies"], lat)
            if lat else "(no ping replies recorded)", ""]
    out += [f"## Watches per pair and {knob}", "", _watch_table(session, groups, knob), ""]
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


def _before_after(session: Session, doc: dict[str, Any], base: str | None) -> list[str]:
    matrix = [m for m in (doc.get("plan") or {}).get("matrix") or [] if m != DIRECTION]
    keys = [*matrix, DIRECTION]
    bp = _base(session, doc, base)
    others = [p for p in session.pairs if p != bp]
    div, unit = _unit(session)
    groups = {p: _groups(session, p, keys) for p in session.pairs}
    order = ("tx", "rx", "bidir")
    combos = sorted(dict.fromkeys(c for g in groups.values() for c in g),
                    key=lambda c: (_natural(c[:-1]), order.index(c[-1]) if c[-1] in order
                                   else len(order)))
    rows = []
    for combo in combos:
        base_rates = _rates(session, groups.get(bp or "", {}).get(combo, []))
        label = [_shown(session, k, v) for k, v in zip(matrix, combo, strict=False)]
        direction = {"tx": "TX", "rx": "RX (-R)", "bidir": "bidir"}.get(combo[-1], combo[-1])
        cells = [_fmt(base_rates, div)]
        for p in others:
            rates = _rates(session, groups[p].get(combo, []))
            cells += [_fmt(rates, div), _pct(base_rates, rates)]
        rows.append([*label, direction, *cells])
    header = [*matrix, "direction", f"{bp} ({unit})"]
    for p in others:
        header += [f"{p} ({unit})", f"speedup {p} vs {bp}"]
    return ["## Throughput per " + " and ".join([*matrix, "direction"]), "",
            md_table(header, rows), "",
            "iperf3's end-of-run figure (receiver), mean ± stdev over runs; speedup: change "
            f"of the mean vs {bp}.", ""]


def _builds(session: Session, doc: dict[str, Any], base: str | None) -> list[str]:
    div, unit = _unit(session)
    first = _base(session, doc, base)
    order = [first, *[p for p in session.pairs if p != first]] if first else []
    all_rates = {p: _rates(session, [r for r in session.runs_of(p)
                                     if r.status in ("ok", "stopped")]) for p in order}
    rows = [[p, _fmt(all_rates[p], div),
             "(first)" if p == first else _pct(all_rates[first or ""], all_rates[p])]
            for p in order]
    return ["## Throughput per build", "",
            md_table(["build", f"throughput ({unit})", f"Δ vs {first}"], rows), "",
            "iperf3's end-of-run figure (receiver; the [SUM] line with parallel streams), "
            "mean ± stdev over runs.", ""]


_LAYOUTS = {"sweep": _sweep, "before-after": _before_after, "builds": _builds}
