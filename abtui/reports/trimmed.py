"""The gate's procedure: Yuen's trimmed-mean Welch test, on the log of the ratio of two sides'
20 % trimmed means (delta method, as abtui.reports.stats.log_welch does for plain means).

Why the gate trims and a cell does not: a gate judges every case of two whole sessions at
once and passes only when every case does, so one stalled run (a run at 70 % of its siblings,
a few in a hundred on real links) anywhere makes a plain mean's interval straddle the
threshold and the whole gate inconclusive. Measured with tests/bench/bench_gate.py's session
model (40 cases, 2 % of runs stalled, 100 A/A gates at −5 % per row, seeded):

    runs a side       20     25     30     40
    plain means       0.00   0.01   0.03   0.32   A/A gates that pass
    trimmed 20 %      0.53   0.89   0.99   1.00
    plain means       0.50   0.70   0.71   0.89   one case 10 % slower, caught
    trimmed 20 %      0.73   0.93   0.99   1.00

Trimming 20 % of each end keeps a single stall (up to one in five runs) from deciding a case;
a build that stalls more often than that still shows. The price is at few runs: at 5 a side
the trimmed mean keeps 3 values, and a 5 % loss everywhere is called in 0.04 of the cases
instead of about 0.25 on plain means (a gate at 5 runs could never pass anyway).

The trimmed mean is a figure of its own: the gate names its Δ "Δ of 20 % trimmed means"; the
cells' Δ stays the ratio of plain means.

Each side's standard error is floored at its printed precision (stats.resolution), as every Δ.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from abtui.reports import stats

TRIM = 0.2  # the share cut from each end (Yuen's usual choice, and the measured one)
NAME = "Δ of 20 % trimmed means"


@dataclass(frozen=True, slots=True)
class Side:
    """One side's trimmed mean, its winsorized variance and how many values it has."""

    n: int
    mean: float
    winsorized_var: float

    def rel_var(self, n: Any = None) -> Any:
        """The squared standard error of the trimmed mean (Yuen) relative to the mean, at `n`
        runs (this side's own by default; an array of counts: a forecast), floored at the
        printed precision."""
        n = self.n if n is None else n
        h = kept(n)
        raw = np.subtract(n, 1) * self.winsorized_var / (h * (h - 1))
        return np.maximum(raw, stats.resolution(self.mean) ** 2) / self.mean**2


def kept(n: Any) -> Any:
    """Values a trimmed mean of `n` keeps (numpy: a count or an array of them)."""
    return n - 2 * np.floor(np.multiply(TRIM, n)).astype(int)


def side(values: Sequence[float]) -> Side:
    """The side's figures from its finite values (at least stats.MIN_RUNS)."""
    x = np.sort(np.asarray(values, dtype=float))
    n = x.size
    g = math.floor(TRIM * n)
    w = np.clip(x, x[g], x[n - 1 - g])
    return Side(n, float(x[g:n - g].mean()), float(w.var(ddof=1)))


def welch(a: Side, b: Side, n: Any = None) -> tuple[Any, Any]:
    """The log ratio's standard error and Welch's degrees of freedom; at `n` runs a side (a
    count or an array of them) when given: a forecast."""
    va, vb = a.rel_var(n), b.rel_var(n)
    ha, hb = (kept(a.n), kept(b.n)) if n is None else (kept(n), kept(n))
    df = (va + vb) ** 2 / (va**2 / (ha - 1) + vb**2 / (hb - 1))
    return np.sqrt(va + vb), df


def judge(base: Sequence[float], other: Sequence[float]) -> tuple[stats.LogWelch, Side, Side] | str:
    """The procedure on two sides' finite run-level values, or why it cannot judge them."""
    a, b = stats.finite(base), stats.finite(other)
    if len(a) < stats.MIN_RUNS or len(b) < stats.MIN_RUNS:
        return f"{stats.FEW_RUNS} (n={len(a)}+{len(b)})"
    sa, sb = side(a), side(b)
    if sa.mean <= 0 or sb.mean <= 0:
        return "a mean of 0 or less: no interval for the ratio"
    se, df = welch(sa, sb)
    return stats.LogWelch(math.log(sb.mean / sa.mean), float(se), float(df)), sa, sb

