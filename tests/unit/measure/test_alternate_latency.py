"""An alternation judging latency: a stretch's RTT percentile from ping's replies or sockperf's
round trips, as 1/RTT, through the same stretches and verdicts as throughput; `--metric`."""

from __future__ import annotations

import argparse

import pytest

from abtui.commands.run import _alternation, add_arguments
from abtui.core.errors import BadInput
from abtui.core.events import Event, Ping, RequestResponse
from abtui.measure.alternate.design import Alternation
from abtui.measure.alternate.stretches import Stretches
from abtui.measure.alternate.verdicts import verdicts_for
from abtui.measure.latency_stretch import (
    inverse_percentile,
    measure,
    percentile_of,
    ping_readings,
    rr_readings,
)
from abtui.parse.sockperf import bins
from abtui.profile import parse_profile
from abtui.reports.latency import percentile
from tests.profiles import pair, profile_toml

PROFILE = profile_toml(pair(1, sender="a", receiver="b"), head="""
[profile]
name = "t"
[test]
ping_interval = 0.1
{extra}
""", knobs="""\
[[knobs]]
name = "rmem"
key = "net.ipv4.tcp_rmem"
values = ["1", "2"]
""")


def _args(*argv: str) -> argparse.Namespace:
    parser = argparse.ArgumentParser()
    add_arguments(parser)
    return parser.parse_args(["p.toml", *argv])


def test_a_percentile_of_inverses_is_the_rtt_percentile_inverted() -> None:
    rtts = [0.05 + 0.001 * i for i in range(200)] + [9.0, 12.0]
    for q in (50.0, 90.0, 99.0):
        got = inverse_percentile(q)([1000.0 / r for r in rtts])
        expect = percentile(rtts, q)
        assert expect is not None and got == pytest.approx(1000.0 / expect)
    # a lost reply (0) is the slowest of all
    assert inverse_percentile(50.0)([0.0, 0.0, 0.0, 10.0]) == 0.0
    assert inverse_percentile(99.0)([10.0] * 99) is None  # p99 needs 100
    assert percentile_of("rtt p99.9") == 99.9 and percentile_of("rtt") is None


def test_readings_from_pings_and_from_sockperf_intervals() -> None:
    ping = Event.of(Ping(run="r", phase=0, seq=1, rtt_ms=0.5), 1.0, pair="A")
    lost = Event.of(Ping(run="r", phase=0, seq=2, rtt_ms=None), 1.0, pair="A")
    assert ping_readings(0.2)(ping) == (2000.0, 0.2) and ping_readings(0.2)(lost) == (0.0, 0.2)
    rr = Event.of(RequestResponse(run="r", phase=0, start=2.0, end=3.0, n=4, avg_ms=None,
                                  p50_ms=None, p90_ms=None, p99_ms=None, p999_ms=None,
                                  max_ms=None, bins=[[0.5, 3], [2.0, 1]]), 5.0, pair="A")
    assert rr_readings(rr) == [(2000.0, 0.25)] * 3 + [(500.0, 0.25)]
    assert rr_readings(ping) is None


def _stretch_events(s: Stretches, rtts: list[float]) -> None:
    """One RR interval a second of 100 round trips each, begun after the stretch opened."""
    for k in range(0, len(rtts), 100):
        t = s.latest + 1.1
        s(Event.of(RequestResponse(run="r", phase=0, start=0.0, end=1.0, n=100, avg_ms=None,
                                   p50_ms=None, p90_ms=None, p99_ms=None, p999_ms=None,
                                   max_ms=None, bins=bins(rtts[k:k + 100])), t, pair="A"))


def test_a_stretch_sample_is_its_round_trips_percentile() -> None:
    profile = parse_profile(PROFILE.format(extra='sockperf = "ping-pong"'), "t.toml")
    v = verdicts_for(profile, Alternation("rmem", ("1", "2"), None, metric="rtt p99"), 10.0)
    s = v.stretches
    assert s.source is rr_readings and s.stat is not None
    s.begin(0, "1")
    slow = [0.1] * 196 + [5.0] * 4  # p99 5.0 ms
    _stretch_events(s, slow)
    s.begin(1, "2")
    _stretch_events(s, [0.1] * 200)  # p99 0.1 ms
    s.begin(2, "2")
    _stretch_events(s, [0.1] * 50)  # 50 round trips: no p99
    s.close(full=True)
    assert s.samples["A"] == {"1": [pytest.approx(200.0)], "2": [pytest.approx(10000.0)]}
    assert 2 in s.empty["A"]  # too few for its percentile: measured nothing
    # without sockperf, the same metric reads ping's replies
    ping = parse_profile(PROFILE.format(extra=""), "t.toml")
    source, stat = measure(ping.test, "rtt p50")
    assert source is not rr_readings and stat is not None
    plain = verdicts_for(ping, Alternation("rmem", ("1", "2"), 5.0), 10.0)
    assert plain.stretches.stat is None  # throughput: the time-weighted mean


def test_metric_arguments() -> None:
    ping = parse_profile(PROFILE.format(extra=""), "t.toml")
    rr = parse_profile(PROFILE.format(extra='sockperf = "ping-pong"'), "t.toml")
    quiet = parse_profile(PROFILE.format(extra="ping = false"), "t.toml")
    alt = _alternation(_args("--alternate", "rmem", "--every", "5", "--metric", "p99"), ping)
    assert alt is not None and alt.metric == "rtt p99"
    alt = _alternation(_args("--alternate", "rmem", "--metric", "p50"), rr)
    assert alt is not None and alt.metric == "rtt p50"
    got = _alternation(_args("--alternate", "rmem", "--every", "5", "--metric", "rtt"), ping)
    assert got is not None and got.metric == "rtt"
    for argv, profile, piece in (
            (("--alternate", "rmem", "--every", "5", "--metric", "p99"), rr,
             "come when each run ends"),
            (("--alternate", "rmem", "--every", "5", "--metric", "p50"), quiet,
             "ping nothing alongside"),
            (("--metric", "p50"), ping, "--metric goes with --alternate")):
        with pytest.raises(BadInput, match=piece):
            _alternation(_args(*argv), profile)
