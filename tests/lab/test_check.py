"""`abtui check` on the lab: all well (exit 0), a broken knob (exit 1), a bad profile (2)."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from abtui.lab.netns import Lab

pytestmark = pytest.mark.lab
ROOT = Path(__file__).resolve().parents[2]


def _check(profile: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "abtui", "check", str(profile)], cwd=ROOT,
                          capture_output=True, text=True, timeout=120)


def test_check_reports_every_host_knob_and_tunnel(lab: Lab, tmp_path):
    before = {h.alias: subprocess.run(["ip", "netns", "exec", h.netns, "sysctl", "-n",
                                       "net.ipv4.tcp_wmem"], capture_output=True,
                                      text=True).stdout for h in lab.hosts(2)}
    ok = _check(lab.profile_path)
    assert ok.returncode == 0, ok.stdout + ok.stderr
    lines = ok.stdout.splitlines()
    assert all(ln.startswith("ok   ") for ln in lines)
    for h in lab.hosts(2):
        assert any(ln.startswith(f"ok   {h.alias}: reachable, Linux ") for ln in lines)
        assert any(ln.startswith(f"ok   {h.alias}: iperf 3.") for ln in lines)
        assert any(ln.startswith(f"ok   {h.alias}: ping present") for ln in lines)
    senders = [h.alias for h in lab.hosts(2) if h.role == "sender"]
    for alias in senders:
        assert any(ln.startswith(f"ok   {alias}: knob tso on data0: tso = 'on', readable and "
                                 "writable") for ln in lines)
    assert sum("tunnels available: none, wireguard" in ln for ln in lines) == 2
    # what a change of each knob does to the runs going on, and why
    for said in ("knob tso: acts live: a change is measured on the runs going on (the default "
                 "for ethtool-feature)",
                 "knob tcp_rmem: a change restarts the runs (the profile says restart = true)",
                 "knob tunnel: a change restarts the runs (a tunnel knob always does)"):
        assert f"ok   {said}" in lines, ok.stdout
    after = {h.alias: subprocess.run(["ip", "netns", "exec", h.netns, "sysctl", "-n",
                                      "net.ipv4.tcp_wmem"], capture_output=True,
                                     text=True).stdout for h in lab.hosts(2)}
    assert after == before  # checking changes nothing

    broken = tmp_path / "broken.toml"
    broken.write_text(lab.profile_path.read_text().replace(
        "[test]\n", '[test]\niperf3 = "/opt/no-such-build/iperf3"\n').replace(
        'key = "net.ipv4.tcp_wmem"', 'key = "net.ipv4.no_such_knob"').replace(
        'values = ["none", "wireguard", "vxlan"]', 'values = ["none", "gre"]'))
    bad = _check(broken)
    assert bad.returncode == 1, bad.stdout + bad.stderr
    assert f"FAIL {senders[0]}: knob tcp_wmem: not readable: cannot read " \
           "net.ipv4.no_such_knob: unknown key" in bad.stdout
    assert "FAIL pair A: tunnels available" in bad.stdout and "gre (the kernel" in bad.stdout
    for h in lab.hosts(2):
        assert f"FAIL {h.alias}: iperf3 `/opt/no-such-build/iperf3` is missing: install it " \
               "there, or correct the profile's [test] iperf3" in bad.stdout


def test_check_lab_lists_translations_and_checks_the_lab_hosts(lab: Lab):
    """`abtui check PROFILE --lab`: a shipped procedure (its hosts are placeholders) checked
    as `run --lab` would run it: each translation a `lab` line, then the lab's hosts."""
    import os

    env = {**os.environ, "ABTUI_LAB": f"{lab.name},{lab.ifprefix},{lab.mgmt}",
           "ABTUI_LAB_DIR": str(lab.state_dir.parent)}
    done = subprocess.run([sys.executable, "-m", "abtui", "check",
                           str(ROOT / "profiles" / "softirq-crypto.toml"), "--lab"], cwd=ROOT,
                          env=env, capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stdout + done.stderr
    lines = done.stdout.splitlines()
    assert "lab  knob tunnel: ipsec → vxlan (this kernel has no ESP/xfrm crypto)" in lines
    assert any(ln.startswith("lab  pair BEFORE: vm-before → vmhost-before") for ln in lines)
    for h in lab.hosts(2):  # the lab's hosts, not the profile's vm-before and friends
        assert any(ln.startswith(f"ok   {h.alias}: reachable, Linux ") for ln in lines)
    assert sum("tunnels available: none, wireguard" in ln for ln in lines) == 2
    assert not any(ln.startswith("FAIL") or "vm-before:" in ln for ln in lines)
    assert lab.pair_count() == 2  # the lab that was up, not rebuilt
