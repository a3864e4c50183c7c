"""iperf3 text parser against recorded 3.12 output, the 3.18 recording, and 3.1.3 samples.

Expectations come from the format itself: the number of intervals from -t/-i, interval bytes
adding up to the summary, rates agreeing with bytes/time only when bytes are 1024-based and bits
1000-based, the client's and server's logs of one test agreeing.
"""

from __future__ import annotations

import itertools
import time
from pathlib import Path

import pytest

from abtui.parse.iperf3.text import Iperf3TextParser, parse_iperf3_text
from tests.fixtures import FIXTURES

V312 = FIXTURES / "iperf3-3.12"
V313 = FIXTURES / "iperf3-3.1.3"


def parse(path: Path):  # type: ignore[no-untyped-def]
    return parse_iperf3_text(path.read_text())


# case -> (real intervals per direction, direction of the client log's intervals)
CLIENT_CASES = {
    "tcp": 3, "tcp-i05": 4, "reverse": 2, "p2": 2, "p2-reverse": 2, "udp": 2, "udp-p2": 2,
    "udp-fast": 2, "bidir": 2, "omit": 2, "timestamps": 2, "bidir-p2-omit": 2, "udp-reverse": 2,
    "udp-bidir": 2,
}


@pytest.mark.parametrize("case", sorted(CLIENT_CASES))
def test_client_logs_give_one_interval_per_period(case: str) -> None:
    r = parse(V312 / f"{case}.client.txt")
    assert r.error is None and r.parse_error is None and r.role == "client" and r.complete
    directions = ("tx", "rx") if r.bidir else (None,)
    for d in directions:
        real = [i for i in r.intervals if not i.omitted and i.direction == d]
        assert len(real) == CLIENT_CASES[case]
        # consecutive, starting at 0 after any omit period
        assert real[0].start == 0.0
        assert all(a.end == b.start for a, b in itertools.pairwise(real))


@pytest.mark.parametrize("case", sorted(CLIENT_CASES))
def test_interval_bytes_add_up_to_the_summary(case: str) -> None:
    r = parse(V312 / f"{case}.client.txt")
    for d, s in ((None, r.summary), ("tx", r.summary), ("rx", r.reverse_summary)):
        real = [i for i in r.intervals if not i.omitted and i.direction == d]
        if not real:
            continue
        assert s is not None
        # a client sees the sending side's intervals unless it receives (-R, bidir rx)
        receiving = r.reverse or d == "rx"
        total = s.receiver_bytes if receiving else s.sender_bytes
        assert total is not None
        # each printed figure has 3 significant digits
        assert sum(i.bytes for i in real) == pytest.approx(total, rel=0.015)


def _all_results():  # type: ignore[no-untyped-def]
    paths = sorted(V312.glob("*.txt")) + sorted(V313.glob("*.txt"))
    paths.append(FIXTURES / "iperf3-3.18" / "tcp-text.txt")
    return [p for p in paths if "json" not in p.name]


@pytest.mark.parametrize("path", _all_results(), ids=lambda p: f"{p.parent.name}/{p.name}")
def test_units_bytes_1024_bits_1000(path: Path) -> None:
    """bytes*8/seconds matches the printed rate only with KBytes=1024 and Kbits=1000."""
    r = parse(path)
    checked = 0
    for s in (r.summary, r.reverse_summary):
        if s is None or not s.duration:
            continue
        for nbytes, bps in ((s.sender_bytes, s.sender_bits_per_second),
                            (s.receiver_bytes, s.receiver_bits_per_second)):
            if nbytes and bps:
                assert nbytes * 8 / s.duration == pytest.approx(bps, rel=0.02)
                checked += 1
    for i in r.intervals:
        if i.end - i.start >= 0.99 and i.bytes > 0:
            assert i.bytes * 8 / (i.end - i.start) == pytest.approx(i.bits_per_second,
                                                                    rel=0.02)
            checked += 1
    if r.error is None:
        assert checked


def test_tcp_client_fields() -> None:
    r = parse(V312 / "tcp.client.txt")
    first = r.intervals[0]
    # "[  5]   0.00-1.00   sec  2.03 GBytes  17.5 Gbits/sec    1    895 KBytes"
    assert (first.start, first.end) == (0.0, 1.0)
    assert first.bytes == round(2.03 * 1024**3)
    assert first.bits_per_second == 17.5e9
    assert first.retransmits == 1 and first.cwnd_bytes == 895 * 1024
    s = r.summary
    assert s.protocol == "tcp" and s.retransmits == 3
    assert s.sender_bits_per_second == 19.3e9 and s.receiver_bits_per_second == 19.3e9
    assert s.duration == 3.0
    assert r.streams == 1 and r.reverse is None and not r.bidir


def test_parallel_takes_the_sum_lines_as_they_come() -> None:
    lines = (V312 / "p2.client.txt").read_text().splitlines()
    p = Iperf3TextParser()
    emitted = {}
    for n, line in enumerate(lines):
        for iv in p.feed(line):
            emitted[n] = iv
    # returned exactly on the [SUM] lines that are intervals, not on the stream lines
    sum_lines = [n for n, ln in enumerate(lines)
                 if ln.startswith("[SUM]") and not ln.rstrip().endswith(("sender", "receiver"))]
    assert sorted(emitted) == sum_lines
    assert emitted[sum_lines[0]].bits_per_second == 13.9e9
    r = p.finish()
    assert r.streams == 2 and r.summary.retransmits == 0
    assert r.summary.sender_bytes == round(4.38 * 1024**3)
    assert set(r.stream_summaries) == {"5", "7"}


def test_single_stream_interval_is_returned_on_its_own_line() -> None:
    p = Iperf3TextParser()
    out = [p.feed(line) for line in (V312 / "tcp.client.txt").read_text().splitlines()]
    assert [len(x) for x in out] == [0, 0, 0, 1, 1, 1, 0, 0, 0, 0, 0, 0]


def test_a_dying_test_repeats_its_last_interval_once() -> None:
    text = (V312 / "killed.client.txt").read_text()
    assert text.count("1.00-2.00") == 2  # the recording does have the repeat
    r = parse_iperf3_text(text)
    assert [(i.start, i.end) for i in r.intervals] == [(0.0, 1.0), (1.0, 2.0)]
    assert r.error == "unable to write to stream socket: Connection reset by peer"
    assert not r.complete


def test_refused() -> None:
    r = parse(V312 / "refused.client.txt")
    assert r.error == "unable to connect to server: Connection refused"
    assert r.intervals == [] and r.parse_error is None


def test_omitted_intervals_are_kept_and_flagged() -> None:
    r = parse(V312 / "omit.client.txt")
    assert [i.omitted for i in r.intervals] == [True, False, False]
    # "(omitted)" and the first real interval share "0.00-1.00": not a duplicate
    assert r.intervals[0].start == r.intervals[1].start == 0.0
    assert r.intervals[0].bits_per_second == 12.5e9


def test_bidir_directions_from_both_sides() -> None:
    c = parse(V312 / "bidir.client.txt")
    s = parse(V312 / "bidir.server.txt")
    assert [i.direction for i in c.intervals] == ["tx", "rx", "tx", "rx"]
    # the client sends on tx: Retr and Cwnd there; the server sends on rx
    assert all((i.cwnd_bytes is not None) == (i.direction == "tx") for i in c.intervals)
    assert all((i.cwnd_bytes is not None) == (i.direction == "rx") for i in s.intervals)
    assert c.reverse_summary is not None and s.reverse_summary is not None
    # both logs describe one test: the receiver figures agree
    assert c.summary.receiver_bits_per_second == s.summary.receiver_bits_per_second
    assert c.reverse_summary.sender_bits_per_second == pytest.approx(
        s.reverse_summary.sender_bits_per_second, rel=0.01)


def test_bidir_parallel_omit() -> None:
    r = parse(V312 / "bidir-p2-omit.client.txt")
    assert r.streams == 2 and r.bidir
    assert [(i.direction, i.omitted) for i in r.intervals[:4]] == [
        ("tx", True), ("rx", True), ("tx", False), ("rx", False)]
    assert r.summary.retransmits is not None and r.reverse_summary is not None


def test_server_log_has_only_its_side() -> None:
    c, s = parse(V312 / "tcp.client.txt"), parse(V312 / "tcp.server.txt")
    assert s.role == "server"
    assert s.summary.sender_bits_per_second is None and s.summary.retransmits is None
    assert s.summary.receiver_bits_per_second == c.summary.receiver_bits_per_second
    # the server prints a last, short interval the client does not
    assert len(s.intervals) == len(c.intervals) + 1
    assert s.intervals[-1].start == s.intervals[-1].end == 3.0
    rs = parse(V312 / "reverse.server.txt")
    assert rs.summary.retransmits == 6 and rs.summary.receiver_bits_per_second is None


def test_udp_client_and_server() -> None:
    c = parse(V312 / "udp-fast.client.txt")
    assert c.summary.protocol == "udp"
    assert [i.packets for i in c.intervals] == [76275, 68569]
    assert all(i.retransmits is None for i in c.intervals)
    # jitter and loss from the receiver line; the percentage from the counts
    assert c.summary.jitter_ms == 0.122
    assert c.summary.lost_percent == pytest.approx(100 * 25887 / 144317)
    s = parse(V312 / "udp-fast.server.txt")
    assert (s.intervals[0].jitter_ms, s.intervals[0].lost_packets,
            s.intervals[0].packets) == (0.006, 4119, 76271)


def test_timestamps_prefix() -> None:
    text = (V312 / "timestamps.client.txt").read_text()
    r = parse_iperf3_text(text)
    assert len(r.timestamps) == len(r.intervals) == 2
    lines = [ln for ln in text.splitlines() if "sec" in ln and "sender" not in ln
             and "receiver" not in ln]
    want = [time.mktime(time.strptime(ln[:24], "%a %b %d %H:%M:%S %Y")) for ln in lines]
    assert r.timestamps == want
    # same intervals as the lines without their prefix
    bare = parse_iperf3_text("\n".join(ln[25:] for ln in text.splitlines()))
    assert bare.intervals == r.intervals and bare.summary == r.summary


def test_epoch_and_title_prefixes() -> None:
    line = "[  5]   0.00-1.00   sec  1.00 MBytes  8.39 Mbits/sec    0   64.0 KBytes"
    r = parse_iperf3_text(f"1796028000 {line}\nlab-a:  {line.replace('0.00-1.00', '1.00-2.00')}")
    assert r.timestamps == [1796028000.0, None]
    assert [i.start for i in r.intervals] == [0.0, 1.0]


def test_iperf_3_18_one_space_less_before_sender() -> None:
    r = parse(FIXTURES / "iperf3-3.18" / "tcp-text.txt")
    assert r.summary.sender_bits_per_second == 31.2e9 and r.summary.retransmits == 3121
    assert r.summary.receiver_bits_per_second == 31.2e9
    assert [i.retransmits for i in r.intervals] == [1835, 1286]


def test_iperf_3_1_udp_unlabelled_report_and_sent_line() -> None:
    r = parse(V313 / "udp.client.txt")
    assert [i.packets for i in r.intervals] == [15, 16, 16]
    assert r.intervals[0].bits_per_second == 983e3 and r.intervals[0].bytes == 120 * 1024
    assert r.summary.jitter_ms == 0.043 and r.summary.lost_percent == 0.0
    assert r.summary.receiver_bits_per_second == 1.03e6


def test_iperf_3_1_nan_and_1e02_percent() -> None:
    r = parse(V313 / "udp-loss.server.txt")
    assert [(i.lost_packets, i.packets) for i in r.intervals] == [(0, 0), (12, 12), (8, 16)]
    assert r.intervals[0].bytes == 0 and r.intervals[0].bits_per_second == 0
    assert r.summary.lost_percent == pytest.approx(100 * 20 / 28)


def test_iperf_3_1_parallel_reverse() -> None:
    r = parse(V313 / "p2-reverse.client.txt")
    assert r.reverse and r.streams == 2
    assert [i.bits_per_second for i in r.intervals] == [942e6, 942e6]
    assert r.summary.retransmits == 4 and r.summary.receiver_bits_per_second == 941e6


def test_a_log_cut_before_its_header_still_finds_the_sum() -> None:
    lines = (V312 / "p2.client.txt").read_text().splitlines()
    cut = [ln for ln in lines if not ln.startswith(("[ ID]", "Connecting"))
           and "connected to" not in ln]
    r = parse_iperf3_text("\n".join(cut))
    assert [i.bits_per_second for i in r.intervals] == [13.9e9, 23.7e9]
    assert r.summary.sender_bits_per_second == 18.8e9


def test_rates_in_bytes_per_second_format() -> None:
    r = parse_iperf3_text("[  5]   0.00-1.00   sec  1.00 MBytes  1.00 MBytes/sec\n"
                          "[  5]   1.00-2.00   sec  1.00 KBytes  8.19 Kbits/sec\n")
    assert r.intervals[0].bits_per_second == 8 * 1024**2
    assert r.intervals[1].bytes == 1024 and r.intervals[1].bits_per_second == 8190


def test_garbage_gives_a_parse_error() -> None:
    r = parse_iperf3_text("hello\nworld\n")
    assert r.parse_error == "no iperf3 output found in 2 lines" and r.intervals == []
    assert parse_iperf3_text("").parse_error == "empty input"


def test_a_server_log_of_several_tests() -> None:
    text = (V312 / "tcp.server.txt").read_text() + (V312 / "udp.server.txt").read_text()
    r = parse_iperf3_text(text)
    # the intervals of both tests, the summary of the last one
    assert len(r.intervals) == 4 + 2
    assert r.summary.protocol == "udp" and r.summary.jitter_ms == 0.014
    assert any("another test" in w for w in r.warnings)


def test_live_properties_and_finish_twice() -> None:
    p = Iperf3TextParser()
    for line in (V312 / "killed.client.txt").read_text().splitlines()[:-1]:
        p.feed(line)
    assert p.error is None
    p.feed("iperf3: error - unable to write to stream socket: Connection reset by peer")
    assert p.error == "unable to write to stream socket: Connection reset by peer"
    assert p.finish() == p.finish()
    t = Iperf3TextParser()
    for line in (V312 / "timestamps.client.txt").read_text().splitlines()[:4]:
        t.feed(line)
    assert t.last_timestamp == time.mktime(time.strptime("Mon Nov 30 08:50:38 2026",
                                                         "%a %b %d %H:%M:%S %Y"))


def test_get_server_output_is_not_read_as_the_clients() -> None:
    r = parse(V312 / "server-output.client.txt")
    assert len(r.intervals) == 2 and r.complete
    assert r.summary.receiver_bits_per_second == 13.6e9 and r.summary.retransmits == 23
    assert r.summary.receiver_bytes == round(3.16 * 1024**3)


@pytest.mark.parametrize(("case", "unheard"), [
    ("stopped-tcp", "receiver"), ("stopped-reverse", "sender"), ("stopped-udp", "receiver"),
    ("stopped-udp-reverse", "sender")])
def test_a_stopped_client_s_summary_leaves_the_other_side_unknown(case: str,
                                                                  unheard: str) -> None:
    """SIGTERM (abtui stopping a run, Ctrl-C): iperf3 prints "interrupt - ..." and a summary
    whose other-side line says 0 — it never heard those figures: None, not 0."""
    text = (V312 / f"{case}.client.txt").read_text()
    zero = [line for line in text.splitlines() if line.rstrip().endswith(unheard)]
    assert len(zero) == 1 and " 0.00 bits/sec" in zero[0]  # what iperf3 printed
    r = parse(V312 / f"{case}.client.txt")
    assert r.error is not None and r.error.startswith("interrupt - ")
    s = r.summary
    assert getattr(s, f"{unheard}_bits_per_second") is None
    assert getattr(s, f"{unheard}_bytes") is None
    heard = "sender" if unheard == "receiver" else "receiver"
    assert getattr(s, f"{heard}_bits_per_second") > 0
    if unheard == "receiver":
        assert s.jitter_ms is None and s.lost_percent is None
        assert (s.retransmits is not None) == (s.protocol == "tcp")  # the sender's own
    # the server of the same test printed its own side only, and it is kept
    srv = parse(V312 / f"{case}.server.txt").summary
    assert getattr(srv, f"{heard}_bits_per_second") is None
    assert getattr(srv, f"{unheard}_bits_per_second") > 0


def test_udp_bidir_sending_lines_count_datagrams_not_retransmits() -> None:
    """--bidir UDP prints one "Jitter Lost/Total Datagrams" header for both directions; the
    sending direction's lines have only the datagram count under it."""
    for side, sending in (("client", "tx"), ("server", "rx")):
        r = parse(V312 / f"udp-bidir.{side}.txt")
        sent = [i for i in r.intervals if i.direction == sending]
        got = [i for i in r.intervals if i.direction != sending]
        assert [i.packets for i in sent] == [39, 38]
        assert all(i.retransmits is None and i.jitter_ms is None for i in sent)
        assert all(i.jitter_ms is not None and i.lost_packets == 0 for i in got)
