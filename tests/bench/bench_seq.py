"""The live sequential verdict, simulated (tests/bench/seqsim.py: the project's own schedule,
boundary, block pairing and rule, vectorised; seeded):

- `seq_false_claim_rate`: A/A alternations, the share of runs in which any comparison of the
  family turned significant, worst scenario. Families 1 pair × 2 values, 2 × 2 and 1 × 3 on
  the clock (seqsim.timed_rates: a flip's time, 0.02–0.3 or 0.5–3 stretches; iperf3's
  intervals on their own clock, restarted by a flip; periodic loads of 2–7 stretches and one
  block; stretches that die on any value; rates printed with 3 significant digits; drift),
  and 2 × 2 and 2 × 3 under last round's noise models (seqsim.NULLS: independent noise,
  drift, AR(1), periodic loads averaged over the stretch, stalls). 20 stretches a value at
  most.
- `seq_false_claim_rate_old` (no budget): last round's boundary, blocks and rule on the
  clocked periodic scenarios: the audit's failures, reproduced.
- `seq_power_3pct`: one pair, two values, a true 3 % difference, 3 % noise a stretch, on the
  clock: the share found significant within 20 stretches a value; `seq_power_3pct_drift`
  the same with a −5 % drift over the run.
- `verdict_stretches_10x`: 2 pairs × 2 values, a difference of ten times the noise (3 % a
  stretch): the median number of stretches before every comparison is significant.
- `seq_estimate_calibration`: of the looks that said "about k more blocks", the share
  resolved (significant, or no difference of min_effect) within k more blocks.
- `seq_crossover_false_claim_rate`: the crossover (2 pairs in mirrored orders, one verdict on
  the mean of their block log ratios: seqsim.crossover_claims), A/A with the second pair 30 %
  slower than the first, on the clocked scenarios (drift, periodic loads, slow flips, dead
  stretches, 3 digits), worst scenario; `seq_crossover_power_3pct` (no budget): a true +3 % on
  both pairs, 3 % noise a stretch, a −5 % drift and the pair effect, within 20 stretches a
  value.
- Without budget: `seq_power_3pct_family` (each of 2 comparisons of a 3 % difference in a
  2 × 2 alternation), `seq_early_overstatement_pct` (how much |Δ| at an early stop that
  printed the note exceeds the true 3 %, on average).
"""

from __future__ import annotations

import math

import numpy as np

from tests.bench import seqsim as ss
from tests.bench.judge import measures

SEED = 21
RUNS = 2000
MAX_RUNS = 20  # stretches a value
EFFECT = math.log(1.03)
FAMILIES = ((1, 2), (2, 2), (1, 3))
SLOW = (0.5, 3.0)  # a flip that boots: 0.5–3 stretches

# the clocked null scenarios
TIMED = (
    ss.Timed("independent 1 %"),
    *(ss.Timed(f"periodic {p} stretches", period=float(p)) for p in (2, 3, 4, 5, 6, 7)),
    ss.Timed("periodic one block", period="block"),
    ss.Timed("periodic 3, slow flips", period=3.0, flip_s=SLOW),
    ss.Timed("periodic 7, slow flips", period=7.0, flip_s=SLOW),
    ss.Timed("periodic one block, slow flips", period="block", flip_s=SLOW),
    ss.Timed("dead stretches 5 %", sd=0.03, dead_p=0.05),
    ss.Timed("3 significant digits, 0.05 % noise", sd=0.0005, quantise=True),
    ss.Timed("drift -5 %, periodic 5", drift=-0.05, period=5.0),
)


def _any(got: object) -> float:
    return float((got.decided > 0).any(axis=1).mean())  # type: ignore[attr-defined]


@measures("seq_false_claim_rate", "seq_false_claim_rate_old")
def seq_false_claim_rate() -> list[dict]:
    rng = np.random.default_rng(SEED)
    rates: dict[str, float] = {}
    for pairs, values in FAMILIES:
        for sc in TIMED:
            got = ss.timed_claims(rng, sc, RUNS, pairs, values, MAX_RUNS)
            rates[f"{sc.name} ({pairs}x{values})"] = _any(got)
    for values in (2, 3):
        for un in ss.NULLS:
            rates[f"{un.name}, untimed (2x{values})"] = ss.false_claims(rng, un, RUNS, 2, values)
    worst = max(rates, key=lambda k: rates[k])
    old: dict[str, float] = {}
    for pairs, values in FAMILIES:
        for sc in TIMED[1:11]:
            got = ss.timed_claims(rng, sc, RUNS // 2, pairs, values, MAX_RUNS, old=True)
            old[f"{sc.name} ({pairs}x{values})"] = _any(got)
    worst_old = max(old, key=lambda k: old[k])
    return [{"name": "seq_false_claim_rate", "value": round(rates[worst], 4), "unit": "share",
             "note": f"worst: {worst}; {RUNS} runs each: " +
                     ", ".join(f"{k} {v:.3f}" for k, v in rates.items())},
            {"name": "seq_false_claim_rate_old", "value": round(old[worst_old], 4),
             "unit": "share",
             "note": f"last round's boundary, AB/BA blocks and rule, {RUNS // 2} runs each; "
                     f"worst: {worst_old}: " + ", ".join(f"{k} {v:.3f}" for k, v in old.items())}]


@measures("seq_power_3pct", "seq_power_3pct_drift", "seq_power_3pct_family",
          "seq_early_overstatement_pct")
def seq_power() -> list[dict]:
    rng = np.random.default_rng(SEED + 1)
    out = []
    for name, sc in (("seq_power_3pct", ss.Timed("3 %", sd=0.03)),
                     ("seq_power_3pct_drift", ss.Timed("3 %, drift -5 %", sd=0.03,
                                                       drift=-0.05))):
        got = ss.timed_claims(rng, sc, 2 * RUNS, 1, 2, MAX_RUNS, effects=(0.0, EFFECT))
        hit = got.decided > 0
        out.append({"name": name, "value": round(float(hit.mean()), 4), "unit": "share",
                    "note": f"1 pair x 2 values, {sc.name} noise a stretch, true +3 %, "
                            f"{MAX_RUNS} stretches a value at most (10 blocks of 4), "
                            f"{2 * RUNS} runs; median stop at block "
                            f"{np.median(got.decided[hit]):.0f}"})
        if name == "seq_power_3pct":
            early = hit & (got.decided < got.looks[-1])
            over = np.expm1(got.estimate[early]).mean() / 0.03 - 1
            out.append({"name": "seq_early_overstatement_pct",
                        "value": round(float(over) * 100, 1), "unit": "%",
                        "note": f"mean Δ at the {early.mean():.0%} of runs that stopped "
                                f"before the last block, against the true +3 %"})
    got = ss.timed_claims(rng, ss.Timed("3 %", sd=0.03), RUNS, 2, 2, MAX_RUNS,
                          effects=(0.0, EFFECT))
    out.append({"name": "seq_power_3pct_family", "value": round(float((got.decided > 0
                                                                        ).mean()), 4),
                "unit": "share",
                "note": "each of 2 comparisons (2 pairs x 2 values, +3 % at 3 %), Holm over "
                        f"the 2; both found: {(got.decided > 0).all(axis=1).mean():.3f}"})
    return out


@measures("verdict_stretches_10x")
def verdict_stretches_10x() -> dict:
    rng = np.random.default_rng(SEED + 5)
    parts, value = [], 0.0
    for pairs, values in ((2, 2), (1, 2), (1, 3)):
        effects = (0.0,) + (-10 * 0.03,) * (values - 1)
        got = ss.timed_claims(rng, ss.Timed("3 %", sd=0.03), RUNS, pairs, values, MAX_RUNS,
                              effects=effects)
        block = 4 if values == 2 else values
        done = (got.decided > 0).all(axis=1)
        stretches = np.where(done, got.decided.max(axis=1) * block, np.inf)
        median = float(np.median(stretches))
        if (pairs, values) == (2, 2):
            value = median
        parts.append(f"{pairs}x{values}: median {median:g}, 80th "
                     f"{np.quantile(stretches, 0.8):g}, within 12: {np.mean(stretches <= 12):.3f}")
    return {"name": "verdict_stretches_10x", "value": value, "unit": "stretches",
            "note": f"a difference of ten times the noise (3 % a stretch), {RUNS} runs, "
                    f"stretches until every comparison is significant; " + "; ".join(parts)}


@measures("seq_estimate_calibration")
def seq_estimate_calibration() -> dict:
    rng = np.random.default_rng(SEED + 2)
    claims = hits = 0
    by_noise = []
    blocks = 10
    for sd in (0.0025, 0.005, 0.01, 0.02, 0.03):
        said = got = 0
        for factor in (0.0, 0.5, 1.0, 2.0, 5.0):
            rates, pos = ss.untimed_rates(rng, RUNS // 8, 1, 2, blocks, ss.Scenario("", sd=sd),
                                          (0.0, math.log1p(factor * 0.01)))
            n, share = ss.calibration(ss.rule(rates, pos, 2, blocks, 1.0))
            said += n
            got += round(n * share)
        by_noise.append(f"{sd:.2%} noise: {got / max(1, said):.2f} of {said}")
        claims += said
        hits += got
    return {"name": "seq_estimate_calibration", "value": round(hits / max(1, claims), 4),
            "unit": "share",
            "note": f"{claims} 'about k more blocks' claims, true differences 0-5 x the 1 % "
                    f"min_effect, {RUNS // 8} runs each, resolved within k; " +
                    ", ".join(by_noise)}


# the crossover's null scenarios: the clocked ones, the second pair 30 % slower
PAIR_EFFECT = -0.3
CROSSOVER_TIMED = (
    ss.Timed("independent 3 %", sd=0.03),
    ss.Timed("drift -5 %", drift=-0.05),
    *(ss.Timed(f"periodic {p} stretches", period=float(p)) for p in (2, 3, 5, 7)),
    ss.Timed("periodic one block", period="block"),
    ss.Timed("periodic 7, slow flips", period=7.0, flip_s=SLOW),
    ss.Timed("drift -5 %, periodic 5, slow flips", drift=-0.05, period=5.0, flip_s=SLOW),
    ss.Timed("dead stretches 5 %", sd=0.03, dead_p=0.05),
    ss.Timed("3 significant digits, 0.05 % noise", sd=0.0005, quantise=True),
)


@measures("seq_crossover_false_claim_rate", "seq_crossover_power_3pct")
def seq_crossover() -> list[dict]:
    rng = np.random.default_rng(SEED + 7)
    rates = {sc.name: float((ss.crossover_claims(rng, sc, RUNS, MAX_RUNS,
                                                 pair_effect=PAIR_EFFECT).decided > 0).mean())
             for sc in CROSSOVER_TIMED}
    worst = max(rates, key=lambda k: rates[k])
    power = {}
    for name, sc in (("3 %", ss.Timed("3 %", sd=0.03)),
                     ("3 %, drift -5 %", ss.Timed("3 %, drift -5 %", sd=0.03, drift=-0.05)),
                     ("3 %, drift -5 %, periodic 5, slow flips",
                      ss.Timed("", sd=0.03, drift=-0.05, period=5.0, flip_s=SLOW))):
        got = ss.crossover_claims(rng, sc, RUNS, MAX_RUNS, effect=EFFECT,
                                  pair_effect=PAIR_EFFECT)
        hit = got.decided > 0
        power[name] = (float(hit.mean()), float(np.median(got.decided[hit])))
    main = power["3 %, drift -5 %"]
    return [{"name": "seq_crossover_false_claim_rate", "value": round(rates[worst], 4),
             "unit": "share",
             "note": f"2 pairs crossed over, the second {-PAIR_EFFECT:.0%} slower; worst: "
                     f"{worst}; {RUNS} runs each: " +
                     ", ".join(f"{k} {v:.3f}" for k, v in rates.items())},
            {"name": "seq_crossover_power_3pct", "value": round(main[0], 4), "unit": "share",
             "note": f"true +3 % on both pairs, the second {-PAIR_EFFECT:.0%} slower, "
                     f"{MAX_RUNS} stretches a value at most, {RUNS} runs: " +
                     ", ".join(f"{k} noise {p:.3f} (median stop at block {b:.0f})"
                               for k, (p, b) in power.items())}]


RECORDS = [seq_false_claim_rate, seq_power, verdict_stretches_10x, seq_estimate_calibration,
           seq_crossover]


# ---- issue 45: what the verdict is fed ----------------------------------------------------

# a knob whose every boundary restarts the runs, kept value or changed, under periodic loads
RESTART_PERIODS = (2.0, 2.5, 3.0, 3.5, 4.0, 5.0, 6.0, 7.0)
# 26 cells each near α: at 2 000 runs (standard error 0.005) the largest of them read 0.067 once
# (periodic 7, 1 x 2; 0.044 at 4 000)
RESTART_RUNS = 2 * RUNS
# a value with no effect of its own and an after-effect on the next stretch (log)
CARRIES = (0.03, 0.05, 0.10, -0.05, -0.10)


@measures("seq_restart_every_false_claim_rate")
def seq_restart_every() -> dict:
    rng = np.random.default_rng(SEED + 11)
    rates: dict[str, float] = {}
    for pairs, values in FAMILIES:
        for period in RESTART_PERIODS:
            sc = ss.Timed(f"periodic {period:g}", period=period, restart="every")
            rates[f"{sc.name} ({pairs}x{values})"] = _any(
                ss.timed_claims(rng, sc, RESTART_RUNS, pairs, values, MAX_RUNS))
    for period in (3.0, 7.0):
        sc = ss.Timed(f"periodic {period:g}, slow restarts", period=period, restart="every",
                      flip_s=SLOW)
        rates[f"{sc.name} (1x2)"] = _any(ss.timed_claims(rng, sc, RESTART_RUNS, 1, 2,
                                                         MAX_RUNS))
    worst = max(rates, key=lambda k: rates[k])
    return {"name": "seq_restart_every_false_claim_rate", "value": round(rates[worst], 4),
            "unit": "share",
            "note": f"A/A, every boundary restarts the runs (each restart 0.02-0.3 of a "
                    f"stretch, or 0.5-3: slow), 1 % noise, a load of 30 % half of every "
                    f"period; worst: {worst}; {RESTART_RUNS} runs each: " +
                    ", ".join(f"{k} {v:.3f}" for k, v in rates.items())}


@measures("seq_carryover_false_claim_rate")
def seq_carryover() -> dict:
    rng = np.random.default_rng(SEED + 12)
    rates: dict[str, float] = {}
    shown: list[float] = []
    for carry in CARRIES:
        for sd in (0.01, 0.03):
            sc = ss.Timed(f"after-effect {carry:+.0%}, {sd:.0%} noise", sd=sd, carry=carry)
            for pairs in (1, 2):
                got = ss.timed_claims(rng, sc, RUNS // 2, pairs, 2, MAX_RUNS)
                rates[f"{sc.name} ({pairs}x2)"] = _any(got)
                shown.append(float(got.carry.any(-1).any(-1).mean()))
            got = ss.crossover_claims(rng, sc, RUNS // 2, MAX_RUNS, pair_effect=PAIR_EFFECT)
            rates[f"{sc.name} (crossover)"] = _any(got)
    worst = max(rates, key=lambda k: rates[k])
    return {"name": "seq_carryover_false_claim_rate", "value": round(rates[worst], 4),
            "unit": "share",
            "note": f"no direct effect, the stretch after value 1 moved by the after-effect; "
                    f"worst: {worst}; {RUNS // 2} runs each; carryover said in "
                    f"{min(shown):.2f}-{max(shown):.2f} of the blocks' runs: " +
                    ", ".join(f"{k} {v:.3f}" for k, v in rates.items())}


@measures("seq_power_3pct_one_dead", "seq_aa_one_dead_median_delta_pct",
          "seq_dead_value_called_worse", "seq_dead_value_no_difference")
def seq_deaths() -> list[dict]:
    rng = np.random.default_rng(SEED + 13)
    one = ss.Timed("3 %, one dead stretch", sd=0.03, dead_one=True)
    got = ss.timed_claims(rng, one, 2 * RUNS, 1, 2, MAX_RUNS, effects=(0.0, EFFECT))
    power = float((got.decided > 0).mean())
    names = ("0", "1")
    blocks = ss.max_blocks(names, MAX_RUNS)
    rates, pos = ss.timed_rates(rng, RUNS, 1, 2, blocks, one)
    d = ss.sq.contrasts(rates, pos).d.reshape(RUNS, -1)
    printed = np.abs(np.expm1(np.nanmean(d, axis=-1))) * 100
    aa = _any(ss.rule(rates, pos, 2, blocks))
    out = [{"name": "seq_power_3pct_one_dead", "value": round(power, 4), "unit": "share",
            "note": f"1 pair x 2 values, true +3 %, 3 % noise, one stretch of the 40 dead "
                    f"(the host's), {2 * RUNS} runs"},
           {"name": "seq_aa_one_dead_median_delta_pct", "value": round(float(
               np.median(printed)), 3), "unit": "%",
            "note": f"A/A, 3 % noise, one dead stretch of 40, {RUNS} runs: the printed |Δgeo| "
                    f"at the end, median (90th percentile {np.quantile(printed, 0.9):.2f} "
                    f"%); false claims {aa:.3f}"}]
    worse, none, parts = {}, {}, []
    for pairs in (1, 2):
        sc = ss.Timed("value dies 35 %", sd=0.03, dead_value=0.35)
        got = ss.timed_claims(rng, sc, RUNS, pairs, 2, MAX_RUNS)
        worse[pairs] = float(((got.decided > 0) & got.worse).mean())
        none[pairs] = float(got.within.any(-1).mean())
        parts.append(f"{pairs}x2 each comparison {worse[pairs]:.3f}, never 'no difference' "
                     f"({none[pairs]:.3f} said it)")
    aa5 = _any(ss.timed_claims(rng, ss.Timed("", sd=0.03, dead_p=0.2), RUNS, 1, 2, MAX_RUNS))
    out += [{"name": "seq_dead_value_called_worse", "value": round(worse[1], 4),
             "unit": "share",
             "note": f"value 1 dies in 35 % of its stretches (the base never), 3 % noise, "
                     f"{RUNS} runs: " + "; ".join(parts) + f"; A/A with 20 % of all stretches "
                     f"dead (the host's): false claims {aa5:.3f}"},
            {"name": "seq_dead_value_no_difference", "value": max(none.values()),
             "unit": "share", "note": "the same runs: a look that said 'no difference'"}]
    return out


RECORDS += [seq_restart_every, seq_carryover, seq_deaths]
