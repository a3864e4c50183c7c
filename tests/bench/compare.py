"""Two `make bench` results side by side: each record's figure against its same-run reference
in both, and how far apart they are, with each run's calibration. The references are there so
that what a budget judges holds still while the machine's speed moves: two runs at different
loads should give figures within TOLERANCE of each other.

A record budgeted as a ratio or a speedup is compared by its ratio (value / reference), as a
share of the smaller. A record budgeted as a difference ("diff <= X": a latency within X ms of
the plain terminal's) is compared by that difference, as a share of X: its ratio divides by a
reference that is near zero on a quiet machine (a terminal's p99 of 0.5 ms), so the ratio of
the same +8 ms moves by 5x with the reference's own noise, which is not what the budget judges.
The ratio is printed beside it all the same.

`python -m tests.bench.compare A.json B.json` prints the table; it exits 1 when a record's
figures are further apart than TOLERANCE (or a record has a figure in one run only).
"""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

from tests.bench.calibrate import line
from tests.bench.judge import against, limit_of

TOLERANCE = 0.20


def _records(path: Path) -> tuple[dict[str, Any], dict[str, dict[str, Any]]]:
    got = json.loads(path.read_text())
    return got.get("calibration", {}), {r["name"]: r for r in got["results"]
                                        if r.get("reference") is not None}


def spread(a: float, b: float) -> float:
    """How far apart two ratios are, as a share of the smaller."""
    return abs(a - b) / min(abs(a), abs(b))


def _form(rec: dict[str, Any]) -> tuple[str, str] | None:
    """The record's budget against its reference ("ratio" | "speedup" | "diff", the limit)."""
    return against(rec["budget"]) if rec.get("budget") else None


def _row(name: str, x: dict[str, Any] | None, y: dict[str, Any] | None) -> tuple[str, bool]:
    rx, ry = (x or {}).get("ratio"), (y or {}).get("ratio")
    form = _form(x or y or {})
    kind = form[0] if form else "ratio"
    # a difference is compared on its budget's scale, X of "diff <= X"
    limit = abs(limit_of(form[1])) if form and kind == "diff" else 0.0
    if limit:
        dx, dy = (x or {}).get("judged"), (y or {}).get("judged")
        if dx is None or dy is None:
            return f"{name:<32} {dx!s:>9} {dy!s:>9}       — a difference missing", False
        apart = abs(dx - dy) / limit
        ratios = f"ratios {rx:.3g} and {ry:.3g}" if rx and ry else "a ratio missing"
        return (f"{name:<32} {dx:>+9.4g} {dy:>+9.4g} {apart:>6.0%}"
                + ("" if apart <= TOLERANCE else f"  > {TOLERANCE:.0%}")
                + f"  (diff, as a share of its budget's {limit:g}; {ratios})"), \
            apart <= TOLERANCE
    if not rx or not ry:
        return f"{name:<32} {rx!s:>9} {ry!s:>9}       — a ratio missing", False
    apart = spread(rx, ry)  # a speedup's spread is its ratio's: shown as the speedup
    speedup = kind == "speedup"
    fx, fy = (1 / rx, 1 / ry) if speedup else (rx, ry)
    return (f"{name:<32} {fx:>9.4g} {fy:>9.4g} {apart:>6.0%}"
            + ("" if apart <= TOLERANCE else f"  > {TOLERANCE:.0%}")
            + ("  (speedup)" if speedup else "")), apart <= TOLERANCE


def compare(a: Path, b: Path) -> tuple[list[str], bool]:
    cal_a, ra = _records(a)
    cal_b, rb = _records(b)
    lines = [f"A: {a}", *(line(w, cal_a[w]) for w in ("start", "end") if w in cal_a),
             f"B: {b}", *(line(w, cal_b[w]) for w in ("start", "end") if w in cal_b),
             f"{'record':<32} {'A':>9} {'B':>9} {'apart':>7}"]
    ok = True
    for name in sorted(set(ra) | set(rb)):
        text, held = _row(name, ra.get(name), rb.get(name))
        lines.append(text)
        ok &= held
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
