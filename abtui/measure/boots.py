"""A build alternation's boots: every stretch is one boot (abtui boots the hosts into the
stretch's build at its start, changed or not: alternate.drive's `again`, the plan's
`again` steps), and the spread of the readings says how much of the noise is the boot's and
how much is within it:
- within-boot spread: the ln rates of a stretch's readings (its intervals) about their mean,
  pooled over the stretches that had two or more;
- boot-to-boot spread: the stretches' ln rates about their value's mean on that pair, pooled
  over values and pairs. It holds the within-boot noise too (averaged over a stretch's
  readings) and any drift between boots, so it is the larger unless the boot adds nothing.
Both as percentages (the standard deviation of ln rates, x 100); None where nothing gives a
degree of freedom. Stretches that moved nothing are left out of the spreads (they count in the
verdict).
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass


@dataclass(frozen=True, slots=True)
class BootSpread:
    boots: dict[str, int]  # value -> boots it had (over the pairs)
    within: float | None  # % : reading to reading within a boot
    between: float | None  # % : boot to boot within a value


def boot_spread(pairs: Sequence[tuple[Mapping[int, float], Sequence[str],
                                      Mapping[int, tuple[int, float]]]],
                closed: int) -> BootSpread:
    """The boots and spreads of `pairs` (each: its stretch rates by schedule index, its
    schedule, each stretch's (df, sum of squares) of its readings' ln rates) over the first
    `closed` stretches."""
    boots: dict[str, int] = {}
    within_ss = within_df = between_ss = between_df = 0.0
    for taken, order, within in pairs:
        logs: dict[str, list[float]] = {}
        for i, value in enumerate(order[:closed]):
            boots[value] = boots.get(value, 0) + 1
            if taken.get(i, 0.0) > 0:
                logs.setdefault(value, []).append(math.log(taken[i]))
                df, ss = within.get(i, (0, 0.0))
                within_df += df
                within_ss += ss
        for got in logs.values():
            centre = sum(got) / len(got)
            between_ss += sum((x - centre) ** 2 for x in got)
            between_df += len(got) - 1
    return BootSpread(boots, _pct(within_ss, within_df), _pct(between_ss, between_df))


def _pct(ss: float, df: float) -> float | None:
    return 100 * math.sqrt(ss / df) if df > 0 else None
