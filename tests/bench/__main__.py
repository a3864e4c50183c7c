"""Run every benchmark, judge each record against its budget (tests/bench/judge.py), print a
table (value, same-run reference, the figure judged, budget), write bench-results.json at the
repository root; exit 1 when any record is FAIL or error. The machine's speed is calibrated at
the start and the end (tests/bench/calibrate.py), printed and written beside the records.

`python -m tests.bench [SUBSTRING ...]` runs only the bench functions whose name, or the name of
a record they make, contains one of the substrings. ABTUI_BENCH_RESULTS names another file for
the results (the runner's own tests use it).
"""

from __future__ import annotations

import importlib
import json
import os
import pkgutil
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import tests.bench as bench_pkg
from tests.bench import calibrate
from tests.bench import judge as j

ROOT = Path(__file__).resolve().parents[2]


def collect() -> list[j.Bench]:
    funcs: list[j.Bench] = []
    for info in sorted(pkgutil.iter_modules(bench_pkg.__path__), key=lambda i: i.name):
        if info.name.startswith("bench_"):
            mod = importlib.import_module(f"tests.bench.{info.name}")
            funcs.extend(getattr(mod, "RECORDS", []))
    return funcs


def selected(funcs: list[j.Bench], wanted: list[str]) -> list[j.Bench]:
    if not wanted:
        return funcs
    return [f for f in funcs if any(w in name for w in wanted
                                    for name in (f.__name__, *j.names_of(f)))]


def run(funcs: list[j.Bench], everything: bool) -> list[dict[str, Any]]:
    """Every record of `funcs`, judged; with `everything`, a budgeted record that no function
    makes is an error too."""
    records: list[dict[str, Any]] = []
    for func in funcs:
        print(f"# {func.__name__} ...", file=sys.stderr, flush=True)
        t0 = time.monotonic()
        for rec in j.measure(func):
            rec["seconds"] = round(time.monotonic() - t0, 2)
            rec["load"] = round(os.getloadavg()[0], 1)  # the machine's, when it was measured
            records.append(rec)
    if everything:
        made = {r["name"] for r in records}
        records += [j.error_record(n, "no bench function makes this record")
                    for n in j.BUDGETS if n not in made]
    return j.order(j.judge(r) for r in records)


def _figure(x: object) -> str:
    return "—" if x is None else f"{x:.4g}" if isinstance(x, float) else str(x)


def _judged(r: dict[str, Any]) -> str:
    """The figure the budget judged, as its budget reads it: 0.41x, 19.4x faster, +3.2."""
    judged = r.get("judged")
    if judged is None:
        return "—"
    form = j.against(r["budget"]) if r.get("budget") else None
    kind = form[0] if form else "ratio"
    return {"ratio": f"{judged:.3g}x", "speedup": f"{judged:.3g}x faster",
            "diff": f"{judged:+.3g}"}[kind]


def table(records: list[dict[str, Any]]) -> str:
    lines = [f"{'record':<32} {'value':>10} {'unit':<7} {'reference':>10} {'vs ref':>13} "
             f"{'budget':<15} {'status':<7} {'load':>5} note"]
    for r in records:
        lines.append(f"{r['name']:<32} {_figure(r.get('value')):>10} {r['unit']:<7} "
                     f"{_figure(r.get('reference')):>10} {_judged(r):>13} "
                     f"{r['budget'] or '—'!s:<15} {r['status']:<7} {r.get('load', ''):>5} "
                     + (f"reference: {r['reference_note']}; " if r.get("reference_note")
                        else "") + r["note"])
    counts = {s: sum(r["status"] == s for r in records) for s in ("ok", "FAIL", "error",
                                                                    "skipped", "—")}
    lines.append(", ".join(f"{n} {s if s != '—' else 'without budget'}"
                           for s, n in counts.items() if n))
    return "\n".join(lines)


def main(argv: list[str]) -> int:
    wanted = argv[1:]
    # no bench reads or writes the user's abtui state and data (undo journal, sessions): the
    # run gets folders of its own, inherited by every abtui it starts
    saved = {k: os.environ.get(k) for k in ("XDG_STATE_HOME", "XDG_DATA_HOME")}
    with tempfile.TemporaryDirectory(prefix="abtui-bench-home-") as home:
        os.environ.update(XDG_STATE_HOME=f"{home}/state", XDG_DATA_HOME=f"{home}/data")
        try:
            start = calibrate.calibrate()
            print(calibrate.line("start", start), file=sys.stderr, flush=True)
            records = run(selected(collect(), wanted), everything=not wanted)
            end = calibrate.calibrate()
        finally:
            for key, value in saved.items():
                if value is None:
                    os.environ.pop(key, None)
                else:
                    os.environ[key] = value
    path = Path(os.environ.get("ABTUI_BENCH_RESULTS") or ROOT / "bench-results.json")
    path.write_text(json.dumps({"calibration": {"start": start, "end": end},
                                "results": records}, indent=2) + "\n")
    print(calibrate.line("start", start))
    print(table(records))
    print(calibrate.line("end", end))
    code = j.exit_code(records)
    print(f"written {path}; " + ("every record within its budget" if code == 0 else
                                 "FAILED: a record missed its budget or was not measured"))
    return code


if __name__ == "__main__":
    raise SystemExit(main(sys.argv))
