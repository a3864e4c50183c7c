"""The budgets `make bench` holds its records to, and the verdict on each record.

A record is {"name", "value", "unit", "note"}; a record that could not be measured carries
"skipped" (the reason) instead of a value. Its budget comes from BUDGETS, the one table of
them (docs/performance.md describes it), never from the measurement. `judge` adds "budget" and
"status": ok, FAIL (outside its budget, or "failed" names a condition it broke), error (its
measurement raised or returned no value), skipped, or "—" (recorded, no budget). A run fails
when any record is FAIL or error.
"""

from __future__ import annotations

import math
import re
import sys
import traceback
from collections.abc import Callable, Iterable
from typing import Any

# name -> budget: "<= X", ">= X", "== X", "LO..HI" (both inclusive), or None (no budget yet)
BUDGETS: dict[str, str | None] = {
    "knob_flip_4hosts_median_ms": "<= 1.2",
    "knob_flip_vs_openssh_ratio": ">= 100",
    "knob_flip_vs_openssh_mux_ratio": ">= 12",
    "start_skew_p95_ms": "<= 5",
    "ui_latency_p99_ms": "<= 30",
    "console_cpu_2pairs_pct": "<= 2",
    "ui_cpu_8pairs_pct": "<= 10",
    "ui_latency_p99_8pairs_ms": "<= 100",
    "fidelity_exact": "== 1",
    "overhead_ratio": "0.97..1.03",
    "session_24h_rss_mb": "<= 150",
    "session_24h_file_mb": "<= 30",
    "console_24h_rss_mb": "<= 150",
    "parse_lines_per_s": ">= 200000",
    "first_frame_s": "<= 0.5",
    "demo_first_number_warm_s": "<= 3",
    "vm_pair_boot_s": None,
    "gate_false_alarm_rate": "<= 0.05",
    "gate_power_5pct": None,
    "seq_false_claim_rate": "<= 0.06",
    "seq_power_3pct": ">= 0.8",
    "seq_power_3pct_drift": ">= 0.7",
    "seq_estimate_calibration": ">= 0.7",
    "seq_power_3pct_family": None,
    "seq_early_overstatement_pct": None,
    "vm_lab_3pairs_up_s": None,
    # judged in the record against the same run's cold boot / 5 s ("failed" when over)
    "vm_kernel_switch_power_s": None,
    "vm_kernel_switch_kexec_s": None,
    "module_switch_s": None,
}

FAILING = ("FAIL", "error")
_BUDGET = re.compile(r"^\s*(?:(<=|>=|==)\s*([-+\d.eE]+)|([-+\d.eE]+)\s*\.\.\s*([-+\d.eE]+))\s*$")

Bench = Callable[[], "dict[str, Any] | list[dict[str, Any]]"]


def measures(*names: str) -> Callable[[Bench], Bench]:
    """Declare the records a bench function returns, so that when it raises each of them is
    still reported (as an error), and a record it forgets is one too."""
    def mark(func: Bench) -> Bench:
        func.records = names  # type: ignore[attr-defined]
        return func
    return mark


def names_of(func: Bench) -> tuple[str, ...]:
    return getattr(func, "records", (func.__name__,))


def within(value: float, budget: str) -> bool:
    """Whether `value` meets `budget` (see BUDGETS for the forms); ValueError when malformed."""
    m = _BUDGET.match(budget)
    if m is None:
        raise ValueError(f"budget {budget!r}: expected '<= X', '>= X', '== X' or 'LO..HI'")
    if m[1]:
        limit = float(m[2])
        return {"<=": value <= limit, ">=": value >= limit, "==": value == limit}[m[1]]
    return float(m[3]) <= value <= float(m[4])


def judge(record: dict[str, Any], budgets: dict[str, str | None] | None = None
          ) -> dict[str, Any]:
    """The record with its "budget" and "status" set (see the module docstring)."""
    table = BUDGETS if budgets is None else budgets
    rec = {"unit": "", "note": "", **record}
    rec["budget"] = table.get(rec["name"])
    value = rec.get("value")
    if rec.get("status") == "error":
        pass
    elif rec.get("skipped"):
        rec["status"] = "skipped"
        rec["note"] = f"skipped: {rec['skipped']}" + (f"; {rec['note']}" if rec["note"] else "")
    elif not isinstance(value, int | float) or isinstance(value, bool) or math.isnan(value):
        rec["status"] = "error"
        rec["note"] = f"no value measured ({value!r})" + (f"; {rec['note']}" if rec["note"]
                                                         else "")
    elif rec.get("failed"):
        rec["status"] = "FAIL"
        rec["note"] = f"{rec['failed']}; {rec['note']}" if rec["note"] else rec["failed"]
    elif rec["budget"] is None:
        rec["status"] = "—"
    else:
        rec["status"] = "ok" if within(float(value), rec["budget"]) else "FAIL"
    return rec


def error_record(name: str, message: str) -> dict[str, Any]:
    return {"name": name, "value": None, "unit": "", "note": message, "status": "error"}


def measure(func: Bench) -> list[dict[str, Any]]:
    """Run one bench function: its records, or one error record per declared name when it
    raises (the traceback goes to stderr); a declared record it did not return is an error."""
    names = names_of(func)
    try:
        out = func()
    except Exception as exc:
        traceback.print_exc(file=sys.stderr)
        first = str(exc).strip().splitlines()[0] if str(exc).strip() else ""
        message = f"{type(exc).__name__}: {first}" if first else type(exc).__name__
        return [error_record(n, f"{func.__name__} raised {message}") for n in names]
    records = list(out) if isinstance(out, list) else [out]
    got = {r.get("name") for r in records}
    records += [error_record(n, f"{func.__name__} returned no such record")
                for n in names if n not in got]
    return records


def order(records: Iterable[dict[str, Any]]) -> list[dict[str, Any]]:
    """The budget table's order first, then records it has no budget for, by name."""
    rank = {name: i for i, name in enumerate(BUDGETS)}
    return sorted(records, key=lambda r: (rank.get(r["name"], len(rank)), r["name"]))


def exit_code(records: Iterable[dict[str, Any]]) -> int:
    return 1 if any(r["status"] in FAILING for r in records) else 0
