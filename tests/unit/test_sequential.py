"""The sequential rule (abtui.reports.sequential): its boundaries are the published ones, on
A = B it claims a difference about 5 % of the time however often it looks (naive peeking
several times more), and its "stretches needed" reach the power it promises."""

from __future__ import annotations

import numpy as np
import pytest
from scipy.stats import t as student_t

from abtui.reports import sequential as sq
from abtui.reports import stats


def test_boundaries_are_the_published_lan_demets_ones() -> None:
    # five equally spaced looks, two-sided alpha 0.05 (Jennison & Turnbull; R ldbounds)
    obf = sq.boundaries([0.2, 0.4, 0.6, 0.8, 1.0], 0.05, "obrien-fleming")
    assert obf == pytest.approx([4.877, 3.357, 2.680, 2.290, 2.031], abs=2e-3)
    pocock = sq.boundaries([0.2, 0.4, 0.6, 0.8, 1.0], 0.05, "pocock")
    assert pocock == pytest.approx([2.438, 2.427, 2.410, 2.397, 2.386], abs=2e-3)
    assert sq.boundaries([1.0]) == pytest.approx([1.96], abs=1e-3)


def _looks(a: np.ndarray, b: np.ndarray) -> tuple[np.ndarray, ...]:
    """Every look's log ratio, standard error, df and n for simulated stretches (sims × N),
    from cumulative sums: the same formula (stats.log_ratio_stats) the live rule uses."""
    n = np.arange(1, a.shape[1] + 1)
    ma, mb = np.cumsum(a, 1) / n, np.cumsum(b, 1) / n
    va = (np.cumsum(a * a, 1) - n * ma**2) / np.maximum(n - 1, 1)
    vb = (np.cumsum(b * b, 1) - n * mb**2) / np.maximum(n - 1, 1)
    k = sq.FIRST_LOOK - 1
    lr, se, df = stats.log_ratio_stats(ma[:, k:], va[:, k:], n[k:], mb[:, k:], vb[:, k:], n[k:])
    return lr, se, df, n[k:]


def test_on_a_equal_b_the_rule_keeps_five_percent_and_peeking_does_not() -> None:
    rng = np.random.default_rng(16)
    sims, max_runs = 20000, 20
    a = rng.normal(10e9, 0.3e9, (sims, max_runs))  # 3 % spread, no difference
    b = rng.normal(10e9, 0.3e9, (sims, max_runs))
    lr, se, df, n = _looks(a, b)
    rule = sq.Design.make(max_runs).crossed(lr, se, df, n).any(axis=1).mean()
    naive = (np.abs(lr) > student_t.isf(0.025, df) * se).any(axis=1).mean()
    assert 0.035 < rule < 0.065, rule
    assert naive > 3 * rule, (naive, rule)


def test_on_skewed_stretches_too() -> None:
    rng = np.random.default_rng(7)
    a = rng.lognormal(0, 0.2, (20000, 10))
    b = rng.lognormal(0, 0.2, (20000, 10))
    lr, se, df, n = _looks(a, b)
    assert 0.03 < sq.Design.make(10, spending="pocock").crossed(lr, se, df, n).any(1).mean() \
        < 0.07


def test_stretches_needed_give_the_promised_power() -> None:
    rng = np.random.default_rng(3)
    design = sq.Design.make(40)
    seen_a, seen_b = rng.normal(1, 0.03, 400), rng.normal(1, 0.03, 400)
    need = sq.needed(seen_a, seen_b, 2.0, design.last_z)
    assert need is not None and 30 < need < 50
    a = rng.normal(1.0, 0.03, (10000, need))
    b = rng.normal(1.02, 0.03, (10000, need))  # a true difference of min_effect
    lr, se, df, n = _looks(a, b)
    power = sq.Design.make(need).crossed(lr, se, df, n).any(axis=1).mean()
    assert abs(power - sq.POWER) < 0.06, power


def test_assess_says_significant_not_yet_and_too_few() -> None:
    design = sq.Design.make(10)
    big = sq.assess([10.0, 10.1, 9.9, 10.05], [2.0, 2.1, 1.9, 2.02], design)
    assert big.significant and big.verdict.startswith("-8")
    assert big.delta is not None and big.delta.high is not None and big.delta.high < 0
    assert "significant (n=4+4)" in big.line()
    same = sq.assess([10.0, 10.2, 9.8], [10.1, 9.9, 10.0], design, min_effect=1.0)
    assert not same.significant and same.verdict == "~"
    assert same.more is not None and same.more > 0 and "more stretches per side" in same.line()
    assert sq.assess([10.0], [9.0], design).verdict == "?"
    # the repeated interval at look n is wider than the fixed 95 % one
    fixed = stats.delta([10.0, 10.2, 9.8], [10.1, 9.9, 10.0])
    assert same.delta is not None and fixed is not None and same.delta.low is not None \
        and fixed.low is not None and same.delta.low < fixed.low


def test_a_quiet_null_says_no_difference_that_matters() -> None:
    rng = np.random.default_rng(2)
    a, b = rng.normal(10e9, 0.01e9, 12), rng.normal(10e9, 0.01e9, 12)  # 0.1 % spread
    got = sq.assess(a, b, sq.Design.make(12), min_effect=1.0)
    assert not got.significant and got.within
    assert got.line().endswith("no difference of 1% or more")
    assert not sq.assess(a, b, sq.Design.make(12), min_effect=0.01).within


def test_a_first_look_interval_may_be_unbounded_and_says_so() -> None:
    """The first look of a 20-look design is drawn at a level near 1e-12 with ~2 degrees of
    freedom: its upper end is beyond a float's exp; it reads +inf, never an overflow."""
    got = sq.assess([10e9, 4e9], [1e9, 0.3e9], sq.Design.make(20))
    assert got.delta is not None and got.delta.high == float("inf")
    assert "[-100.0, +inf]" in got.line() and got.verdict == "~"
