"""The regression gate's error rates, simulated with its own code (abtui.reports.gate.judge on
run-level values, as `abtui compare --fail-on-regression` judges them), and the cell's verdict
(abtui.reports.stats) beside it. Seeded: the same figures every run.

Sessions as a plan records them: 20 configurations × 2 pairs, 5 repetitions, each repetition
the configurations in a shuffled order, both pairs at once. A run's value is its cell's rate ×
the session's drift at that moment (a linear ramp of up to ±3 % over the session, its own per
session, centred) × slowly varying noise (AR(1), φ 0.9, 1 %) × the run's own noise (3 %,
lognormal) × a stall now and then (2 % of runs at 0.7×).
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np

from abtui.reports import gate, stats
from tests.bench.judge import measures

SEED = 21
CONFIGS, PAIRS, REPS = 20, ("A", "B"), 5
GATES = 600  # A/A gates simulated (binomial standard error at 0.02: 0.006)
POWER_GATES = 200
PASS_GATES = 100  # per stall setting


def session(rng: np.random.Generator, rates: np.ndarray, noise: float = 0.03,
            stalls: float = 0.02) -> np.ndarray:
    """[pair, configuration, repetition] run-level values of one session (module docstring)."""
    runs = CONFIGS * REPS
    slope = rng.uniform(-0.03, 0.03)
    drift = 1 + slope * (np.arange(runs) / (runs - 1) - 0.5)
    slow = np.empty(runs)
    slow[0] = rng.standard_normal()
    for i in range(1, runs):
        slow[i] = 0.9 * slow[i - 1] + math.sqrt(1 - 0.81) * rng.standard_normal()
    moment = drift * (1 + 0.01 * slow)
    order = np.concatenate([rng.permutation(CONFIGS) for _ in range(REPS)])
    out = np.empty((len(PAIRS), CONFIGS, REPS))
    seen = np.zeros(CONFIGS, dtype=int)
    s = math.sqrt(math.log(1 + noise**2))
    for t, k in enumerate(order):
        own = np.exp(s * rng.standard_normal(len(PAIRS)) - s * s / 2)
        stall = np.where(rng.random(len(PAIRS)) < stalls, 0.7, 1.0)
        out[:, k, seen[k]] = rates[:, k] * moment[t] * own * stall
        seen[k] += 1
    return out


def gates(rng: np.random.Generator, count: int, change: np.ndarray, threshold: float = 0.0,
          stalls: float = 0.02) -> list[tuple[list[gate.GateCase], list[float]]]:
    """`count` gates of two sessions, the right one's rates × `change` [pair, configuration];
    each gate's cases and their raw one-sided p (for the Holm comparison)."""
    out = []
    floor = math.log1p(-threshold / 100)
    for _ in range(count):
        rates = rng.uniform(5e9, 20e9, (len(PAIRS), CONFIGS))
        left = session(rng, rates, stalls=stalls)
        right = session(rng, rates * change, stalls=stalls)
        judged = [gate.Judged(p, str(k), left[i, k].tolist(), right[i, k].tolist())
                  for i, p in enumerate(PAIRS) for k in range(CONFIGS)]
        raw = []
        for j in judged:
            w = stats.log_welch(list(j.base), list(j.other))
            raw.append(w.p_below(floor) if isinstance(w, stats.LogWelch) else 1.0)
        out.append((gate.judge(judged, threshold), raw))
    return out


def holm(ps: list[float], alpha: float) -> list[bool]:
    """Holm's step-down rejections (the family-wise alternative the gate was measured
    against)."""
    order = sorted(range(len(ps)), key=ps.__getitem__)
    out = [False] * len(ps)
    for rank, i in enumerate(order):
        if ps[i] > alpha / (len(ps) - rank):
            break
        out[i] = True
    return out


@measures("gate_false_alarm_rate", "gate_uncorrected_false_alarm_rate")
def gate_false_alarms() -> list[dict[str, Any]]:
    rng = np.random.default_rng(SEED)
    runs = gates(rng, GATES, np.ones((len(PAIRS), CONFIGS)))
    alarms = sum(any(c.failed for c in cases) for cases, _ in runs)
    alone = sum(any(p <= gate.FDR for p in raw) for _, raw in runs)
    inconclusive = np.mean([sum(c.answer == gate.INCONCLUSIVE for c in cases) / len(cases)
                            for cases, _ in runs])
    note = (f"{GATES} A/A gates, {CONFIGS} configurations × {len(PAIRS)} pairs, n={REPS}, "
            f"3 % noise, drift, stalls, threshold 0; {inconclusive:.2f} of cases inconclusive")
    return [{"name": "gate_false_alarm_rate", "value": round(alarms / GATES, 4), "unit": "",
             "note": note},
            {"name": "gate_uncorrected_false_alarm_rate", "value": round(alone / GATES, 4),
             "unit": "", "note": "the same gates, each case judged alone (no control)"}]


@measures("gate_power_5pct", "gate_power_5pct_one_config", "gate_power_5pct_holm")
def gate_power() -> list[dict[str, Any]]:
    """A real 5 % loss at 3 % noise: in every configuration (a change that costs throughput
    everywhere), and in one configuration of 20 (both pairs); the share of the regressed
    cases the gate calls a regression, at threshold 0."""
    rng = np.random.default_rng(SEED + 1)
    records = []
    every = np.full((len(PAIRS), CONFIGS), 0.95)
    one = np.ones((len(PAIRS), CONFIGS))
    one[:, 0] = 0.95
    for name, change in (("gate_power_5pct", every), ("gate_power_5pct_one_config", one)):
        runs = gates(rng, POWER_GATES, change)
        hit = found = holm_found = failed = passed = holm_failed = 0
        for cases, raw in runs:
            failed += any(c.failed for c in cases)
            passed += all(c.answer == gate.PASS for c in cases)
            regressed = [i for i, c in enumerate(cases) if change[PAIRS.index(c.pair),
                                                                  int(c.config)] < 1]
            by_holm = holm(raw, gate.FDR)
            holm_failed += any(by_holm)
            hit += len(regressed)
            found += sum(cases[i].failed for i in regressed)
            holm_found += sum(by_holm[i] for i in regressed)
        records.append({"name": name, "value": round(found / hit, 3), "unit": "",
                        "note": f"share of the {hit} regressed cases called a regression; "
                                f"Holm (family-wise) instead: {holm_found / hit:.3f}; the "
                                f"gate found a regression in {failed / len(runs):.2f} of "
                                f"{len(runs)} gates (Holm: {holm_failed / len(runs):.2f}), passed "
                                f"{passed / len(runs):.2f}"})
        if change is every:
            records.append({"name": "gate_power_5pct_holm", "value": round(holm_found / hit, 3),
                            "unit": "", "note": "the same gates under Holm's step-down"})
    return records


@measures("gate_aa_pass_rate_5pct")
def gate_passes() -> dict[str, Any]:
    """What a pass costs: A/A gates (nothing changed) at threshold 5 %, the share that pass
    (every case's interval wholly above -5 %); the note: the share of cases that pass, and
    the same without stalls."""
    rng = np.random.default_rng(SEED + 3)
    shares = []
    for stalls in (0.02, 0.0):
        runs = gates(rng, PASS_GATES, np.ones((len(PAIRS), CONFIGS)), 5.0, stalls)
        shares.append((np.mean([all(c.answer == gate.PASS for c in cases) for cases, _ in runs]),
                       np.mean([np.mean([c.answer == gate.PASS for c in cases])
                                for cases, _ in runs])))
    (whole, cases), (whole_clean, cases_clean) = shares
    return {"name": "gate_aa_pass_rate_5pct", "value": round(float(whole), 3), "unit": "",
            "note": f"{PASS_GATES} A/A gates at -5 %: {cases:.2f} of cases pass; without "
                    f"stalls {whole_clean:.2f} of gates, {cases_clean:.2f} of cases"}


@measures("verdict_false_claim_unequal_spread", "verdict_power_5pct_n5")
def verdict_rates() -> list[dict[str, Any]]:
    """The cell's verdict: equal means, 7 runs at 1 % noise against 3 at 6 %; and a 5 %
    change at 3 % noise, 5+5 runs."""
    rng = np.random.default_rng(SEED + 2)
    draws = 2000
    claims = sum(stats.verdict((1 + 0.01 * rng.standard_normal(7)).tolist(),
                               (1 + 0.06 * rng.standard_normal(3)).tolist()).significant
                 for _ in range(draws))
    power = sum(stats.verdict((1 + 0.03 * rng.standard_normal(5)).tolist(),
                              (1.05 * (1 + 0.03 * rng.standard_normal(5))).tolist()).significant
                for _ in range(draws))
    return [{"name": "verdict_false_claim_unequal_spread", "value": round(claims / draws, 4),
             "unit": "", "note": f"{draws} draws, 7+3 runs, 1 % vs 6 % noise, equal means"},
            {"name": "verdict_power_5pct_n5", "value": round(power / draws, 4), "unit": "",
             "note": f"{draws} draws, 5+5 runs, 3 % noise"}]


RECORDS = [gate_false_alarms, gate_power, gate_passes, verdict_rates]
