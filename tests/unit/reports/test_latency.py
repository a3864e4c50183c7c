"""Latency as its own measure (abtui.reports.latency): nearest-rank percentiles, only from
enough replies; min/avg/max/stddev as ping's summary; per-run values; 1/RTT's Δ read back as
the RTT's own change."""

from __future__ import annotations

import math

import numpy as np
import pytest

from abtui.reports import gate, latency


def test_needed_replies_per_percentile() -> None:
    assert [latency.needed(q) for q in latency.PERCENTILES] == [1, 10, 100, 1000]


def test_nearest_rank_is_a_measured_reply() -> None:
    values = list(range(1, 101))  # 1 … 100 ms, shuffled order must not matter
    rng = np.random.default_rng(1)
    rng.shuffle(values)
    assert latency.percentile(values, 50) == 50.0
    assert latency.percentile(values, 90) == 90.0
    assert latency.percentile(values, 99) == 99.0
    # p99.9 needs 1000 replies: not from 100
    assert latency.percentile(values, 99.9) is None
    many = np.arange(1, 1001, dtype=float)
    assert latency.percentile(many, 99.9) == 999.0
    assert latency.percentile(many, 99) == 990.0


def test_too_few_replies_give_none_never_the_max() -> None:
    ten = [0.1 * i for i in range(1, 10)]  # 9 replies: p90 would be the slowest
    assert latency.percentile(ten, 90) is None
    assert latency.percentile([*ten, 5.0], 90) == pytest.approx(0.9)
    assert latency.percentile([], 50) is None
    assert latency.percentile([math.nan, 2.0], 50) == 2.0


def test_of_values_summary_like_ping_and_lost_apart() -> None:
    rtt = [0.040, 0.045, 0.050, math.nan, 0.065]
    lat = latency.of_values(rtt, lost=1)
    assert (lat.n, lat.lost) == (4, 1)
    assert lat.min == pytest.approx(0.040) and lat.max == pytest.approx(0.065)
    assert lat.avg == pytest.approx(0.05)
    assert lat.stddev == pytest.approx(float(np.std([0.040, 0.045, 0.050, 0.065], ddof=1)))
    assert lat.percentiles == {"p50": pytest.approx(0.045), "p90": None, "p99": None,
                               "p99.9": None}
    doc = lat.to_json()
    assert doc["percentiles_need"] == {"p50": 1, "p90": 10, "p99": 100, "p99.9": 1000}
    assert doc["replies"] == 4 and doc["lost"] == 1
    empty = latency.of_values([])
    assert empty.n == 0 and empty.avg is None and empty.percentiles["p50"] is None


def test_rtt_change_reads_inverse_delta_back() -> None:
    assert gate.rtt_change(-20.0) == pytest.approx(25.0)
    assert gate.rtt_change(25.0) == pytest.approx(-20.0)
    assert gate.rtt_change(0.0) == 0.0
    assert latency.inverse([2.0, 0.0, 0.5]) == [500.0, 2000.0]


def test_unknown_statistic_refused() -> None:
    with pytest.raises(ValueError, match="p95"):
        latency.run_values(None, "A", [0], "p95")  # type: ignore[arg-type]
