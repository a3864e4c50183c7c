"""Run every benchmark, judge each record against its budget (tests/bench/judge.py), print a
table, write bench-results.json at the repository root; exit 1 when any record is FAIL or
error.

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


def table(records: list[dict[str, Any]]) -> str:
    lines = [f"{'record':<32} {'value':>12} {'unit':<8} {'budget':<11} {'status':<7} "
             f"{'load':>5} note"]
    for r in records:
        value = "—" if r.get("value") is None else r["value"]
        lines.append(f"{r['name']:<32} {value!s:>12} {r['unit']:<8} "
                     f"{r['budget'] or '—'!s:<11} {r['status']:<7} {r.get('load', ''):>5} "
                     f"{r['note']}")
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
            records = run(selected(collect(), wanted), everything=not wanted)
        finally:
            for key, value in saved.items():
                if value is None:
                    os.environ.pop(key, None)
                else:
                    os.environ[key] = value
    path = Path(os.environ.get("ABTUI_BENCH_RESULTS") or ROOT / "bench-results.json")
    path.write_text(json.dumps({"results": records}, indent=2) + "\n")
    print(table(records))
    code = j.exit_code(records)
    print(f"written {path}; " + ("every record within its budget" if code == 0 else
                                 "FAILED: a record missed its budget or was not measured"))
    return code


if __name__ == "__main__":
    raise SystemExit(main(sys.argv))
