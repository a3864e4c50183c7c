"""Run every benchmark module, print a table, write bench-results.json at the repository root.

`python -m tests.bench [NAME-SUBSTRING ...]` runs only the records whose function names match.
"""

from __future__ import annotations

import importlib
import json
import pkgutil
import sys
import time
import traceback
from pathlib import Path

import tests.bench as bench_pkg

ROOT = Path(__file__).resolve().parents[2]


def _collect() -> list:
    funcs = []
    for info in sorted(pkgutil.iter_modules(bench_pkg.__path__), key=lambda i: i.name):
        if not info.name.startswith("bench_"):
            continue
        mod = importlib.import_module(f"tests.bench.{info.name}")
        funcs.extend(getattr(mod, "RECORDS", []))
    return funcs


def main(argv: list[str]) -> int:
    wanted = argv[1:]
    results: list[dict] = []
    failed = 0
    for func in _collect():
        if wanted and not any(w in func.__name__ for w in wanted):
            continue
        t0 = time.monotonic()
        print(f"# {func.__name__} ...", file=sys.stderr, flush=True)
        try:
            out = func()
        except Exception:
            traceback.print_exc()
            failed += 1
            continue
        for rec in out if isinstance(out, list) else [out]:
            rec.setdefault("note", "")
            rec["seconds"] = round(time.monotonic() - t0, 2)
            results.append(rec)
    path = ROOT / "bench-results.json"
    path.write_text(json.dumps({"results": results}, indent=2) + "\n")
    print(f"{'record':<30} {'value':>12} {'unit':<8} {'budget':<10} note")
    for r in results:
        print(f"{r['name']:<30} {r['value']:>12} {r['unit']:<8} {r['budget']!s:<10} {r['note']}")
    print(f"written {path}")
    return 1 if failed else 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv))
