"""ping parser: iputils (recorded, with and without -D), FreeBSD, macOS, busybox."""

from __future__ import annotations

import itertools
import math

import pytest

from abtui.parse.ping import PingParser, parse_ping
from tests.fixtures import FIXTURES

PING = FIXTURES / "ping"


def _stats(rtts: list[float]) -> tuple[float, float, float, float]:
    avg = sum(rtts) / len(rtts)
    return min(rtts), avg, max(rtts), math.sqrt(max(sum(x * x for x in rtts) / len(rtts)
                                                    - avg * avg, 0))


@pytest.mark.parametrize("name", ["iputils", "iputils-D", "freebsd", "macos-timeout",
                                  "busybox", "freebsd-loss-dup", "iputils-O-loss-dup"])
def test_summary_agrees_with_the_replies(name: str) -> None:
    r = parse_ping((PING / f"{name}.txt").read_text())
    s = r.summary
    assert r.error is None and r.parse_error is None and r.complete
    answered = [x.rtt_ms for x in r.replies if x.rtt_ms is not None]
    assert s.received == len(answered)
    assert s.loss_percent == pytest.approx(100 * (s.sent - s.received) / s.sent, abs=0.5)
    if r.duplicates == 0:
        mn, avg, mx, sd = _stats(answered)
        assert (s.rtt_min_ms, s.rtt_max_ms) == (mn, mx)
        assert s.rtt_avg_ms == pytest.approx(avg, abs=0.0015)
        if s.rtt_stddev_ms is not None:
            assert s.rtt_stddev_ms == pytest.approx(sd, abs=0.0015)
    seqs = [x.seq for x in r.replies]
    assert seqs == sorted(seqs) and len(set(seqs)) == len(seqs)


def test_iputils_recorded() -> None:
    r = parse_ping((PING / "iputils.txt").read_text())
    assert [x.seq for x in r.replies] == [1, 2, 3, 4, 5]
    assert r.replies[0].rtt_ms == 0.310 and r.replies[0].timestamp is None
    assert r.summary.rtt_stddev_ms == 0.106 and r.target == "127.0.0.1"


def test_iputils_D_epoch_prefixes() -> None:
    r = parse_ping((PING / "iputils-D.txt").read_text())
    ts = [x.timestamp for x in r.replies]
    assert ts[0] == 1796028656.165385
    gaps = [b - a for a, b in itertools.pairwise(ts)]  # type: ignore[operator]
    assert all(0.15 < g < 0.3 for g in gaps)  # -i 0.2


def test_bsd_family_counts_from_zero_and_busybox_has_no_stddev() -> None:
    assert parse_ping((PING / "freebsd.txt").read_text()).replies[0].seq == 0
    b = parse_ping((PING / "busybox.txt").read_text())
    assert b.replies[0].seq == 0 and b.summary.rtt_stddev_ms is None
    assert b.summary.rtt_avg_ms is not None


def test_losses_and_duplicates() -> None:
    f = parse_ping((PING / "freebsd-loss-dup.txt").read_text())
    assert f.duplicates == 1 and [x.seq for x in f.replies] == [0, 1, 2, 4, 5, 6, 8, 9]
    assert f.summary.loss_percent == 20.0
    m = parse_ping((PING / "macos-timeout.txt").read_text())
    assert [(x.seq, x.rtt_ms) for x in m.replies][:2] == [(0, 0.421), (1, None)]
    i = parse_ping((PING / "iputils-O-loss-dup.txt").read_text())
    assert (2, None) in [(x.seq, x.rtt_ms) for x in i.replies] and i.duplicates == 1


def test_unreachable_and_unknown_host() -> None:
    u = parse_ping((PING / "iputils-unreachable.txt").read_text())
    assert [x.rtt_ms for x in u.replies] == [None, None, None] and u.errors == 3
    assert u.summary.received == 0 and u.summary.loss_percent == 100
    assert u.summary.rtt_avg_ms is None
    h = parse_ping((PING / "iputils-unknown-host.txt").read_text())
    assert h.error == "nohost.invalid: Name or service not known"


def test_feed_returns_each_reply_on_its_line() -> None:
    p = PingParser()
    out = [p.feed(line) for line in (PING / "macos-timeout.txt").read_text().splitlines()]
    assert [len(x) for x in out[:6]] == [0, 1, 1, 1, 1, 1]
    assert p.finish().summary.sent == 5


def test_garbage() -> None:
    assert parse_ping("abc\n").parse_error == "no ping output found in 1 lines"


def test_iputils_statistics_with_every_counter() -> None:
    r = parse_ping("5 packets transmitted, 4 received, +1 duplicates, +1 corrupted, +2 errors, "
                   "20% packet loss, time 4006ms\n")
    assert (r.summary.sent, r.summary.received, r.summary.loss_percent) == (5, 4, 20.0)
    assert (r.duplicates, r.errors) == (1, 2)


def test_hostnames_and_ipv6_sources() -> None:
    r = parse_ping("PING ::1(::1) 56 data bytes\n"
                   "64 bytes from ::1: icmp_seq=1 ttl=64 time=0.046 ms\n"
                   "64 bytes from localhost (127.0.0.1): icmp_seq=2 ttl=64 time=1.20 ms\n"
                   "64 bytes from h: icmp_seq=3 ttl=64 time=1234 ms\n")
    assert [(x.seq, x.rtt_ms) for x in r.replies] == [(1, 0.046), (2, 1.2), (3, 1234.0)]
    assert r.target == "::1" and not r.complete
