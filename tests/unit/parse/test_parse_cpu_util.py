"""iperf3's own CPU figures: the `CPU Utilization:` line of -V text (3.12 recordings) and
`cpu_utilization_percent` in -J (3.12) and --json-stream (3.18), placed on the data's sender
and receiver, null where iperf3 never heard a side."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

from abtui.core.model import CpuUtil
from abtui.parse.importer import import_text
from abtui.parse.iperf3.json import parse_iperf3_json
from abtui.parse.iperf3.text import parse_iperf3_text
from tests.fixtures import FIXTURES

V312 = FIXTURES / "iperf3-3.12"
V318 = FIXTURES / "iperf3-3.18"
_LINE = re.compile(r"CPU Utilization: local/(\w+) ([\d.]+)% \(([\d.]+)%u/([\d.]+)%s\), "
                   r"remote/(\w+) ([\d.]+)% \(([\d.]+)%u/([\d.]+)%s\)")


def printed(path: Path) -> dict[str, CpuUtil]:
    """What the first CPU line of a log says, by its own labels (the test's oracle)."""
    m = _LINE.search(path.read_text())
    assert m is not None, path
    g = m.groups()
    return {g[0]: CpuUtil(*map(float, g[1:4])), g[4]: CpuUtil(*map(float, g[5:8]))}


@pytest.mark.parametrize("case", ["verbose", "verbose-p2", "verbose-udp"])
def test_text_client_has_both_sides_as_printed(case: str) -> None:
    path = V312 / f"{case}.client.txt"
    want = printed(path)
    s = parse_iperf3_text(path.read_text()).summary
    assert s.sender_cpu == want["sender"] and s.receiver_cpu == want["receiver"]


def test_text_reverse_only_the_sending_server_prints_cpu() -> None:
    client = parse_iperf3_text((V312 / "verbose-reverse.client.txt").read_text())
    assert client.summary.sender_cpu is None and client.summary.receiver_cpu is None
    path = V312 / "verbose-reverse.server.txt"
    server = parse_iperf3_text(path.read_text())
    # the server's "remote/receiver 0.0%" is not a figure: it never hears the client's
    assert server.summary.sender_cpu == printed(path)["sender"]
    assert server.summary.receiver_cpu is None


def test_text_bidir_client_is_the_sender_and_the_second_line_is_ignored() -> None:
    path = V312 / "verbose-bidir.client.txt"
    assert path.read_text().count("CPU Utilization:") == 2
    s = parse_iperf3_text(path.read_text()).summary
    want = printed(path)
    assert (s.sender_cpu, s.receiver_cpu) == (want["sender"], want["receiver"])
    server = parse_iperf3_text((V312 / "verbose-bidir.server.txt").read_text()).summary
    assert server.sender_cpu is None and server.receiver_cpu == want["receiver"]


def test_text_stopped_run_keeps_its_own_side_only() -> None:
    r = parse_iperf3_text((V312 / "stopped-verbose.client.txt").read_text())
    assert r.error and r.error.startswith("interrupt")
    assert r.summary.sender_cpu is not None and r.summary.receiver_cpu is None


def test_text_without_v_has_none() -> None:
    s = parse_iperf3_text((V312 / "tcp.client.txt").read_text()).summary
    assert s.sender_cpu is None and s.receiver_cpu is None


def _doc_cpu(path: Path) -> dict[str, float]:
    text = path.read_text()
    if path.suffix == ".jsonl":
        end = next(json.loads(x) for x in text.splitlines() if '"event":"end"' in x)["data"]
    else:
        end = json.loads(text)["end"]
    return dict(end["cpu_utilization_percent"])


def _side(cpu: dict[str, float], side: str) -> CpuUtil:
    return CpuUtil(cpu[f"{side}_total"], cpu[f"{side}_user"], cpu[f"{side}_system"])


@pytest.mark.parametrize("path,host_sends", [
    (V312 / "json-tcp.client.txt", True),
    (V312 / "json-udp.client.txt", True),
    (V312 / "json-p2-reverse.client.txt", False),
    (V312 / "json-bidir.client.txt", True),
    (V318 / "tcp.jsonl", True),
    (V318 / "tcp-p2.jsonl", True),
    (V318 / "udp.jsonl", True),
])
def test_json_host_and_remote_go_to_sender_and_receiver(path: Path, host_sends: bool) -> None:
    cpu = _doc_cpu(path)
    s = parse_iperf3_json(path.read_text()).summary
    host, remote = _side(cpu, "host"), _side(cpu, "remote")
    assert (s.sender_cpu, s.receiver_cpu) == ((host, remote) if host_sends else (remote, host))


def test_json_zeros_and_stopped_are_null() -> None:
    server = parse_iperf3_json((V312 / "json-udp.server.txt").read_text()).summary
    assert server.sender_cpu is None and server.receiver_cpu is not None  # remote: all 0
    stopped = parse_iperf3_json((V312 / "json-stopped.client.txt").read_text())
    assert stopped.summary.sender_cpu is not None and stopped.summary.receiver_cpu is None
    refused = parse_iperf3_json((V312 / "json-refused.client.txt").read_text()).summary
    assert refused.sender_cpu is None and refused.receiver_cpu is None


def test_import_json_carries_cpu_or_null() -> None:
    got = import_text((V312 / "verbose.client.txt").read_text(), "v.txt").to_json()
    assert got["summary"]["sender_cpu"] == {"total": 25.4, "user": 0.3, "system": 25.1}
    assert got["summary"]["receiver_cpu"] == {"total": 71.9, "user": 2.0, "system": 69.8}
    plain = import_text((V312 / "tcp.client.txt").read_text(), "t.txt").to_json()
    assert plain["summary"]["sender_cpu"] is None and plain["summary"]["receiver_cpu"] is None
