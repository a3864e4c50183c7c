"""The alternation's error rates when it judges latency (`abtui run --alternate ... --metric
p99`): each stretch's RTT percentile as 1/RTT, through the project's own schedule, pairing and
live rule (tests/bench/seqsim.py: abtui.measure.alternate's schedule and positions,
abtui.reports.sequential's rule, Holm over the family). Seeded; `python -m
tests.bench.latency_alt_sim` prints the table docs/sequential.md quotes ("Latency in the
alternation").

The model: a stretch's level is seqsim's (the value's effect, independent noise a stretch,
the host's drift, slow AR(1) noise, a periodic load, stalls: seqsim.Scenario), here the
level of the RTT (its inverse is what seqsim calls the rate). Within a stretch its N round
trips are independent: lognormal around the level (σ 0.25 of the log: a loaded veth's spread),
1 in 200 a stall 5–20× (an interrupt coalesced, a preemption), as the gate's simulation
(latency_gate_sim). A stretch's percentile is the nearest-rank one of its N round trips
(abtui.measure.latency_stretch), drawn exactly: the k-th smallest of N uniforms is Beta(k,
N − k + 1), through the round trips' quantile function. N: ping every 0.2 s over a 10 s
stretch (50) or every 0.1 s (100); sockperf at 1000 a second over the ~7.5 s it measures of a
10 s run (7 500).
"""

from __future__ import annotations

import math
import sys

import numpy as np

from abtui.measure.alternate.design import max_blocks
from tests.bench import seqsim
from tests.bench.seqsim import Scenario

SEED = 49
SIGMA, STALL_P, STALL = 0.25, 1 / 200, (5.0, 20.0)

NULLS = (
    Scenario("independent 3 %", sd=0.03),
    Scenario("drift -5 %", sd=0.01, drift=-0.05),
    Scenario("AR(1) 0.97", sd=0.005, phi=0.97, ar_sd=0.03),
    Scenario("periodic 3 x stretch", sd=0.01, period=3.0),
    Scenario("periodic 4 x stretch", sd=0.01, period=4.0),
    Scenario("stalls 5 %", sd=0.02, stall_p=0.05),
)
# (metric, round trips a stretch): what ping and sockperf give a 10 s stretch
READINGS = (("p50", 50), ("p90", 50), ("p99", 100), ("p50", 7500), ("p99", 7500),
            ("p99.9", 7500))


def quantile_fn(rng: np.random.Generator, n: int = 2_000_000):  # type: ignore[no-untyped-def]
    """The round trips' quantile function (relative to the level), from n draws."""
    x = rng.lognormal(0.0, SIGMA, n)
    stall = rng.random(n) < STALL_P
    x = np.sort(np.where(stall, x * rng.uniform(*STALL, n), x))

    def q(u: np.ndarray) -> np.ndarray:
        return x[np.clip((u * n).astype(np.int64), 0, n - 1)]

    return q


def stretch_rates(rng: np.random.Generator, runs: int, pairs: int, values: int,
                  blocks: int, sc: Scenario, stat: str, n: int, rtt_change: float,
                  q) -> tuple[np.ndarray, np.ndarray]:  # type: ignore[no-untyped-def]
    """Stretch samples (1/RTT percentile, runs × pairs × stretches) and the runs' positions;
    the last value's RTT × (1 + rtt_change)."""
    effects = (0.0,) * (values - 1) + (-math.log1p(rtt_change),)
    level, pos = seqsim.untimed_rates(rng, runs, pairs, values, blocks, sc, effects)
    k = max(1, math.ceil(round(float(stat[1:]) / 100 * n, 9)))
    u = rng.beta(k, n - k + 1, level.shape)
    return level / q(u), pos


def rates(sc: Scenario, stat: str, n: int, runs: int, pairs: int = 1, values: int = 2,
          rtt_change: float = 0.0, seed: int = SEED, max_runs: int = 20) -> tuple[float, float]:
    """(share of runs with any comparison significant, median stretches to the last
    decision among the runs that decided everything)."""
    rng = np.random.default_rng(seed)
    q = quantile_fn(rng)
    blocks = max_blocks(range(values), max_runs)
    r, pos = stretch_rates(rng, runs, pairs, values, blocks, sc, stat, n, rtt_change, q)
    got = seqsim.rule(r, pos, values, blocks)
    decided = got.decided > 0
    claimed = decided.any(axis=1)
    everything = decided.all(axis=1)
    per = len(pos[0][0][0]) * values  # stretches a block
    stops = got.decided.max(axis=1)[everything] * per
    return float(claimed.mean()), float(np.median(stops)) if stops.size else math.nan


def main(runs: int = 2000) -> None:
    print("false claims (no change at all): share of runs with any comparison significant")
    print("scenario                 metric  N     1x2    2x2    1x3")
    for sc in NULLS:
        for stat, n in READINGS:
            cells = [rates(sc, stat, n, runs, p, v)[0] for p, v in ((1, 2), (2, 2), (1, 3))]
            print(f"{sc.name:24} {stat:6} {n:5} " + " ".join(f"{c:6.3f}" for c in cells),
                  flush=True)
    print("power: the RTT +10 % / +20 % on the second value, 3 % noise a stretch, 1 x 2")
    print("metric  N      +10%   stretches  +20%   stretches")
    noise = Scenario("independent 3 %", sd=0.03)
    for stat, n in READINGS:
        row = []
        for change in (0.10, 0.20):
            p, med = rates(noise, stat, n, runs, rtt_change=change)
            row += [f"{p:6.3f}", f"{med:9.0f}"]
        print(f"{stat:6} {n:5}  " + "  ".join(row), flush=True)


if __name__ == "__main__":
    main(int(sys.argv[1]) if len(sys.argv) > 1 else 2000)
