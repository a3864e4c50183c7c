"""Host state beside the knobs on real lab hosts: two `abtui run` sessions between which the
sender's `net.ipv4.tcp_sack` was turned off and its data link's MTU lowered by hand;
`abtui compare` and its gate name both, and a session during which they changed says so."""

from __future__ import annotations

import json
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from abtui.lab.netns import Lab
from abtui.sessions.session import Session

pytestmark = [pytest.mark.lab, pytest.mark.usefixtures("no_strays")]


def _ns(netns: str, *cmd: str) -> str:
    return subprocess.run(["ip", "netns", "exec", netns, *cmd], capture_output=True,
                          text=True, check=True, timeout=30).stdout


def _abtui(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "abtui", *args], capture_output=True,
                          text=True, timeout=120)


def _run(lab: Lab, out: Path) -> Session:
    done = _abtui("run", str(lab.profile_path), "--headless", "--duration", "3",
                  "--out", str(out))
    assert done.returncode == 0, done.stderr
    return Session.load(out)


@pytest.fixture
def sender(lab: Lab) -> Iterator[str]:
    """Pair A's sender's namespace; its tcp_sack and data0's MTU set back after the test."""
    host = lab.hosts(2)[0]
    sack = _ns(host.netns, "sysctl", "-n", "net.ipv4.tcp_sack").strip()
    mtu = _ns(host.netns, "cat", "/sys/class/net/data0/mtu").strip()
    try:
        yield host.netns
    finally:
        _ns(host.netns, "sysctl", "-qw", f"net.ipv4.tcp_sack={sack}")
        _ns(host.netns, "ip", "link", "set", "dev", "data0", "mtu", mtu)


def test_compare_names_sack_and_mtu_changed_between_sessions(lab: Lab, sender: str,
                                                             tmp_path: Path) -> None:
    alias = lab.hosts(2)[0].alias
    before = _run(lab, tmp_path / "before.jsonl")
    start = before.host_states[alias]["start"]
    assert start["device"] == "data0"
    assert start["items"]["sysctl net.ipv4.tcp_sack"] == "1"
    assert start["items"]["@dev mtu"] == "1500"
    assert "@dev offload tcp-segmentation-offload" in start["items"]
    assert start["items"]["@dev driver"] == "veth"
    assert "@dev coalescing" in start["unavailable"]  # veth has no `ethtool -c`: said, no error
    assert before.host_states[alias]["end"]["items"] == start["items"]

    _ns(sender, "sysctl", "-qw", "net.ipv4.tcp_sack=0")
    _ns(sender, "ip", "link", "set", "dev", "data0", "mtu", "1400")
    _run(lab, tmp_path / "after.jsonl")

    shown = _abtui("compare", str(tmp_path / "before.jsonl"), str(tmp_path / "after.jsonl"))
    assert shown.returncode == 0, shown.stderr
    table = shown.stdout.split("throughput in")[0]  # the table comes before the results
    assert f"| {alias} | net.ipv4.tcp_sack | 1 | 0 |" in table
    assert f"| {alias} | data0 mtu | 1500 | 1400 |" in table
    # nothing else moved on that host (IPv6's own MTU of the device follows the link's)
    assert table.count(f"| {alias} |") == 3
    assert f"| {alias} | net.ipv6.conf.data0.mtu | 1500 | 1400 |" in table

    gate = _abtui("compare", str(tmp_path / "before.jsonl"), str(tmp_path / "after.jsonl"),
                  "--fail-on-regression", "50%", "--allow-inconclusive")
    assert f"{alias}: net.ipv4.tcp_sack 1 → 0" in gate.stderr
    assert f"{alias}: data0 mtu 1500 → 1400" in gate.stderr
    assert "| net.ipv4.tcp_sack | 1 | 0 |" in gate.stdout.split("throughput in")[0]

    as_json = json.loads(_abtui("compare", str(tmp_path / "before.jsonl"),
                                str(tmp_path / "after.jsonl"), "--format", "json").stdout)
    assert {"host": alias, "setting": "net.ipv4.tcp_sack", "left": "1",
            "right": "0"} in as_json["host_state"]


def test_a_session_whose_host_changed_under_it_says_so(lab: Lab, sender: str,
                                                       tmp_path: Path) -> None:
    out = tmp_path / "changed.jsonl"
    proc = subprocess.Popen([sys.executable, "-m", "abtui", "run", str(lab.profile_path),
                             "--headless", "--duration", "6", "--out", str(out)],
                            stderr=subprocess.PIPE, text=True)
    try:
        from tests.lab.engine_kit import session_intervals, wait_for

        wait_for(lambda: session_intervals(out) >= 2)
        _ns(sender, "sysctl", "-qw", "net.ipv4.tcp_sack=0")  # someone else, mid-session
        _, err = proc.communicate(timeout=60)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
    assert proc.returncode == 0, err
    alias = lab.hosts(2)[0].alias
    assert f"hosts changed during the session: {alias}: net.ipv4.tcp_sack 1 → 0" in err
    report = _abtui("export", str(out), "--format", "md").stdout
    assert "## Hosts changed during the session" in report
    assert f"| {alias} | net.ipv4.tcp_sack | 1 | 0 |" in report
    marks = [m["text"] for m in Session.load(out).marks]
    assert any(f"{alias}: net.ipv4.tcp_sack 1 → 0" in m for m in marks)
