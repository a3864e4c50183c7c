"""Export from the console: the phase table as md, csv or json.

HOOK for the integrator: when abtui.report lands on main, `export` should hand the session to
it (same formats, DESIGN.md §3 json shape) and this fallback, which writes only what the
console holds (per-phase means, counts, Δ vs the base pair), can go.
"""

from __future__ import annotations

import csv
import io
import json
import math
from pathlib import Path

from abtui.ui.state import ConsoleState, significance

FORMATS = ("md", "csv", "json")


def _rows(state: ConsoleState) -> list[dict[str, object]]:
    out = []
    for row in state.phases.values():
        base = row.per_pair.get(state.base)
        for label in state.pairs:
            r = row.per_pair.get(label)
            if r is None or not r.n:
                continue
            delta = None
            if label != state.base and base is not None and base.n and base.mean:
                delta = round((r.mean / base.mean - 1) * 100, 2)
            out.append({
                "pair": label, "config": dict(row.config), "intervals": r.n,
                "summary": {"sender_bits_per_second": r.mean, "min_bits_per_second": r.lo,
                            "max_bits_per_second": r.hi,
                            "stddev_bits_per_second": None if math.isnan(r.var)
                            else math.sqrt(r.var)},
                "delta_percent": delta,
                "significance": significance(r, base) if delta is not None and base else "",
            })
    return out


def render(state: ConsoleState, fmt: str) -> str:
    rows = _rows(state)
    if fmt == "json":
        return json.dumps({"profile": state.profile.name, "base_pair": state.base,
                           "pairs": list(state.pairs), "phases": rows}, indent=2) + "\n"
    knobs = [k.name for k in state.profile.knobs]
    header = ["pair", *knobs, "intervals", "mean_gbit_s", "delta_pct", "sig"]
    lines = [[r["pair"], *(r["config"].get(k, "") for k in knobs),  # type: ignore[attr-defined]
              r["intervals"], f"{r['summary']['sender_bits_per_second'] / 1e9:.3f}",  # type: ignore[index]
              "" if r["delta_percent"] is None else f"{r['delta_percent']:+.2f}",
              r["significance"]] for r in rows]
    if fmt == "csv":
        buf = io.StringIO()
        w = csv.writer(buf)
        w.writerow(header)
        w.writerows(lines)
        return buf.getvalue()
    if fmt == "md":
        md = ["| " + " | ".join(header) + " |", "|" + "---|" * len(header)]
        md += ["| " + " | ".join(str(c) for c in line) + " |" for line in lines]
        return "\n".join(md) + "\n"
    raise ValueError(f"unknown export format {fmt!r} (md, csv, json)")


def export(state: ConsoleState, path: Path, fmt: str) -> Path:
    """Write the export; returns the absolute path written."""
    path = Path(path).expanduser().resolve()
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(render(state, fmt))
    return path
