"""The WireGuard GRO procedure on three real kernel builds (the slow tier: six TCG guests).

`abtui lab up --pairs 3 --kernel A=… --kernel B=… --kernel C=…` brings up three VM pairs, each
booting another Debian build (6.1.170, 6.1.181, 6.1.192) on its own addresses and data bridge;
`abtui run profiles/wireguard-gro.toml --lab` (with `[lab.kernels]` naming those builds) runs
`iperf3 -P 2 -R` through the guests' kernel WireGuard, and the report's first table shows each
build's release with its `[SUM]` lines. Left out of `make test` (about five minutes of
emulated guests): `make test-slow` runs it, fetching its kernels first. Skipped, with the
reason, where qemu/virtme-ng or the kernel packages are missing.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from abtui.core.errors import AbtuiError
from abtui.lab.kernels import resolve
from abtui.lab.netns import Lab
from abtui.lab.vm import guest as lab_vm
from tests.lab.guests import ssh_argv
from tests.lab.namespaces import make_test_lab

pytestmark = [pytest.mark.lab, pytest.mark.slow, pytest.mark.timeout(1800)]
ROOT = Path(__file__).resolve().parents[2]
BUILDS = ("baseline", "gro-v1", "gro-v2")
KERNELS = os.environ.get("ABTUI_TEST_KERNELS3", ",".join(
    f"linux-image-6.1.0-{n}-amd64" for n in (47, 52, 57))).split(",")


def _abtui(lab: Lab, *args: str, timeout: float = 900) -> subprocess.CompletedProcess[str]:
    """`abtui ARGS` on this test's lab (its names and state folder)."""
    env = {**os.environ, "ABTUI_LAB": f"{lab.name},{lab.ifprefix},{lab.mgmt}",
           "ABTUI_LAB_DIR": str(lab.state_dir.parent)}
    return subprocess.run([sys.executable, "-m", "abtui", *args], cwd=ROOT, env=env,
                          capture_output=True, text=True, timeout=timeout)


@pytest.fixture(scope="module")
def three_builds(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[Lab, list[str]]]:
    """A lab of three VM pairs brought up by the command line; its releases in pair order."""
    reason = lab_vm.missing_reason()
    if reason:
        pytest.skip(reason)
    try:
        releases = [resolve(k).release for k in KERNELS[:3]]
    except AbtuiError as exc:
        pytest.skip(f"the test kernels cannot be had: {exc}")
    lab = make_test_lab(tmp_path_factory.mktemp("vmlab3"), "w")
    lab.down()
    try:
        proc = _abtui(lab, "lab", "up", "--pairs", "3",
                      *[f"--kernel={p}={k}" for p, k in zip("ABC", KERNELS, strict=True)])
        assert proc.returncode == 0, proc.stderr[-3000:]
        yield lab, releases
    finally:
        lab.down()


def test_three_vm_pairs_each_boot_their_build(three_builds: tuple[Lab, list[str]]):
    lab, releases = three_builds
    assert len(set(releases)) == 3, releases
    status = json.loads(_abtui(lab, "lab", "status", "--json").stdout)
    assert status["ok"] and status["pairs"] == 3, status
    hosts = status["hosts"]
    assert [(h["pair"], h["release"]) for h in hosts] == [
        (p, r) for p, r in zip("ABC", releases, strict=True) for _ in range(2)]
    # the address plan: every host its own management address, each pair its own data subnet
    assert len({h["address"] for h in hosts}) == 6
    assert [h["data_address"] for h in hosts] == [f"198.19.{p}.{i}" for p in (1, 2, 3)
                                                   for i in (1, 2)]
    for h in hosts:
        uname = subprocess.run([*ssh_argv(lab), h["alias"], "uname -r"],
                               capture_output=True, text=True, timeout=120).stdout.strip()
        assert uname == h["release"], h


def test_wireguard_gro_runs_on_three_real_builds(three_builds: tuple[Lab, list[str]],
                                                 tmp_path: Path):
    """The procedure as posted: `iperf3 -P 2 -R` through kernel WireGuard on each build, the
    first table per build with its release and iperf3's [SUM] sender and receiver lines."""
    lab, releases = three_builds
    profile = tmp_path / "wireguard-gro.toml"
    profile.write_text((ROOT / "profiles" / "wireguard-gro.toml").read_text() + "\n[lab.kernels]\n"
                       + "".join(f'{b} = "{k}"\n' for b, k in zip(BUILDS, KERNELS, strict=True)))
    out = tmp_path / "s.jsonl"
    proc = _abtui(lab, "run", str(profile), "--headless", "--lab", "--quick", "--out", str(out))
    assert proc.returncode == 0, proc.stderr[-3000:]
    assert "bringing up" not in proc.stderr  # the lab that is up has these builds
    said = [ln for ln in proc.stderr.splitlines() if ln.startswith("abtui: lab: ")]
    assert not any("knob tunnel" in ln for ln in said), said  # kernel WireGuard: no stand-in
    md = _abtui(lab, "export", str(out)).stdout
    part = md.split("## Throughput per build\n", 1)[1].split("\n## ", 1)[0]
    head, *rows = [[c.strip() for c in ln.strip("|").split("|")] for ln in part.splitlines()
                   if ln.startswith("|") and "---" not in ln]
    assert [r[0] for r in rows] == [f"{b} ({r})" for b, r in zip(BUILDS, releases, strict=True)]
    for column in ("[SUM] sender (Mbit/s)", "retransmits", "[SUM] receiver (Mbit/s)"):
        assert column in head, head
    doc = json.loads(_abtui(lab, "export", str(out), "--format", "json").stdout)
    for build in BUILDS:
        sums = [p["summary"] for p in doc["phases"] if p["pair"] == build and p["summary"]]
        assert sums and all(s["sender_bits_per_second"] > 0 for s in sums), (build, sums)
