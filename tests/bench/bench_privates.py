"""What each of Textual's privates the console keeps gains over its public path, in one run.

The console (`abtui tui --replay --pairs 8 --interval 0.1`, the stress of `ui_cpu_8pairs_pct`,
tmux 160×48) is run with every private on, and again with one feature turned off
(abtui.ui.render.textual_privates.SWITCH: that feature goes Textual's public way from the
start), and with all of them off, the arms alternated round by round. Each arm's CPU % is
the median of its rounds, its latency (the replay's emit to the refresh that shows it) the
median and p99 of every interval of its rounds; a feature's gain is its arm's figure over
the all-on arm's (`ratio` > 1: the private way is the cheaper one). No budget:
docs/performance.md writes each kept private's gain beside it.

ABTUI_BENCH_PRIVATES names the features measured (comma-separated; default: every feature
that can be turned off), ABTUI_BENCH_PRIVATES_ROUNDS the rounds (default 3).
"""

from __future__ import annotations

import os
import statistics
from collections.abc import Callable
from typing import Any

from abtui.ui.render import textual_privates as tp
from tests.bench.bench_ui import WINDOW, _p99, run_console
from tests.bench.judge import measures
from tests.bench.labs import with_lab

PAIRS, INTERVAL = 8, 0.1
ROUNDS = int(os.environ.get("ABTUI_BENCH_PRIVATES_ROUNDS", "5"))
# what a switch turns off: the guard's reads have no speed to gain (docs/performance.md)
MEASURED = tuple(f for f in tp.FEATURES if f != "restore_terminal")


def _features() -> tuple[str, ...]:
    wanted = [w for w in os.environ.get("ABTUI_BENCH_PRIVATES", "").split(",") if w]
    return tuple(f for f in MEASURED if not wanted or f in wanted)


def _arms(args: list[str] | None = None, warmup: float = 3.0
          ) -> dict[str, dict[str, list[float]]]:
    """Each arm's CPU % per round and latencies (ms): "on", one per feature off, "all
    off"; the console's arguments `args` (the 8-pair replay by default)."""
    args = args or ["--replay", "--pairs", str(PAIRS), "--interval", str(INTERVAL)]
    arms = {"on": "", **{f: f for f in _features()}, "all off": "all"}
    got: dict[str, dict[str, list[float]]] = {a: {"cpu": [], "latency": []} for a in arms}
    names = list(arms)
    for k in range(ROUNDS):
        for arm in names if k % 2 == 0 else names[::-1]:
            r = run_console(args, WINDOW, warmup=warmup, env={tp.SWITCH: arms[arm]})
            got[arm]["cpu"].append(r["cpu_pct"])
            got[arm]["latency"].extend(r["latencies"])
    return got


Figure = tuple[str, str, Callable[[list[float]], float]]  # unit, what it is, how it is made
FIGURES: dict[str, Figure] = {"cpu": ("%cpu", "CPU, the median of the rounds", statistics.median),
                              "median": ("ms", "the median latency", statistics.median),
                              "p99": ("ms", "the p99 latency", _p99)}


def _record(arm: str, got: dict[str, dict[str, list[float]]], live: bool = False
            ) -> list[dict[str, Any]]:
    on = got["on"]
    slug = ("live_" if live else "") + arm.replace(" ", "_")
    what_ran = ("`abtui tui` live on a lab of its own, 2 pairs at 1 s, ping on" if live
                else f"{PAIRS} pairs at {INTERVAL:g} s replayed")
    out = []
    for key, (unit, what, figure) in FIGURES.items():
        runs, ref = (got[arm]["cpu"], on["cpu"]) if key == "cpu" else \
            (got[arm]["latency"], on["latency"])
        listed = (f"{', '.join(f'{x:.2f}' for x in runs)}" if key == "cpu"
                  else f"{len(runs)} intervals")
        out.append({
            "name": f"textual_public_{slug}_{key}", "unit": unit,
            "value": round(figure(runs), 2), "reference": round(figure(ref), 2),
            "reference_note": "every private on: " + (
                ", ".join(f"{x:.2f}" for x in ref) if key == "cpu"
                else f"{len(ref)} intervals"),
            "note": f"{what} with {arm if arm == 'all off' else arm + ' off'} (Textual's "
                    f"public way), {what_ran}, {WINDOW:.0f} s "
                    f"windows, {ROUNDS} rounds alternated: {listed}; "
                    f"load {os.getloadavg()[0]:.1f}"})
    return out


@measures(*(f"textual_public_{a.replace(' ', '_')}_{k}" for a in (*_features(), "all off")
            for k in ("cpu", "median", "p99")))
def textual_privates_gain() -> list[dict[str, Any]]:
    got = _arms()
    return [rec for arm in got if arm != "on" for rec in _record(arm, got)]


@measures(*(f"textual_public_live_{a.replace(' ', '_')}_{k}"
            for a in (*_features(), "all off") for k in ("cpu", "median", "p99")))
def textual_privates_live() -> list[dict[str, Any]]:
    """The same arms on the live console (`console_cpu_2pairs_pct`'s and
    `ui_latency_p99_ms`'s run: its latency from the line's arrival on the SSH channel)."""
    got = with_lab(2, lambda lab: _arms([str(lab.profile_path)], warmup=5.0))
    return [rec for arm in got if arm != "on" for rec in _record(arm, got, live=True)]


RECORDS = [textual_privates_gain, textual_privates_live]
