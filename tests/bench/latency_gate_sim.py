"""The latency gate's error rates (`abtui compare --fail-on-regression PCT --latency STAT`),
simulated with its own code: abtui.reports.latency.run_values' per-run statistic of each run's
replies, as 1/RTT, judged by abtui.reports.gate.judge. Seeded; `python -m
tests.bench.latency_gate_sim` prints the table docs/sequential.md quotes.

The model: CONFIGS configurations on one pair, RUNS runs a side, each run REPLIES ping replies,
lognormal around the configuration's RTT (σ 0.25 of the log: a loaded veth's spread) times the
run's own level (lognormal, 3 %: a run's queue state) times a slow drift over the session
(±3 %), with 1 in 200 replies a stall 5–20× the RTT (an interrupt coalesced, a preemption).
"""

from __future__ import annotations

import numpy as np

from abtui.reports import gate, latency

SEED = 49
CONFIGS, REPLIES = 4, 200


def session(rng: np.random.Generator, runs: int, rtt: np.ndarray) -> list[list[np.ndarray]]:
    """[configuration][run] arrays of replies (ms)."""
    drift = 1 + rng.uniform(-0.03, 0.03) * (np.linspace(0, 1, runs) - 0.5)
    out = []
    for c in range(CONFIGS):
        level = rng.lognormal(0, 0.03, runs) * drift
        replies = rtt[c] * level[:, None] * rng.lognormal(0, 0.25, (runs, REPLIES))
        stall = rng.random((runs, REPLIES)) < 1 / 200
        replies = np.where(stall, replies * rng.uniform(5, 20, (runs, REPLIES)), replies)
        out.append(list(replies))
    return out


def per_run(runs: list[np.ndarray], stat: str) -> list[float]:
    vals = [float(r.mean()) if stat == "avg" else latency.percentile(r, float(stat[1:]))
            for r in runs]
    return latency.inverse([v for v in vals if v is not None])


def rates(stat: str, runs: int, change: float, gates: int, threshold: float = 5.0,
          seed: int = SEED) -> tuple[float, float, float]:
    """(share of gates with any regression called, share of gates that pass, share of the
    changed configuration's cases called) with configuration 0's RTT × (1 + change)."""
    rng = np.random.default_rng(seed)
    base_rtt = np.full(CONFIGS, 0.05)
    alarms = passes = caught = 0
    for _ in range(gates):
        a = session(rng, runs, base_rtt)
        new = base_rtt.copy()
        new[0] *= 1 + change
        b = session(rng, runs, new)
        cases = gate.judge([gate.Judged("A", str(c), per_run(a[c], stat), per_run(b[c], stat),
                                        latency.gate_metric(stat)) for c in range(CONFIGS)],
                           threshold)
        alarms += any(c.failed for c in cases)
        passes += all(c.answer == gate.PASS for c in cases)
        caught += cases[0].failed
    return alarms / gates, passes / gates, caught / gates


def main() -> None:
    print("stat  runs  change  gates  any-regression  all-pass  changed-caught")
    for stat in ("avg", "p50", "p99"):
        for runs in (5, 30):
            for change, gates in ((0.0, 300), (0.10, 200)):
                al, ps, ca = rates(stat, runs, change, gates)
                print(f"{stat:5} {runs:4}  {change:+.0%}  {gates:5}  {al:14.3f}  {ps:8.3f}  "
                      f"{ca:14.3f}", flush=True)


if __name__ == "__main__":
    main()
