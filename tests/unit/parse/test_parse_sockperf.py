"""sockperf's output parsed from recordings (tests/fixtures/sockperf-3.7): every observation of
its full log, its own summary, its errors, and a server's start."""

from __future__ import annotations

from pathlib import Path

import pytest

from abtui.parse.sockperf import bins, parse_sockperf, server_outcome
from abtui.reports.latency import percentile

HERE = Path(__file__).resolve().parents[2] / "fixtures" / "sockperf-3.7"


def _text(name: str) -> str:
    return (HERE / f"{name}.txt").read_text()


@pytest.mark.parametrize("name", ["pp_udp", "pp_tcp", "ul_udp", "pp_interrupted"])
def test_every_observation_and_the_summary_agree(name: str) -> None:
    r = parse_sockperf(_text(name))
    assert r.complete and r.error is None
    # sockperf's "Total N observations" and its full log's rows (counted apart)
    rows = sum(1 for line in _text(name).splitlines()
               if line[:1].isdigit() and line.count(",") == 3)
    assert len(r.observations) == rows == r.total == r.received
    values = [v for _, v in r.observations]
    assert min(values) == pytest.approx(r.min_ms, abs=2e-6)
    assert max(values) == pytest.approx(r.max_ms, abs=2e-6)
    assert sum(values) / len(values) == pytest.approx(r.avg_ms, rel=1e-5)
    # the nearest-rank median of the rows is sockperf's own (its other ranks may differ by one)
    assert percentile(values, 50) == pytest.approx(r.percentiles_ms["p50"], abs=2e-6)
    assert percentile(values, 99) == pytest.approx(r.percentiles_ms["p99"], rel=0.05)
    # times on sockperf's clock, in order, after its ~2 s start-up
    times = [t for t, _ in r.observations]
    assert times == sorted(times) and 1.0 < times[0] < times[-1]


def test_escape_codes_are_no_part_of_a_figure() -> None:
    r = parse_sockperf(_text("pp_udp"))
    assert "\x1b" in _text("pp_udp") or "[2;35m" in _text("pp_udp")
    assert r.avg_ms == pytest.approx(2.098301) and r.stddev_ms is not None
    assert set(r.percentiles_ms) >= {"p50", "p90", "p99", "p99.9"} and r.dropped == 0


def test_one_way_latency_is_doubled_into_round_trips() -> None:
    text = _text("pp_tcp").replace("avg-rtt=", "avg-latency=")
    rtt, one_way = parse_sockperf(_text("pp_tcp")), parse_sockperf(text)
    assert one_way.avg_ms == pytest.approx(2 * rtt.avg_ms)
    assert one_way.percentiles_ms["p50"] == pytest.approx(2 * rtt.percentiles_ms["p50"])
    assert one_way.observations[0][1] == pytest.approx(2 * rtt.observations[0][1])


def test_refused_is_an_error_and_nothing_measured() -> None:
    r = parse_sockperf(_text("refused"))
    assert not r.observations and not r.complete
    assert r.error is not None and "Connection refused" in r.error


def test_garbage_never_raises() -> None:
    r = parse_sockperf("\x00\x1b[31m1, x, 2, 3\npacket, txTime\n1, 2, 3\n7, 1.0, 1.1, nan\n")
    assert r.observations == [] and r.error is None


def test_a_server_listening_or_on_a_taken_port() -> None:
    assert server_outcome(_text("server").splitlines()[:3]) is None
    said = server_outcome(_text("server_busy").splitlines())
    assert said is not None and "Address already in use" in said and "bind" in said
    assert server_outcome([]) == "it exited without a word"


def test_bins_keep_three_digits_and_every_count() -> None:
    values = [0.012345, 0.012349, 0.0124, 1.23456, 1.2349, 96.9]
    got = bins(values)
    assert got == [[0.0123, 2], [0.0124, 1], [1.23, 2], [96.9, 1]]
    assert sum(c for _, c in got) == len(values)
