"""`abtui compare`'s table as the report prints it: `--units bits|bytes` as `abtui export`, and
each configuration named as the profile names it (a lab translation's value shown as
`ipsec (lab: vxlan)`), while the gate and junit keep matching and naming by the recorded
configuration."""

from __future__ import annotations

from pathlib import Path
from xml.etree import ElementTree as ET

import pytest

from abtui.cli import main

FIXTURES = Path(__file__).resolve().parents[2]
BASE, SLOWER = (str(FIXTURES / "fixtures" / "sessions" / f"{n}.jsonl") for n in ("base", "slower"))
# recorded on the lab, where the profile's tunnel=ipsec ran as vxlan (a lab translation)
CRYPTO = str(FIXTURES / "golden" / "softirq-crypto.abtui.jsonl.gz")


def _compare(capsys: pytest.CaptureFixture[str], *args: str) -> str:
    assert main(["compare", *args]) == 0
    return capsys.readouterr().out


def test_units_bytes_prints_megabytes_per_second(capsys: pytest.CaptureFixture[str]) -> None:
    bits = _compare(capsys, BASE, SLOWER)
    assert "throughput in Mbit/s" in bits
    assert "| A | tcp_wmem=4096 16384 4194304 | 9150 ± 2410 (n=4) | 1310 ± 490 (n=4) |" in bits
    octets = _compare(capsys, BASE, SLOWER, "--units", "bytes")
    assert "throughput in MB/s" in octets
    # 9150 Mbit/s is 1144 MB/s: 3 significant digits, the Δ unchanged
    assert ("| A | tcp_wmem=4096 16384 4194304 | 1140 ± 300 (n=4) | 164 ± 61 (n=4) | "
            "-85.6% [-91.9, -74.6]") in octets
    assert _compare(capsys, BASE, SLOWER, "--units", "bits") == bits


def test_bad_units_are_refused(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["compare", BASE, SLOWER, "--units", "furlongs"]) == 2
    assert "--units" in capsys.readouterr().err


def test_configurations_are_named_as_the_profile_names_them(
        capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    md = _compare(capsys, CRYPTO, CRYPTO)
    rows = [line for line in md.splitlines() if line.startswith("| BEFORE |")]
    assert len(rows) == 4
    assert "| BEFORE | direction=tx, tunnel=ipsec (lab: vxlan) |" in md
    assert "| BEFORE | direction=tx, tunnel=wireguard |" in md
    assert not any("tunnel=vxlan" in row for row in rows)
    # the gate and junit still name a case by the configuration recorded
    out = tmp_path / "gate.xml"
    assert main(["compare", CRYPTO, CRYPTO, "--format", "junit", "--out", str(out)]) == 0
    names = {c.get("name") for c in ET.parse(out).getroot().iter("testcase")}
    assert "direction=tx, tunnel=vxlan" in names


def test_rows_follow_the_profiles_order_not_the_run_order(
        capsys: pytest.CaptureFixture[str]) -> None:
    """The recorded ix-enable-aim session ran its values shuffled (2, 1, 0): compare lists
    them as the profile does, as the report's tables do."""
    ix = str(FIXTURES / "golden" / "ix-enable-aim.abtui.jsonl.gz")
    md = _compare(capsys, ix, ix)
    for kernel in ("stock", "patched", "linux-ref"):
        shown = [line.split(" | ")[1] for line in md.splitlines()
                 if line.startswith(f"| {kernel} |")]
        assert shown == ["enable_aim=0", "enable_aim=1", "enable_aim=2"], md
