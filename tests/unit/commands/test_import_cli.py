"""`abtui import FILE... [--json]`: the JSON of docs/contracts.md, exit codes, bad files."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from abtui.cli import main
from abtui.parse.importer import detect, import_file
from tests.fixtures import FIXTURES

V312 = FIXTURES / "iperf3-3.12"
IPERF_SUMMARY = {"protocol", "sender_bits_per_second", "receiver_bits_per_second",
                 "retransmits", "sender_cpu", "receiver_cpu"}
INTERVAL = {"start", "end", "bytes", "bits_per_second", "retransmits", "cwnd_bytes", "omitted"}
PING_SUMMARY = {"sent", "received", "loss_percent", "rtt_min_ms", "rtt_avg_ms", "rtt_max_ms",
                "rtt_stddev_ms"}


def run_json(capsys: pytest.CaptureFixture[str], *files: Path) -> tuple[int, dict]:
    rc = main(["import", "--json", *map(str, files)])
    out = capsys.readouterr().out
    return rc, json.loads(out)


def test_json_contract_for_every_kind(capsys: pytest.CaptureFixture[str]) -> None:
    files = [V312 / "p2.client.txt", V312 / "udp.client.txt", V312 / "json-tcp.client.txt",
             FIXTURES / "iperf3-3.18" / "tcp.jsonl", FIXTURES / "ping" / "freebsd.txt"]
    rc, doc = run_json(capsys, *files)
    assert rc == 0 and list(doc) == ["results"] and len(doc["results"]) == len(files)
    p2, udp, j, stream, ping = doc["results"]
    assert [r["source"] for r in doc["results"]] == [str(f) for f in files]
    for r in (p2, udp, j, stream):
        assert r["kind"] == "iperf3" and r["error"] is None
        assert all(set(i) == INTERVAL for i in r["intervals"])
    assert set(p2["summary"]) == IPERF_SUMMARY
    assert set(udp["summary"]) == IPERF_SUMMARY | {"jitter_ms", "lost_percent"}
    assert (p2["format"], j["format"], stream["format"]) == ("text", "json", "json-stream")
    # -P 2: the [SUM] lines, as plain numbers (1024-based bytes, 1000-based bits)
    assert [i["bits_per_second"] for i in p2["intervals"]] == [13.9e9, 23.7e9]
    assert p2["intervals"][0]["bytes"] == round(1.62 * 1024**3)
    assert p2["intervals"][0]["cwnd_bytes"] is None  # [SUM] lines carry no Cwnd
    assert udp["summary"]["retransmits"] is None
    assert ping["kind"] == "ping" and set(ping["summary"]) == PING_SUMMARY
    assert ping["replies"][0] == {"seq": 0, "rtt_ms": 0.081} and ping["error"] is None


def test_failed_tests_carry_iperf3s_message(capsys: pytest.CaptureFixture[str]) -> None:
    rc, doc = run_json(capsys, V312 / "refused.client.txt", V312 / "json-refused.client.txt",
                       V312 / "killed.client.txt")
    assert rc == 1
    msgs = [r["error"] for r in doc["results"]]
    assert msgs[0] == msgs[1] == "unable to connect to server: Connection refused"
    assert msgs[2] == "unable to write to stream socket: Connection reset by peer"
    assert len(doc["results"][2]["intervals"]) == 2


def test_bidir_adds_directions(capsys: pytest.CaptureFixture[str]) -> None:
    _, doc = run_json(capsys, V312 / "bidir.client.txt")
    r = doc["results"][0]
    assert [i["direction"] for i in r["intervals"]] == ["tx", "rx", "tx", "rx"]
    assert set(r["reverse_summary"]) == IPERF_SUMMARY


def test_missing_file_is_one_line_and_exit_2(capsys: pytest.CaptureFixture[str],
                                             tmp_path: Path) -> None:
    rc = main(["import", "--json", str(V312 / "tcp.client.txt"), str(tmp_path / "nope.txt")])
    cap = capsys.readouterr()
    assert rc == 2 and cap.out == ""
    assert cap.err.strip() == f"abtui: {tmp_path / 'nope.txt'}: no such file"
    garbage = tmp_path / "g.txt"
    garbage.write_bytes(b"\x00\xff garbage\n")
    assert main(["import", str(garbage)]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "not an iperf3 or ping output" in err


def test_readable_summary(capsys: pytest.CaptureFixture[str]) -> None:
    rc = main(["import", str(V312 / "udp-fast.client.txt"), str(FIXTURES / "ping" /
                                                                 "busybox.txt")])
    out = capsys.readouterr().out.splitlines()
    assert rc == 0
    assert out[0].endswith("udp-fast.client.txt: iperf3 text (client, udp)")
    assert "sender 19.0 Gbit/s, receiver 15.5 Gbit/s, jitter 0.122 ms, lost 17.9 %" in out[2]
    assert "5 sent, 5 received, 0 % loss" in out[4]


def test_detect_by_content(tmp_path: Path) -> None:
    assert detect((V312 / "timestamps.client.txt").read_text()) == ("iperf3", "text")
    assert detect((V312 / "tcp.server.txt").read_text()) == ("iperf3", "text")
    assert detect((FIXTURES / "ping" / "iputils-D.txt").read_text()) == ("ping", "text")
    assert detect("{}") is None
    # the extension means nothing
    f = tmp_path / "run.log"
    f.write_text((FIXTURES / "iperf3-3.18" / "udp.jsonl").read_text())
    assert import_file(str(f)).format == "json-stream"


def test_no_traceback_from_the_real_command(tmp_path: Path) -> None:
    out = subprocess.run([sys.executable, "-m", "abtui", "import", str(tmp_path)],
                         capture_output=True, text=True, timeout=60)
    assert out.returncode == 2 and "Traceback" not in out.stderr
    assert out.stderr.strip().endswith("is a directory, not a saved output")
