"""The budgets `make bench` holds its records to, and the verdict on each record.

A record is {"name", "value", "unit", "note"}; a record that could not be measured carries
"skipped" (the reason) instead of a value. A speed record also carries "reference": the same
figure of a reference measured in the same run, alternated with it (what a person does by hand,
a bare Textual app, a plain `str.split` loop), and "reference_note" saying what it is. The
machines these benches run on are shared and their speed moves by 2x from one run to the next,
so a speed budget judges the record against its reference, never alone: its absolute value is
kept beside it as a record.

Its budget comes from BUDGETS, the one table of them (docs/performance.md describes it), never
from the measurement. `judge` adds "budget" and "status": ok, FAIL (outside its budget, or
"failed" names a condition it broke), error (its measurement raised or returned no value, a
reference budget found no reference, or a speed record was given an absolute budget), skipped,
or "—" (recorded, no budget); and, with a reference, "ratio" (value / reference) and "judged"
(the figure the budget applies to). A run fails when any record is FAIL or error.

A record measured in rounds, each alternated with its reference, may carry "rounds": each
round's [value, reference]. Then "ratio" and "judged" are the medians of the rounds' own
figures, not the figure of the two medians: a round's value and its reference ran minutes
apart at most, so a load that moves during the run moves both, and a slow round of one arm
beside a fast round of the other is one round of many, not the median of either.
"""

from __future__ import annotations

import contextlib
import math
import re
import statistics
import sys
import traceback
from collections.abc import Callable, Iterable
from typing import Any

# name -> budget, or None (recorded, no budget yet). On the value: "<= X", ">= X", "== X",
# "LO..HI" (both inclusive), for what the machine's speed does not move (memory, file size,
# simulated statistics). Against the record's same-run reference: "ratio OP X" (value /
# reference), "speedup OP X" (reference / value), "diff OP X" (value - reference, in its unit).
BUDGETS: dict[str, str | None] = {
    "knob_flip_4hosts_median_ms": "ratio <= 1.5",
    "knob_flip_vs_openssh_mux_ms": "speedup >= 20",  # 12 until 2026-12-07 (issue 50)
    "knob_flip_vs_openssh_ms": "speedup >= 100",
    "start_skew_p95_ms": "diff <= 5",
    "ui_latency_p99_ms": "diff <= 10",
    "console_cpu_2pairs_pct": "ratio <= 2",  # 3 until 2026-12-07; moonshot 1.5
    "ui_cpu_8pairs_pct": "ratio <= 5",
    "ui_latency_p99_8pairs_ms": "diff <= 100",
    "fidelity_exact": "== 1",
    "overhead_ratio": "0.97..1.03",
    "why_false_moved_rate": "<= 0.05",
    "why_power_2pp": ">= 0.8",
    "profile_overhead_pct": "<= 2",
    "profile_session_mb_per_min": "<= 5",
    "session_24h_rss_mb": "<= 150",
    "session_24h_file_mb": "<= 30",
    "console_24h_rss_mb": "<= 150",
    "parse_lines_per_s": "ratio >= 0.5",
    "first_frame_s": "ratio <= 1.3",  # 1.5 until 2026-12-07
    "demo_first_number_warm_s": "ratio <= 3",
    "vm_pair_boot_s": None,
    "gate_false_alarm_rate": "<= 0.05",
    "gate_false_alarm_rate_n5": "<= 0.05",
    "gate_aa_pass_rate_5pct": ">= 0.9",
    "gate_catch_10pct_one_case": ">= 0.8",
    "verdict_false_claim_quantised": "<= 0.05",
    "gate_power_5pct": None,
    "gate_false_alarm_config_drift_1pct": None,
    "gate_false_alarm_config_drift_2pct": None,
    "seq_false_claim_rate": "<= 0.06",
    "seq_power_3pct": ">= 0.8",
    "seq_power_3pct_drift": ">= 0.7",
    "seq_estimate_calibration": ">= 0.7",
    "seq_power_3pct_family": None,
    "seq_early_overstatement_pct": None,
    "seq_false_claim_rate_old": None,
    "seq_crossover_false_claim_rate": "<= 0.06",
    "seq_crossover_power_3pct": None,
    "seq_restart_every_false_claim_rate": "<= 0.06",
    "seq_carryover_false_claim_rate": "<= 0.06",
    "seq_power_3pct_one_dead": ">= 0.7",
    "seq_aa_one_dead_median_delta_pct": "<= 5",
    "seq_dead_value_called_worse": ">= 0.7",
    "seq_dead_value_no_difference": "<= 0",
    "bisect_wrong_rate": "<= 0.05",
    "bisect_blocks_median": None,
    "verdict_stretches_10x": "<= 12",
    "vm_lab_3pairs_up_s": None,
    # against the same run's cold boot of the same VM pair
    "vm_kernel_switch_power_s": "ratio <= 1.5",
    "vm_kernel_switch_kexec_s": "ratio <= 1.5",
    # the absolute 5 s target, judged in the record itself ("failed" when over): a
    # module reload inside an emulated guest has no same-run peer yet
    "module_switch_s": None,
    # the lab's two clocks as instruments (tests/bench/bench_icount.py, issue 47): the
    # instruction-counted lane budgeted, the plain lane recorded beside it
    "vm_plain_boot_s": None,
    "vm_plain_within_cv_pct": None,
    "vm_plain_between_cv_pct": None,
    "vm_plain_power_10pct_16boots": None,
    "vm_icount_boot_s": None,
    "vm_icount_within_cv_pct": "<= 2",
    "vm_icount_between_cv_pct": "<= 3",
    "vm_icount_power_10pct_16boots": ">= 0.8",
}

FAILING = ("FAIL", "error")
_LIMIT = r"(<=|>=|==)\s*([-+\d.eE]+)"
_BUDGET = re.compile(rf"^\s*(?:{_LIMIT}|([-+\d.eE]+)\s*\.\.\s*([-+\d.eE]+))\s*$")
# what a reference budget judges: the record's value against its same-run reference
_AGAINST: dict[str, Callable[[float, float], float]] = {
    "ratio": lambda value, ref: value / ref,
    "speedup": lambda value, ref: ref / value,
    "diff": lambda value, ref: value - ref,
}
_REFERENCED = re.compile(rf"^\s*({'|'.join(_AGAINST)})\s+(.*)$")
# units of a time or a speed: the machine's phase moves them, so their budgets are references
_SPEED_UNITS = frozenset({"ns", "us", "ms", "s", "%cpu"})

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
    """Whether `value` meets an absolute `budget` (see BUDGETS for the forms); ValueError when
    malformed."""
    m = _BUDGET.match(budget)
    if m is None:
        raise ValueError(f"budget {budget!r}: expected '<= X', '>= X', '== X' or 'LO..HI'")
    if m[1]:
        limit = float(m[2])
        return {"<=": value <= limit, ">=": value >= limit, "==": value == limit}[m[1]]
    return float(m[3]) <= value <= float(m[4])


def against(budget: str) -> tuple[str, str] | None:
    """("ratio" | "speedup" | "diff", the absolute limit) for a budget against the record's
    reference, None for an absolute budget; ValueError when malformed."""
    m = _REFERENCED.match(budget)
    if m is None:
        within(0.0, budget)  # raises when malformed
        return None
    try:
        limit_of(m[2])
    except ValueError:
        raise ValueError(f"budget {budget!r}: expected '{m[1]} <= X' or '{m[1]} >= X'") \
            from None
    return m[1], m[2]


def limit_of(condition: str) -> float:
    """X of a "<= X", ">= X" or "== X" condition (the limit `against` returns); ValueError
    when malformed."""
    m = re.match(rf"^\s*{_LIMIT}\s*$", condition)
    if m is None:
        raise ValueError(f"condition {condition!r}: expected '<= X', '>= X' or '== X'")
    return float(m[2])


def is_speed(unit: str) -> bool:
    """A time or a speed: what the machine's phase moves."""
    return unit in _SPEED_UNITS or unit.endswith("/s")


def _number(x: object) -> bool:
    return isinstance(x, int | float) and not isinstance(x, bool) and not math.isnan(x)


def _with_note(rec: dict[str, Any], text: str) -> str:
    return f"{text}; {rec['note']}" if rec["note"] else text


def judge(record: dict[str, Any], budgets: dict[str, str | None] | None = None
          ) -> dict[str, Any]:
    """The record with its "budget" and "status" set, and with a reference its "ratio" and
    "judged" (see the module docstring)."""
    table = BUDGETS if budgets is None else budgets
    rec = {"unit": "", "note": "", **record}
    rec["budget"] = budget = table.get(rec["name"])
    value, ref = rec.get("value"), rec.get("reference")
    form = against(budget) if budget is not None else None
    if _number(value) and _number(ref):
        kind = form[0] if form else "ratio"
        pairs = _rounds(rec) or [(float(value), float(ref))]
        rec["ratio"] = None
        with contextlib.suppress(ZeroDivisionError):
            rec["ratio"] = round(statistics.median(v / r for v, r in pairs), 4)
        if value or kind != "speedup":
            with contextlib.suppress(ZeroDivisionError):
                rec["judged"] = round(statistics.median(_AGAINST[kind](v, r)
                                                        for v, r in pairs), 4)
    if rec.get("status") == "error":
        pass
    elif rec.get("skipped"):
        rec["status"] = "skipped"
        rec["note"] = _with_note(rec, f"skipped: {rec['skipped']}")
    elif not _number(value):
        rec["status"] = "error"
        rec["note"] = _with_note(rec, f"no value measured ({value!r})")
    elif rec.get("failed"):
        rec["status"] = "FAIL"
        rec["note"] = _with_note(rec, rec["failed"])
    elif budget is None:
        rec["status"] = "—"
    elif form is None and is_speed(rec["unit"]):
        rec["status"] = "error"
        rec["note"] = _with_note(rec, f"a speed budget ({budget}) must be against a same-run "
                                      "reference (ratio, speedup or diff), not absolute")
    elif form is None:
        rec["status"] = "ok" if within(float(value), budget) else "FAIL"
    elif rec.get("judged") is None:
        rec["status"] = "error"
        rec["note"] = _with_note(rec, f"no same-run reference ({ref!r}) for its budget {budget}")
    else:
        rec["status"] = "ok" if within(rec["judged"], form[1]) else "FAIL"
    return rec


def _rounds(rec: dict[str, Any]) -> list[tuple[float, float]]:
    """The record's rounds ([value, reference] each, alternated), those with both figures."""
    return [(float(v), float(r)) for v, r in rec.get("rounds") or []
            if _number(v) and _number(r)]


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
