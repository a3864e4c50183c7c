"""A build alternation's boots: each run of one value in a pair's schedule is one boot (the
host switched into the build at its start and stayed there), and the spread of a boot's
stretches says how much of the noise is the boot's and how much the stretch's.

- within-boot spread: the stretches' ln rates about their boot's mean, pooled over the boots
  with two stretches or more (a block's AA or BB holds one boot);
- boot-to-boot spread: the boots' mean ln rates about their value's mean on that pair, pooled
  over values and pairs. It holds the within-boot noise too (÷ the boot's stretches) and any
  drift between boots, so it is the larger unless the boot adds nothing.

Both as percentages (the standard deviation of ln rates, × 100); None where no boot (or no
value) gives a degree of freedom. Stretches that moved nothing are left out of the spreads
(they count in the verdict).
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass


@dataclass(frozen=True, slots=True)
class BootSpread:
    boots: dict[str, int]  # value -> boots it had (over the pairs)
    within: float | None  # % : stretch to stretch within a boot
    between: float | None  # % : boot to boot within a value


def boot_runs(order: Sequence[str], closed: int) -> list[tuple[str, range]]:
    """The schedule's first `closed` stretches as boots: (value, its stretches)."""
    runs: list[tuple[str, range]] = []
    start = 0
    for i in range(1, closed + 1):
        if i == closed or order[i] != order[start]:
            runs.append((order[start], range(start, i)))
            start = i
    return runs


def boot_spread(pairs: Sequence[tuple[Mapping[int, float], Sequence[str]]],
                closed: int) -> BootSpread:
    """The boots and spreads of `pairs` (each: its stretch rates by schedule index, its
    schedule) over the first `closed` stretches."""
    boots: dict[str, int] = {}
    within_ss = within_df = between_ss = between_df = 0.0
    for taken, order in pairs:
        means: dict[str, list[float]] = {}
        for value, span in boot_runs(order, closed):
            boots[value] = boots.get(value, 0) + 1
            logs = [math.log(taken[i]) for i in span if taken.get(i, 0.0) > 0]
            if not logs:
                continue
            mean = sum(logs) / len(logs)
            within_ss += sum((x - mean) ** 2 for x in logs)
            within_df += len(logs) - 1
            means.setdefault(value, []).append(mean)
        for got in means.values():
            centre = sum(got) / len(got)
            between_ss += sum((x - centre) ** 2 for x in got)
            between_df += len(got) - 1
    return BootSpread(boots, _pct(within_ss, within_df), _pct(between_ss, between_df))


def _pct(ss: float, df: float) -> float | None:
    return 100 * math.sqrt(ss / df) if df > 0 else None
