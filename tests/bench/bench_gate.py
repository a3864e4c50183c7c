"""The regression gate's error rates, simulated with its own code (abtui.reports.gate.judge on
run-level values, as `abtui compare --fail-on-regression` judges them), and the cell's verdict
(abtui.reports.stats) beside it. Seeded: the same figures every run.

The session model: sessions as a plan records them, 20 configurations × 2 pairs, n
repetitions, each repetition the configurations in a shuffled order, both pairs at once. A
run's value is its cell's rate × the session's drift at that moment (a linear ramp of up to
±3 % over the session, its own per session, centred) × slowly varying noise (AR(1), φ 0.9,
1 %) × a periodic load (3 % off every 7th run, a job on the hosts' own clock) × the run's own
noise (3 %, lognormal) × a stall now and then (2 % of runs at 0.7×). Rates are quantised to
iperf3's 3 printed digits. Generated vectorised for all gates at once.

What it does not model, on purpose: an offset between the two sessions as a whole (a host
that is 1 % slower after a reboot). That is a difference between the sessions, the gate
cannot tell it from the build's, and no run count removes it.
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np

from abtui.reports import gate, stats
from tests.bench.judge import measures

SEED = 21
CONFIGS, PAIRS = 20, ("A", "B")
SMALL = 5  # the runs a side of a quick session (the error rates at few runs)
RECOMMENDED = gate.RECOMMENDED_RUNS  # the README's runs a side for CI
ALARM_GATES = 600  # A/A gates simulated (binomial standard error at 0.02: 0.006)
POWER_GATES = 200
PASS_GATES = 400  # binomial standard error at 0.9: 0.015


def quantised(x: np.ndarray) -> np.ndarray:
    """Values as iperf3's text prints them: 3 significant digits."""
    scale = 10.0 ** (np.floor(np.log10(x)) - 2)
    return np.round(x / scale) * scale


def sessions(rng: np.random.Generator, count: int, n: int, rates: np.ndarray,
             noise: float = 0.03, stalls: float = 0.02) -> np.ndarray:
    """[session, pair, configuration, repetition] run-level values of `count` sessions of
    `n` repetitions (module docstring); `rates` [session, pair, configuration]."""
    runs = CONFIGS * n
    slope = rng.uniform(-0.03, 0.03, (count, 1))
    drift = 1 + slope * (np.arange(runs) / (runs - 1) - 0.5)
    shocks = rng.standard_normal((count, runs))
    slow = np.empty((count, runs))
    slow[:, 0] = shocks[:, 0]
    for i in range(1, runs):
        slow[:, i] = 0.9 * slow[:, i - 1] + math.sqrt(1 - 0.81) * shocks[:, i]
    load = np.where(np.arange(runs) % 7 == 0, 0.97, 1.0)
    moment = drift * (1 + 0.01 * slow) * load
    # when each (configuration, repetition) ran: its place in its repetition's shuffle
    place = np.argsort(rng.random((count, n, CONFIGS)), axis=2)
    at = np.arange(n)[None, :, None] * CONFIGS + place
    when = np.take_along_axis(moment, at.reshape(count, -1), axis=1).reshape(count, n, CONFIGS)
    s = math.sqrt(math.log(1 + noise**2))
    own = np.exp(s * rng.standard_normal((count, len(PAIRS), n, CONFIGS)) - s * s / 2)
    stall = np.where(rng.random(own.shape) < stalls, 0.7, 1.0)
    values = rates[:, :, None, :] * when[:, None] * own * stall
    return quantised(values.transpose(0, 1, 3, 2))


def gates(rng: np.random.Generator, count: int, n: int, change: np.ndarray,
          threshold: float = 0.0, stalls: float = 0.02, config_drift: float = 0.0
          ) -> list[tuple[list[gate.GateCase], list[float]]]:
    """`count` gates of two sessions of `n` runs a side, the right one's rates × `change`
    [pair, configuration]; each gate's cases and their raw one-sided p (for Holm).
    `config_drift`: besides, each configuration of the right session (on both pairs, the
    hosts' doing) shifted by its own lognormal factor of this spread."""
    rates = rng.uniform(5e9, 20e9, (count, len(PAIRS), CONFIGS))
    left = sessions(rng, count, n, rates, stalls=stalls)
    shift = np.exp(config_drift * rng.standard_normal((count, 1, CONFIGS)))
    right = sessions(rng, count, n, rates * change[None] * shift, stalls=stalls)
    floor = math.log1p(-threshold / 100)
    out = []
    for g in range(count):
        judged = [gate.Judged(p, str(k), left[g, i, k].tolist(), right[g, i, k].tolist())
                  for i, p in enumerate(PAIRS) for k in range(CONFIGS)]
        cases = gate.judge(judged, threshold)
        raw = [c.tested[0].p_below(floor) if c.tested is not None else 1.0 for c in cases]
        out.append((cases, raw))
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


def _alarms(runs: list[tuple[list[gate.GateCase], list[float]]]) -> tuple[float, float]:
    """Share of gates with a regression called, and with one case alone below (no control)."""
    alarms = sum(any(c.failed for c in cases) for cases, _ in runs)
    alone = sum(any(p <= gate.FDR for p in raw) for _, raw in runs)
    return alarms / len(runs), alone / len(runs)


@measures("gate_false_alarm_rate", "gate_false_alarm_rate_n5",
          "gate_uncorrected_false_alarm_rate")
def gate_false_alarms() -> list[dict[str, Any]]:
    """A/A gates at threshold 0 (any significant loss): at the recommended runs and at 5."""
    rng = np.random.default_rng(SEED)
    same = np.ones((len(PAIRS), CONFIGS))
    many = _alarms(gates(rng, ALARM_GATES, RECOMMENDED, same))
    few_runs = gates(rng, ALARM_GATES, SMALL, same)
    few = _alarms(few_runs)
    inconclusive = np.mean([sum(c.answer == gate.INCONCLUSIVE for c in cases) / len(cases)
                        for cases, _ in few_runs])
    model = (f"{CONFIGS} configurations × {len(PAIRS)} pairs, 3 % noise, drift, slow noise, "
             "a periodic load, stalls, 3-digit rates, threshold 0")
    return [{"name": "gate_false_alarm_rate", "value": round(many[0], 4), "unit": "",
             "note": f"{ALARM_GATES} A/A gates, n={RECOMMENDED}, {model}"},
            {"name": "gate_false_alarm_rate_n5", "value": round(few[0], 4), "unit": "",
             "note": f"the same at n={SMALL}; {inconclusive:.2f} of cases inconclusive"},
            {"name": "gate_uncorrected_false_alarm_rate", "value": round(few[1], 4),
             "unit": "", "note": f"the n={SMALL} gates, each case judged alone (no control)"}]


@measures("gate_power_5pct", "gate_power_5pct_one_config", "gate_power_5pct_holm")
def gate_power() -> list[dict[str, Any]]:
    """A real 5 % loss at 3 % noise, 5 runs a side: in every configuration (a change that
    costs throughput everywhere), and in one configuration of 20 (both pairs); the share of
    the regressed cases the gate calls a regression, at threshold 0."""
    rng = np.random.default_rng(SEED + 1)
    records = []
    every = np.full((len(PAIRS), CONFIGS), 0.95)
    one = np.ones((len(PAIRS), CONFIGS))
    one[:, 0] = 0.95
    for name, change in (("gate_power_5pct", every), ("gate_power_5pct_one_config", one)):
        runs = gates(rng, POWER_GATES, SMALL, change)
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
                        "note": f"n={SMALL}: share of the {hit} regressed cases called a "
                                f"regression; Holm (family-wise) instead: {holm_found / hit:.3f};"
                                f" the gate found a regression in {failed / len(runs):.2f} of "
                                f"{len(runs)} gates (Holm: {holm_failed / len(runs):.2f}), passed "
                                f"{passed / len(runs):.2f}"})
        if change is every:
            records.append({"name": "gate_power_5pct_holm", "value": round(holm_found / hit, 3),
                            "unit": "", "note": "the same gates under Holm's step-down"})
    return records


@measures("gate_aa_pass_rate_5pct", "gate_aa_pass_rate_5pct_n5", "gate_catch_10pct_one_case")
def gate_passes() -> list[dict[str, Any]]:
    """What a pass costs and what the gate catches, at threshold 5 % and the recommended runs:
    A/A gates (nothing changed) that pass (every case's interval wholly above -5 %); gates
    whose one case (one pair, one configuration) lost 10 %, that call it a regression."""
    rng = np.random.default_rng(SEED + 3)
    same = np.ones((len(PAIRS), CONFIGS))
    runs = gates(rng, PASS_GATES, RECOMMENDED, same, 5.0)
    whole = np.mean([all(c.answer == gate.PASS for c in cases) for cases, _ in runs])
    shares = np.mean([np.mean([c.answer == gate.PASS for c in cases]) for cases, _ in runs])
    need = [gate.resolution(cases, 5.0) for cases, _ in runs[:50]]
    asked = np.median([r.runs for r in need if r.runs is not None])
    shows = np.median([r.shows for r in need if r.shows is not None])
    clean = gates(rng, PASS_GATES // 4, RECOMMENDED, same, 5.0, stalls=0.0)
    whole_clean = np.mean([all(c.answer == gate.PASS for c in cases) for cases, _ in clean])
    few = gates(rng, PASS_GATES // 4, SMALL, same, 5.0)
    whole_few = np.mean([all(c.answer == gate.PASS for c in cases) for cases, _ in few])
    one = np.ones((len(PAIRS), CONFIGS))
    one[0, 0] = 0.9
    lost = gates(rng, PASS_GATES, RECOMMENDED, one, 5.0)
    caught = np.mean([cases[0].failed for cases, _ in lost])
    alarms = np.mean([any(c.failed for c in cases[1:]) for cases, _ in lost])
    return [{"name": "gate_aa_pass_rate_5pct", "value": round(float(whole), 3), "unit": "",
             "note": f"{PASS_GATES} A/A gates of {CONFIGS * len(PAIRS)} cases at -5 %, "
                     f"n={RECOMMENDED}: {shares:.4f} of cases pass; without stalls "
                     f"{whole_clean:.2f} of gates; the gates' own forecast (median): a "
                     f"pass 9 in 10 times needs {asked:.0f} runs a side, a lone regression "
                     f"shows from {shows:.1f} %"},
            {"name": "gate_aa_pass_rate_5pct_n5", "value": round(float(whole_few), 3),
             "unit": "", "note": f"the same at n={SMALL} ({PASS_GATES // 4} gates)"},
            {"name": "gate_catch_10pct_one_case", "value": round(float(caught), 3), "unit": "",
             "note": f"{PASS_GATES} gates at -5 %, n={RECOMMENDED}, one case of "
                     f"{CONFIGS * len(PAIRS)} 10 % slower: called a regression; another case "
                     f"called one in {alarms:.3f} of them"}]


@measures("verdict_false_claim_unequal_spread", "verdict_power_5pct_n5",
          "verdict_false_claim_quantised")
def verdict_rates() -> list[dict[str, Any]]:
    """The cell's verdict: equal means, 7 runs at 1 % noise against 3 at 6 %; a 5 % change
    at 3 % noise, 5+5 runs; and runs steadier than iperf3's 3 printed digits (0.02 % noise),
    5+5, true change -0.05 %: the printed figures alone."""
    rng = np.random.default_rng(SEED + 2)
    draws = 2000
    claims = sum(stats.verdict((1 + 0.01 * rng.standard_normal(7)).tolist(),
                               (1 + 0.06 * rng.standard_normal(3)).tolist()).significant
                 for _ in range(draws))
    power = sum(stats.verdict((1 + 0.03 * rng.standard_normal(5)).tolist(),
                              (1.05 * (1 + 0.03 * rng.standard_normal(5))).tolist()).significant
                for _ in range(draws))
    base = rng.uniform(9.3e9, 9.5e9, (draws, 1))
    a = quantised(base * (1 + 0.0002 * rng.standard_normal((draws, 5))))
    b = quantised(base * 0.9995 * (1 + 0.0002 * rng.standard_normal((draws, 5))))
    fine = sum(stats.verdict(x.tolist(), y.tolist()).significant for x, y in zip(a, b, strict=True))
    return [{"name": "verdict_false_claim_unequal_spread", "value": round(claims / draws, 4),
             "unit": "", "note": f"{draws} draws, 7+3 runs, 1 % vs 6 % noise, equal means"},
            {"name": "verdict_power_5pct_n5", "value": round(power / draws, 4), "unit": "",
             "note": f"{draws} draws, 5+5 runs, 3 % noise"},
            {"name": "verdict_false_claim_quantised", "value": round(fine / draws, 4),
             "unit": "", "note": f"{draws} draws, 5+5 runs at 9.3-9.5 Gbit/s, 0.02 % noise, "
                                 "-0.05 %, 3 printed digits: significant"}]


DRIFT_GATES = 200  # binomial standard error at 0.4: 0.035


@measures("gate_false_alarm_config_drift_1pct", "gate_false_alarm_config_drift_2pct")
def gate_config_drift() -> list[dict[str, Any]]:
    """What the gate cannot see: nothing changed, but each configuration's rate moved between
    the sessions by its own amount (lognormal, 1 % or 2 % spread, the same on both pairs: a
    host's state that differs per configuration from one day to the next). A/A gates at the
    recommended runs that call a regression, at threshold 0 and at 2 %."""
    rng = np.random.default_rng(SEED + 4)
    same = np.ones((len(PAIRS), CONFIGS))
    out = []
    for spread in (0.01, 0.02):
        at0 = _alarms(gates(rng, DRIFT_GATES, RECOMMENDED, same, 0.0,
                            config_drift=spread))[0]
        at2 = _alarms(gates(rng, DRIFT_GATES // 2, RECOMMENDED, same, 2.0,
                            config_drift=spread))[0]
        out.append({"name": f"gate_false_alarm_config_drift_{spread:.0%}".replace("%", "pct"),
                    "value": round(at0, 3), "unit": "",
                    "note": f"{DRIFT_GATES} A/A gates, n={RECOMMENDED}, each configuration "
                            f"{spread:.0%} apart between the sessions (lognormal), threshold 0;"
                            f" at threshold 2 %: {at2:.3f} ({DRIFT_GATES // 2} gates)"})
    return out


RECORDS = [gate_false_alarms, gate_power, gate_passes, verdict_rates, gate_config_drift]
