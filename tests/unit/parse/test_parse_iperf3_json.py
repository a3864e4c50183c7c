"""iperf3 -J (3.12, recorded) and --json-stream (3.18, recorded) parsing."""

from __future__ import annotations

import dataclasses
import json

import pytest

from abtui.parse.iperf3.json import Iperf3JsonParser, parse_iperf3_json
from tests.fixtures import FIXTURES

V312 = FIXTURES / "iperf3-3.12"
V318 = FIXTURES / "iperf3-3.18"


def test_json_document_intervals_are_the_sums() -> None:
    text = (V312 / "json-tcp.client.txt").read_text()
    doc = json.loads(text)
    r = parse_iperf3_json(text)
    assert r.format == "json" and r.role == "client" and r.version == "3.12"
    assert [i.bytes for i in r.intervals] == [iv["sum"]["bytes"] for iv in doc["intervals"]]
    assert [i.retransmits for i in r.intervals] == [
        iv["sum"]["retransmits"] for iv in doc["intervals"]]
    assert [i.cwnd_bytes for i in r.intervals] == [
        iv["streams"][0]["snd_cwnd"] for iv in doc["intervals"]]
    # -t 2 -i 1
    assert len(r.intervals) == doc["start"]["test_start"]["duration"]
    assert sum(i.bytes for i in r.intervals) == pytest.approx(r.summary.sender_bytes, rel=0.01)
    assert r.summary.sender_bits_per_second == doc["end"]["sum_sent"]["bits_per_second"]
    assert r.summary.receiver_bits_per_second == doc["end"]["sum_received"]["bits_per_second"]
    assert r.summary.retransmits == doc["end"]["sum_sent"]["retransmits"]
    assert r.summary_source == "iperf3.TestResult"


def test_wrapper_missing_keys_falls_back_to_the_json() -> None:
    doc = json.loads((V312 / "json-tcp.client.txt").read_text())
    full = parse_iperf3_json(json.dumps(doc))
    del doc["end"]["cpu_utilization_percent"]  # TestResult insists on it
    r = parse_iperf3_json(json.dumps(doc))
    assert r.summary_source == "json"
    assert r.summary == dataclasses.replace(full.summary, sender_cpu=None, receiver_cpu=None)


def test_iperf_3_12_reports_errors_in_json_and_exits_0() -> None:
    assert (V312 / "json-refused.rc").read_text().strip() == "0"
    r = parse_iperf3_json((V312 / "json-refused.client.txt").read_text())
    assert r.error == "unable to connect to server: Connection refused"
    assert r.intervals == [] and r.summary.sender_bits_per_second is None


def test_json_udp_client_and_server() -> None:
    c = parse_iperf3_json((V312 / "json-udp.client.txt").read_text())
    assert c.summary.protocol == "udp" and c.summary.retransmits is None
    assert [i.packets for i in c.intervals] == [39, 38]
    s = parse_iperf3_json((V312 / "json-udp.server.txt").read_text())
    assert s.role == "server"
    # the server fills the side it did not run with zeros: that is "not carried"
    assert s.summary.sender_bits_per_second is None
    assert s.summary.receiver_bytes == c.summary.receiver_bytes
    assert s.summary.jitter_ms == c.summary.jitter_ms
    assert s.intervals[0].jitter_ms is not None and s.intervals[0].lost_packets == 0


def test_json_bidir_directions() -> None:
    doc = json.loads((V312 / "json-bidir.client.txt").read_text())
    r = parse_iperf3_json(json.dumps(doc))
    assert r.bidir and [i.direction for i in r.intervals] == ["tx", "rx", "tx", "rx"]
    assert r.intervals[1].bytes == doc["intervals"][0]["sum_bidir_reverse"]["bytes"]
    assert r.reverse_summary is not None
    assert r.reverse_summary.sender_bytes == doc["end"]["sum_sent_bidir_reverse"]["bytes"]
    srv = parse_iperf3_json((V312 / "json-bidir.server.txt").read_text())
    # "sum" is the client's sending direction on both sides
    assert srv.intervals[0].direction == "tx" and srv.intervals[0].retransmits is None


def test_json_parallel_reverse_and_omit() -> None:
    r = parse_iperf3_json((V312 / "json-p2-reverse.client.txt").read_text())
    assert r.streams == 2 and r.reverse and all(i.cwnd_bytes is None for i in r.intervals)
    o = parse_iperf3_json((V312 / "json-omit.client.txt").read_text())
    assert [i.omitted for i in o.intervals] == [True, False, False]


def test_json_stream_is_incremental() -> None:
    lines = (V318 / "tcp.jsonl").read_text().splitlines()
    p = Iperf3JsonParser()
    counts = [len(p.feed(line)) for line in lines]
    assert counts == [0, 1, 1, 1, 0]
    r = p.finish()
    assert r.format == "json-stream" and r.version == "3.18" and r.complete
    end = json.loads(lines[-1])["data"]
    assert r.summary.sender_bytes == end["sum_sent"]["bytes"]
    assert r.summary.retransmits == end["sum_sent"]["retransmits"] == sum(
        i.retransmits for i in r.intervals)
    assert r.summary_source == "iperf3.TestResult"


def test_json_stream_parallel_and_udp() -> None:
    p2 = parse_iperf3_json((V318 / "tcp-p2.jsonl").read_text())
    assert p2.streams == 2 and [i.retransmits for i in p2.intervals] == [652, 0]
    udp = parse_iperf3_json((V318 / "udp.jsonl").read_text())
    assert udp.summary.protocol == "udp" and udp.summary.lost_percent == 0
    assert udp.summary.jitter_ms == pytest.approx(0.000816, rel=1e-3)


def test_json_stream_error_event() -> None:
    assert (V318 / "refused.rc").read_text().strip() == "exit=1"
    r = parse_iperf3_json((V318 / "refused.jsonl").read_text())
    assert r.error is not None and r.error.endswith("Connection refused")
    assert r.parse_error is None and not r.complete


def test_not_json() -> None:
    assert parse_iperf3_json("{ nope").parse_error == "not iperf3 JSON output (invalid JSON)"
    assert parse_iperf3_json('{"a": 1}').parse_error == "not iperf3 JSON output"
    assert parse_iperf3_json("").parse_error == "no iperf3 JSON found"


def test_json_stream_survives_stray_lines() -> None:
    lines = (V318 / "tcp.jsonl").read_text().splitlines()
    noisy = ["warning: report interval too small", lines[0], '{"event": broken', *lines[1:]]
    p = Iperf3JsonParser()
    assert [len(p.feed(line)) for line in noisy] == [0, 0, 0, 1, 1, 1, 0]
    r = p.finish()
    assert r.parse_error is None and r.complete and len(r.intervals) == 3


def test_finish_twice_and_live_error() -> None:
    for text in ((V312 / "json-tcp.client.txt").read_text(),
                 (V318 / "tcp-p2.jsonl").read_text()):
        p = Iperf3JsonParser()
        for line in text.splitlines():
            p.feed(line)
        first = p.finish()
        assert first == p.finish() and first.parse_error is None
    p = Iperf3JsonParser()
    p.feed((V318 / "refused.jsonl").read_text().splitlines()[0])
    assert p.error is not None and "Connection refused" in p.error


def test_a_stopped_client_s_receiver_figures_are_unknown() -> None:
    """-J interrupted by SIGTERM: "error": "interrupt - ..." and sum_received all zeros,
    which iperf3 never heard from the server: None, not 0."""
    doc = json.loads((V312 / "json-stopped.client.txt").read_text())
    assert doc["error"].startswith("interrupt - ") and doc["end"]["sum_received"]["bytes"] == 0
    r = parse_iperf3_json((V312 / "json-stopped.client.txt").read_text())
    assert r.summary.receiver_bits_per_second is None and r.summary.receiver_bytes is None
    assert r.summary.sender_bits_per_second == doc["end"]["sum_sent"]["bits_per_second"]
