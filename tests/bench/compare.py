"""Two `make bench` results side by side: each record's ratio to its same-run reference in
both, and how far apart they are, with each run's calibration. The references are there so
that a record's ratio holds still while the machine's speed moves: two runs at different loads
should give ratios within TOLERANCE of each other.

`python -m tests.bench.compare A.json B.json` prints the table; it exits 1 when a record's
ratios are further apart than TOLERANCE (or a record has a ratio in one run only).
"""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

from tests.bench.calibrate import line

TOLERANCE = 0.20


def _ratios(path: Path) -> tuple[dict[str, Any], dict[str, float | None]]:
    got = json.loads(path.read_text())
    return got.get("calibration", {}), {r["name"]: r.get("ratio") for r in got["results"]
                                        if r.get("reference") is not None}


def spread(a: float, b: float) -> float:
    """How far apart two ratios are, as a share of the smaller."""
    return abs(a - b) / min(abs(a), abs(b))


def compare(a: Path, b: Path) -> tuple[list[str], bool]:
    cal_a, ra = _ratios(a)
    cal_b, rb = _ratios(b)
    lines = [f"A: {a}", *(line(w, cal_a[w]) for w in ("start", "end") if w in cal_a),
             f"B: {b}", *(line(w, cal_b[w]) for w in ("start", "end") if w in cal_b),
             f"{'record':<32} {'ratio A':>9} {'ratio B':>9} {'apart':>7}"]
    ok = True
    for name in sorted(set(ra) | set(rb)):
        x, y = ra.get(name), rb.get(name)
        if x is None or y is None or not x or not y:
            ok = False
            lines.append(f"{name:<32} {x!s:>9} {y!s:>9}       — a ratio missing")
            continue
        apart = spread(x, y)
        ok &= apart <= TOLERANCE
        lines.append(f"{name:<32} {x:>9.4g} {y:>9.4g} {apart:>6.0%}"
                     + ("" if apart <= TOLERANCE else f"  > {TOLERANCE:.0%}"))
    return lines, ok


def main(argv: list[str]) -> int:
    if len(argv) != 3:
        print("usage: python -m tests.bench.compare A.json B.json", file=sys.stderr)
        return 2
    try:
        lines, ok = compare(Path(argv[1]), Path(argv[2]))
    except (OSError, ValueError, KeyError) as exc:
        print(f"compare: cannot read the results: {exc}", file=sys.stderr)
        return 2
    print("\n".join(lines))
    return 0 if ok else 1


if __name__ == "__main__":
    raise SystemExit(main(sys.argv))
