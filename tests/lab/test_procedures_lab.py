"""The three procedures' profiles run headless on a lab of their own (`abtui run --lab
--quick`, the real CLI): every translation is printed, and `abtui export --format md` has the
table each community expects, with measured numbers in it."""

from __future__ import annotations

import os
import re
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.lab.namespaces import make_test_lab

pytestmark = pytest.mark.lab
PROFILES = Path(__file__).resolve().parents[2] / "profiles"
# a first table's one figure: the mean to 3 significant digits
NUMBER = r"(\d{3}0*|\d{2}\.\d|\d\.\d\d)"
UNIT = r"(Gbit/s|Mbit/s)"
# a Δ with its interval (when each side has 2 runs or more) and its verdict
DELTA = (r"[+-]\d+\.\d%( \[[+-]\d+\.\d, [+-]\d+\.\d\])? "
         r"(\(p=[\d.]+ n=\d+\+\d+\)|~ \(p=[\d.]+ n=\d+\+\d+\)|\? \(n=\d+\+\d+: too few runs\))")


@pytest.fixture(scope="module")
def lab_env(tmp_path_factory: pytest.TempPathFactory) -> Iterator[dict[str, str]]:
    """ABTUI_LAB naming a lab of this module's own; `--lab` brings it up, we take it down."""
    tmp = tmp_path_factory.mktemp("procs")
    lab = make_test_lab(tmp, "p")
    lab.down()
    env = {**os.environ, "ABTUI_LAB": f"{lab.name},{lab.ifprefix},{lab.mgmt}",
           "ABTUI_LAB_DIR": str(lab.state_dir.parent)}
    try:
        yield env
    finally:
        lab.down()


def _abtui(env: dict[str, str], *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "abtui", *args], env=env, text=True,
                          capture_output=True, timeout=60)


def _run(env: dict[str, str], tmp_path: Path, name: str) -> tuple[str, str]:
    out = tmp_path / f"{name}.jsonl"
    run = _abtui(env, "run", str(PROFILES / f"{name}.toml"), "--headless", "--lab", "--quick",
                 "--out", str(out))
    assert run.returncode == 0, run.stderr
    report = _abtui(env, "export", str(out), "--format", "md")
    assert report.returncode == 0, report.stderr
    return run.stderr, report.stdout


def _table(md: str, heading: str) -> list[list[str]]:
    """The rows of the Markdown table under `heading` (header row first)."""
    part = md.split(f"## {heading}\n", 1)[1].split("\n## ", 1)[0]
    return [[c.strip() for c in line.strip("|").split("|")]
            for line in part.splitlines() if line.startswith("|") and "---" not in line]


def _first(md: str, heading: str) -> list[list[str]]:
    """A first table without its CPU columns, once they were checked: a header ending in
    "CPU %" per side and pair (the lab's hosts are sampled), and in them `shared`: the lab's
    hosts are namespaces sharing this machine's CPUs, so no cell pretends to a per-host figure
    (— only where a pair never ran a row's configuration)."""
    rows = _table(md, heading)
    cpu = [i for i, h in enumerate(rows[0]) if h.endswith("CPU %")]
    assert cpu and len(cpu) % 2 == 0, rows[0]
    cells = [r[i] for r in rows[1:] for i in cpu]
    assert all(c in ("shared", "—") for c in cells) and "—" not in cells[:2], rows
    return [[c for i, c in enumerate(r) if i not in cpu] for r in rows]


def test_ix_enable_aim(lab_env, tmp_path):
    stderr, md = _run(lab_env, tmp_path, "ix-enable-aim")
    assert re.search(r"lab: knob enable_aim: dev\.ix\.2\.enable_aim .*→ net\.ipv4\.tcp_rmem "
                     r"on the receivers", stderr)
    assert "lab: watch interrupt_rate: sysctl dev.ix.2.queue*.interrupt_rate →" in stderr
    assert "lab: durations: iperf3 -t 10 -i 2, ping -c 10" in stderr
    rows = _first(md, "Throughput per kernel and enable_aim")
    assert rows[0][:2] == ["kernel", "enable_aim"] and re.fullmatch(UNIT, rows[0][2])
    assert rows[0][3] == "Δ vs stock at the same enable_aim"
    # kernels as groups, values in the profile's order, the hosts' own value (the stand-in's
    # last level) marked, the reference once at its own setting
    assert [(r[0].split(" (")[0], r[1]) for r in rows[1:]] == [
        ("stock", "0"), ("", "1"), ("", "2 (default)"), ("patched", "0"), ("", "1"),
        ("", "2 (default)"), ("linux-ref", "default")]
    assert [r[3] for r in rows[1:4]] == ["base0", "base1", "base2"] and rows[7][3] == "-"
    for r in rows[1:]:
        assert re.fullmatch(NUMBER, r[2]), r
    assert all(re.fullmatch(DELTA, r[3]) for r in rows[4:7])
    lat = _table(md, "Latency per kernel and enable_aim (ping RTT)")
    assert lat[0] == ["kernel", "enable_aim", "min/avg/max ms", "stddev", "p50", "p90", "p99",
                      "p99.9", "Δ avg"]  # seed 002's table, with percentiles
    assert len(lat) == 8 and all(re.fullmatch(r"[\d.]+/[\d.]+/[\d.]+", r[2]) for r in lat[1:])
    watches = _table(md, "Watches per pair and enable_aim")
    queues = {(r[0], r[1]) for r in watches[1:] if r[3] == "data0.rx_pps" and float(r[4]) > 0}
    assert queues == {(p, v) for p in ("stock", "patched", "linux-ref") for v in "012"}
    assert "## Lab translations" in md and "ethtool-coalesce adaptive-rx" in md


def test_softirq_crypto(lab_env, tmp_path):
    stderr, md = _run(lab_env, tmp_path, "softirq-crypto")
    assert "lab: knob tunnel: ipsec → vxlan (this kernel has no ESP/xfrm crypto)" in stderr
    assert "lab: knob tunnel: wireguard → wireguard through wireguard-go" in stderr
    rows = _first(md, "Throughput per tunnel and direction")
    assert rows[0][:2] == ["tunnel", "direction"] and rows[0][4] == "speedup AFTER vs BEFORE"
    # in MB/s as the crypto posts quote them, each pair with its hosts' kernel release
    release = re.escape(os.uname().release)
    assert re.fullmatch(rf"BEFORE \({release}\) \((GB/s|MB/s)\)", rows[0][2]), rows[0]
    assert rows[0][3] == f"AFTER ({os.uname().release}) {rows[0][2].rsplit(' ', 1)[1]}"
    # the profile's order: ipsec (as the lab ran it) before wireguard, TX before RX
    assert [(r[0], r[1]) for r in rows[1:]] == [
        (t, d) for t in ("ipsec (lab: vxlan)", "wireguard") for d in ("TX", "RX (-R)")]
    for r in rows[1:]:
        assert re.fullmatch(NUMBER, r[2]) and re.fullmatch(NUMBER, r[3]), r
        assert re.fullmatch(DELTA, r[4]), r
    assert "| knob tunnel | ipsec | vxlan |" in md
    assert "tunnel=vxlan |" not in md  # the generic tables name it as the profile does
    assert "## Δ vs configuration" not in md  # tunnels and directions are never compared
    assert re.search(r"\| BEFORE \| rx \| `iperf3 -c [\d.]+ .* -R` \|", md)  # RX ran -R


def test_wireguard_gro(lab_env, tmp_path):
    stderr, md = _run(lab_env, tmp_path, "wireguard-gro")
    assert "lab: kernels: baseline, gro-v1, gro-v2 → all on this machine's kernel" in stderr
    rows = _first(md, "Throughput per build")
    assert rows[0][0] == "build" and rows[0][-1] == "Δ vs baseline"
    assert rows[0][2:5] == [f"[SUM] sender ({rows[0][1]})", "retransmits",
                            f"[SUM] receiver ({rows[0][1]})"]
    assert [r[0] for r in rows[1:]] == [f"{b} ({os.uname().release})"
                                        for b in ("baseline", "gro-v1", "gro-v2")]
    assert all(re.fullmatch(NUMBER, r[1]) and float(r[1].split()[0]) > 0 for r in rows[1:])
    assert all(re.fullmatch(r"\d+", r[3]) for r in rows[1:])  # retransmits
    assert rows[1][5] == "-"
    assert all(re.fullmatch(DELTA, r[5]) for r in rows[2:])
    assert re.search(r"`iperf3 -c [\d.]+ -p 5201 -t 2 -i 0\.5 --forceflush -V -P 2 -R`", md)
