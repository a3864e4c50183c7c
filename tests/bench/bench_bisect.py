"""`abtui bisect` simulated (seeded): whole bisections whose every step is the alternation's
schedule (abtui.measure.alternate.design.schedule, blocks of four in one of six balanced orders) on
stretch values under the statistics bench's noise scenarios (tests/bench/seqsim.py: noise,
drift, AR(1) slowly varying noise, periodic load, stalls), looked at once per complete block
with the live rule (abtui.reports.sequential.assess at the step's share of α, as Verdicts
assesses) and called by the project's own step call (abtui.measure.bisect.search.call), the range
narrowed by abtui.measure.bisect.search.Bisection.

- `bisect_wrong_rate`: the share of bisections whose answer is wrong (a first bad that is
  not the first candidate worse by the threshold, or "no candidate differs" when one is),
  worst scenario; undecided answers are not wrong (they are counted and printed).
  Budget ≤ 0.05: the family-wise bound the result line states.
- `bisect_blocks_median`: the median blocks a whole bisection took (every step's summed).

Nine candidates (α over four steps), the first bad drawn per bisection (or none), the
scenarios' noise (1–3 % a stretch; a periodic load takes 30 % half of the time), a 5 %
threshold, at most 10 blocks a step. The true effects: 0 up to the first bad, −10 % from it
(a "step"), or a ramp of 3 % a candidate (−3.5 % just before the first bad, −6.5 % at it: the
calls' hardest case).
"""

from __future__ import annotations

import math

import numpy as np

from abtui.measure.bisect.search import BAD, GOOD, NONE_DIFFERS, UNDECIDED, Bisection, Step, call
from abtui.reports import sequential as sq
from tests.bench import seqsim as ss
from tests.bench.judge import measures

SEED = 36
RUNS = 150
N = 9
THRESHOLD = 5.0
BLOCKS = 10
SCENARIOS = (
    ss.Scenario("independent 1 %", sd=0.01),
    ss.Scenario("independent 3 %", sd=0.03),
    ss.Scenario("drift -5 %", sd=0.01, drift=-0.05),
    ss.Scenario("AR(1) 0.9", sd=0.005, phi=0.9, ar_sd=0.03),
    ss.Scenario("periodic 2 x stretch", sd=0.01, period=2.0),
    ss.Scenario("periodic 3 x stretch", sd=0.01, period=3.0),
    ss.Scenario("periodic 6 x stretch", sd=0.01, period=6.0),
    ss.Scenario("stalls 5 %", sd=0.02, stall_p=0.05),
)


def effects(shape: str, first: int | None) -> list[float]:
    """Each candidate's true log effect against the good one: a step of -10 % at `first`,
    or a ramp of 3 % a candidate crossing the threshold there (-3.5 % before it, -6.5 % at
    it); none when `first` is None."""
    if first is None:
        return [0.0] * N
    if shape == "step":
        return [0.0 if i < first else math.log(0.90) for i in range(N)]
    return [math.log1p(-max(0.0, 6.5 + 3.0 * (i - first)) / 100) for i in range(N)]


def truth(eff: list[float]) -> int | None:
    """The first candidate worse by the threshold (None: none is)."""
    return next((i for i, e in enumerate(eff) if e <= math.log1p(-THRESHOLD / 100) + 1e-12),
                None)


def step(rng: np.random.Generator, sc: ss.Scenario, effect: float, alpha: float
         ) -> tuple[str, int, float, float, float]:
    """One step: the candidate (true log `effect`) alternated against the good one, the
    call at each complete block; (verdict, blocks, Δ %, low %, high %)."""
    rates, pos = ss.untimed_rates(rng, 1, 1, 2, BLOCKS, sc, (0.0, effect))
    design = sq.Family(1, BLOCKS, alpha=alpha, arrangements=6).design(0)
    look = None
    for n in range(sq.FIRST_LOOK, BLOCKS + 1):
        got = sq.contrasts(rates[..., :4 * n], pos[:, :n])
        look = sq.assess(got.d.reshape(-1), design, THRESHOLD, float(got.floor.reshape(-1)[0]),
                         0, got.options.reshape(n, -1), got.tss.reshape(-1))
        verdict = call([look], THRESHOLD)
        if verdict is not None:
            return verdict, n, *_delta(look)
    assert look is not None
    return UNDECIDED, BLOCKS, *_delta(look)


def _delta(look: sq.Assessment) -> tuple[float, float, float]:
    d = look.delta
    if d is None:
        return math.nan, math.nan, math.nan
    return d.pct, d.low if d.low is not None else math.nan, \
        d.high if d.high is not None else math.nan


def bisection(rng: np.random.Generator, sc: ss.Scenario, eff: list[float]
              ) -> tuple[str | None, int | None, int, int]:
    """One whole bisection: (answer, its first bad, blocks in all, wrong step calls)."""
    b = Bisection(tuple(str(i) for i in range(N)), THRESHOLD)
    blocks = wrong = 0
    cut = math.log1p(-THRESHOLD / 100)
    while (i := b.next()) is not None:
        verdict, n, pct, low, high = step(rng, sc, eff[i], b.step_alpha)
        blocks += n
        wrong += (verdict == BAD and eff[i] > cut) or (verdict == GOOD and eff[i] <= cut)
        b.record(Step(len(b.steps) + 1, str(i), i, verdict, pct, low, high, n))
    return b.answer, b.hi if b.answer == "first bad" else None, blocks, int(wrong)


@measures("bisect_wrong_rate", "bisect_blocks_median")
def bisect_rates() -> list[dict]:
    rng = np.random.default_rng(SEED)
    worst, parts, all_blocks = 0.0, [], []
    for shape in ("step", "ramp"):
        for sc in SCENARIOS:
            wrong = undecided = calls = right = 0
            for _ in range(RUNS):
                first = int(rng.integers(1, N + 1))  # N: nothing differs
                eff = effects(shape, first if first < N else None)
                answer, named, blocks, bad_calls = bisection(rng, sc, eff)
                all_blocks.append(blocks)
                calls += bad_calls > 0
                true = truth(eff)
                if answer == UNDECIDED:
                    undecided += 1
                elif (answer == NONE_DIFFERS) != (true is None) or named != true:
                    wrong += 1
                else:
                    right += 1
            rate = wrong / RUNS
            worst = max(worst, rate)
            parts.append(f"{shape}, {sc.name}: wrong {rate:.3f}, right "
                         f"{right / RUNS:.3f}, undecided {undecided / RUNS:.3f}, any wrong "
                         f"step call {calls / RUNS:.3f}")
    return [{"name": "bisect_wrong_rate", "value": round(worst, 4), "unit": "share",
             "note": f"{N} candidates (α over 4 steps), threshold {THRESHOLD:g} %, "
                     f"at most {BLOCKS} blocks a step, {RUNS} bisections each; worst of: "
                     + "; ".join(parts)},
            {"name": "bisect_blocks_median", "value": float(np.median(all_blocks)),
             "unit": "blocks",
             "note": f"a whole bisection's blocks (4 stretches each), all scenarios; 80th "
                     f"percentile {np.quantile(all_blocks, 0.8):g}"}]


RECORDS = [bisect_rates]
