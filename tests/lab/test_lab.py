"""The lab itself: up, reach every host, iperf3 across each pair, down leaves nothing."""

from __future__ import annotations

import asyncio
import json
import os
import re
import subprocess
import sys

import pytest

from abtui.lab.netns import Lab
from abtui.remote.probe import probe_hosts
from tests.lab.guests import ssh_argv
from tests.lab.namespaces import lab_names, make_test_lab

pytestmark = pytest.mark.lab


_OTHER_LAB_LINK = re.compile(r"^[a-z0-9]+-(mgmt|[a-h][sr])$")


def _snapshot(lab: Lab) -> tuple[set[str], set[str], set[int]]:
    """Namespaces, root links and PIDs, leaving out other abtui labs that may come and go
    meanwhile (another checkout's test run)."""
    netns = {line.split()[0] for line in
             subprocess.run(["ip", "netns", "list"], capture_output=True, text=True).stdout
             .splitlines() if line.strip()}
    links = set(re.findall(r"^\d+: ([^:@]+)", subprocess.run(
        ["ip", "-o", "link", "show"], capture_output=True, text=True).stdout, re.M))
    ours = lab.layout.netns_prefix
    netns = {n for n in netns if not n.startswith("abtui-") or n.startswith(ours)}
    links = {n for n in links if not _OTHER_LAB_LINK.match(n) or n.startswith(f"{lab.ifprefix}-")}
    pids = {int(p) for p in os.listdir("/proc") if p.isdigit()}
    return netns, links, pids


def _sshd_pids(lab: Lab) -> set[int]:
    """Live sshd processes of this lab (a zombie waiting for init to reap it is not running)."""
    out = subprocess.run(["pgrep", "-x", "-f", f".*{lab.state_dir}.*"], capture_output=True,
                         text=True).stdout
    live = set()
    for pid in out.split():
        try:
            with open(f"/proc/{pid}/stat") as fh:
                if fh.read().rsplit(")", 1)[1].split()[0] != "Z":
                    live.add(int(pid))
        except OSError:
            pass
    return live


def test_up_reach_iperf_down_leaves_nothing(tmp_path):
    lab = make_test_lab(tmp_path, suffix="x")
    netns0, links0, _ = _snapshot(lab)
    sshd0 = _sshd_pids(lab)
    try:
        hosts = lab.up(pairs=2)
        assert len(hosts) == 4
        status = lab.status()
        assert status["ok"] and len(status["hosts"]) == 4
        assert len(_sshd_pids(lab)) == 4  # one sshd per host, found by its config path
        # every host answers over asyncssh, host key verified, with its own hostname
        results = asyncio.run(probe_hosts([h.alias for h in hosts], str(lab.ssh_config)))
        for h in hosts:
            ok, text = results[h.alias]
            assert ok, text
            assert f"hostname {h.alias}," in text
        # OpenSSH with strict host key checking, too
        for h in hosts:
            out = subprocess.run([*ssh_argv(lab), h.alias, "hostname"], capture_output=True,
                                 text=True, timeout=20)
            assert out.returncode == 0, out.stderr
            assert out.stdout.strip() == h.alias
        # iperf3 between the two hosts of each pair gives a non-zero rate
        for snd, rcv in ((hosts[0], hosts[1]), (hosts[2], hosts[3])):
            server = subprocess.Popen(["ip", "netns", "exec", rcv.netns, "iperf3", "-s", "-1",
                                       "-p", "5399"], stdout=subprocess.DEVNULL)
            try:
                for _ in range(50):
                    probe = subprocess.run(["ip", "netns", "exec", rcv.netns, "ss", "-ltn"],
                                           capture_output=True, text=True).stdout
                    if ":5399" in probe:
                        break
                    subprocess.run(["sleep", "0.05"])
                out = subprocess.run(["ip", "netns", "exec", snd.netns, "iperf3", "-c",
                                      rcv.data_address, "-p", "5399", "-t", "1", "-J"],
                                     capture_output=True, text=True, timeout=30)
                rate = json.loads(out.stdout)["end"]["sum_received"]["bits_per_second"]
                assert rate > 1e6
            finally:
                server.wait(timeout=10)
        # up again is idempotent and fast
        assert lab.up(pairs=2) == hosts
        assert lab.status()["ok"]
    finally:
        lab.down()
    netns1, links1, _ = _snapshot(lab)
    assert netns1 == netns0
    assert links1 == links0
    assert _sshd_pids(lab) == sshd0 == set()
    assert not lab.state_dir.exists()


def test_cli_status_json_contract(lab: Lab):
    env = dict(os.environ, ABTUI_LAB_DIR=str(lab.state_dir.parent))
    # the CLI's default lab is named "lab"; check the contract through the module API instead
    status = lab.status()
    assert set(status) >= {"profile", "ssh_config", "hosts"}
    for h in status["hosts"]:
        assert set(h) >= {"alias", "address", "pair", "role", "ok"}
        assert h["ok"] is True
    assert os.path.exists(status["profile"]) and os.path.exists(status["ssh_config"])
    out = subprocess.run([sys.executable, "-m", "abtui", "lab", "status", "--json"],
                         capture_output=True, text=True,
                         env=dict(env, ABTUI_LAB_DIR="/nonexistent"))
    assert out.returncode == 1  # no lab there: broken/down exits non-zero
    assert json.loads(out.stdout)["hosts"] == []


def test_lab_status_reports_broken_host(lab: Lab, tmp_path):
    other = make_test_lab(tmp_path, suffix="y")
    try:
        other.up(pairs=1)
        snd = other.hosts(1)[0]
        pid = int((other.state_dir / f"sshd-{snd.alias}.pid").read_text())
        os.kill(pid, 15)
        for _ in range(100):
            if not other.status()["hosts"][0]["ok"]:
                break
            subprocess.run(["sleep", "0.05"])
        st = other.status()
        assert st["ok"] is False
        assert [h["ok"] for h in st["hosts"]] == [False, True]
        other.up(pairs=1)  # up repairs it
        assert other.status()["ok"]
    finally:
        other.down()


def test_cli_up_status_down_cycle_leaves_the_machine_as_it_was(tmp_path):
    name, ifprefix, mgmt = lab_names("c")
    env = dict(os.environ, ABTUI_LAB=f"{name},{ifprefix},{mgmt}", ABTUI_LAB_DIR=str(tmp_path))
    clab = Lab(name=name, octet=19, ifprefix=ifprefix, mgmt=mgmt, state_dir=tmp_path / name)
    netns0, links0, _ = _snapshot(clab)
    sshd0 = _sshd_pids(clab)

    def abtui(*args: str) -> subprocess.CompletedProcess[str]:
        return subprocess.run([sys.executable, "-m", "abtui", *args], capture_output=True,
                              text=True, env=env, timeout=120)

    try:
        up = abtui("lab", "up", "--pairs", "1")
        assert up.returncode == 0, up.stderr
        st = abtui("lab", "status", "--json")
        assert st.returncode == 0, st.stderr
        status = json.loads(st.stdout)
        assert [h["alias"] for h in status["hosts"]] == [f"{name}-a-snd", f"{name}-a-rcv"]
        assert all(h["ok"] for h in status["hosts"])
        assert status["ssh_config"].startswith(str(tmp_path))
        bad = abtui("lab", "up", "--pairs", "9")
        assert bad.returncode == 2 and "--pairs" in bad.stderr
    finally:
        down = abtui("lab", "down")
    assert down.returncode == 0, down.stderr
    netns1, links1, _ = _snapshot(clab)
    assert (netns1, links1, _sshd_pids(clab)) == (netns0, links0, sshd0)
    assert abtui("lab", "status").returncode == 1
