"""How often the alternation's "about k more blocks to be significant if Δ holds" hint comes
true: block log ratios drawn around a true effect (normal, `sd` a block), each look judged by
abtui.reports.sequential.assess with the family's design (2 values: 1 comparison, blocks of
four; 3 values: 2 comparisons, permutation blocks), and of the looks that gave the hint, the
share that turned significant within k more looks. Seeded; `python -m
tests.bench.holds_calibration` prints the table docs/sequential.md quotes."""

from __future__ import annotations

import math

import numpy as np

from abtui.measure.alternate.design import arrangements, max_blocks
from abtui.reports import sequential as sq

SEED = 49


def calibration(values: int, effect: float, sd: float, runs: int, seed: int = SEED
                ) -> tuple[int, float]:
    names = tuple(str(v) for v in range(values))
    blocks = max_blocks(names, 20)
    design = sq.Family(values - 1, blocks, arrangements=arrangements(names)).design()
    rng = np.random.default_rng(seed)
    claims = hits = 0
    for _ in range(runs):
        d = rng.normal(math.log1p(effect), sd, blocks)
        decided = None
        hints: list[tuple[int, int]] = []
        for n in range(sq.FIRST_LOOK, blocks + 1):
            got = sq.assess(list(d[:n]), design)
            if got.significant:
                decided = n
                break
            if got.if_holds is not None and "if Δ holds" in got.line():  # the hint said
                hints.append((n, got.if_holds))
        for n, k in hints:
            claims += 1
            hits += decided is not None and decided <= n + k
    return claims, hits / max(1, claims)


def main() -> None:
    print("values  effect  sd     claims  came true within k")
    for values in (2, 3):
        for effect, sd in ((0.05, 0.03), (0.10, 0.10), (0.40, 0.30), (0.40, 0.60)):
            c, share = calibration(values, effect, sd, 200)
            print(f"{values:6}  {effect:+.0%}  {sd:.2f}  {c:6}  {share:.2f}", flush=True)


if __name__ == "__main__":
    main()
