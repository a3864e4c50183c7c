"""`lab status` on the real lab: a host whose sshd answers but does not let the lab's key in
is DOWN, saying why (before, its banner alone made it "ok")."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from abtui.lab.netns import Lab
from tests.reliability import Reliability

pytestmark = pytest.mark.lab

ROOT = Path(__file__).resolve().parents[2]


@pytest.mark.reliability(
    "46m", "`abtui lab status` on hosts whose sshd answers but does not let the lab's key in",
    "every such host DOWN with why (`ssh with the lab's keys failed: … Permission denied`; it "
    "said ok on the banner alone); ok again once the key is back")
def test_status_logs_in_with_the_labs_keys_and_says_why_not(lab: Lab,
                                                            reliability: Reliability) -> None:
    keys = lab.state_dir / "authorized_keys"
    saved = keys.read_text()
    keys.write_text("")
    try:
        refused = lab.status(login=True)
        banner_only = lab.status()
    finally:
        keys.write_text(saved)
    assert banner_only["ok"]  # every sshd answers
    assert not refused["ok"]
    for h in refused["hosts"]:  # type: ignore[attr-defined]
        assert not h["ok"] and h["why"].startswith("ssh with the lab's keys failed: ")
        assert "Permission denied" in h["why"], h["why"]
    again = lab.status(login=True)
    assert again["ok"] and all(h["why"] == "" for h in again["hosts"])  # type: ignore[attr-defined]
    reliability.row(hosts_down=len(refused["hosts"]))  # type: ignore[arg-type]


def _lab_up(name: str, ifprefix: str, mgmt: int, state: Path) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "ABTUI_LAB": f"{name},{ifprefix},{mgmt}", "ABTUI_LAB_DIR": str(state),
           "XDG_STATE_HOME": str(state / "xdg"), "PYTHONPATH": str(ROOT)}
    return subprocess.run([sys.executable, "-m", "abtui", "lab", "up", "--pairs", "1"],
                          cwd=ROOT, env=env, capture_output=True, text=True, timeout=120)


def _made(name: str, ifprefix: str) -> list[str]:
    """What a lab `name` with `ifprefix` has made on this machine: namespaces and links."""
    spaces = subprocess.run(["ip", "netns", "list"], capture_output=True, text=True).stdout
    links = subprocess.run(["ip", "-br", "link"], capture_output=True, text=True).stdout
    return ([ln.split()[0] for ln in spaces.splitlines() if ln.startswith(f"abtui-{name}-")]
            + [ln.split()[0] for ln in links.splitlines() if ln.startswith(f"{ifprefix}-")])


def _free_mgmt(first: str) -> int:
    """A management octet no address of this machine uses under `first` (198.19)."""
    used = subprocess.run(["ip", "-4", "-br", "addr"], capture_output=True, text=True).stdout
    return next(n for n in range(250, 2, -1) if f" {first}.{n}." not in f" {used}")


@pytest.mark.reliability(
    "46l", "`abtui lab up` of a second lab given the running lab's management subnet, or its "
    "interface prefix",
    "exit 2, one line naming the subnet (or prefix) and the interface using it, nothing made "
    "(no namespace, no link); the running lab untouched and ok")
@pytest.mark.parametrize("taken", ["subnet", "prefix"])
def test_lab_up_refuses_a_subnet_or_prefix_the_running_lab_uses(lab: Lab, tmp_path: Path,
                                                                  taken: str,
                                                                  reliability: Reliability
                                                                  ) -> None:
    """A second `abtui lab up` given the running lab's management subnet (or its interface
    prefix) under another name: exit 2, one line naming what is in use, nothing made (it took
    the subnet, and both labs' hosts answered on one bridge's addresses)."""
    name, ifprefix = "rq" + lab.name[-2:], "rq" + lab.ifprefix[-1]
    net = lab.layout.bridge_address.rsplit(".", 1)[0]  # the running lab's management /24
    mgmt = lab.mgmt if taken == "subnet" else _free_mgmt(net.rsplit(".", 1)[0])
    if taken == "prefix":
        ifprefix = lab.ifprefix
    before = _made(lab.name, lab.ifprefix)
    try:
        said = _lab_up(name, ifprefix, mgmt, tmp_path)
    finally:
        made = [m for m in _made(name, ifprefix) if m not in before]
        if made and taken == "subnet":  # refused nothing: take what it made down
            env = {**os.environ, "ABTUI_LAB": f"{name},{ifprefix},{mgmt}",
                   "ABTUI_LAB_DIR": str(tmp_path), "PYTHONPATH": str(ROOT)}
            subprocess.run([sys.executable, "-m", "abtui", "lab", "down"], cwd=ROOT, env=env,
                           capture_output=True, timeout=120)
        for space in (m for m in made if m.startswith("abtui-")):  # never the running lab's
            subprocess.run(["ip", "netns", "del", space], capture_output=True)
    assert said.returncode == 2, said.stdout + said.stderr
    lines = said.stderr.strip().splitlines()
    assert len(lines) == 1 and "Traceback" not in said.stderr, said.stderr
    what = f"{net}.0/24 is in use on {lab.ifprefix}-mgmt" if taken == "subnet" \
        else f"interface prefix of {lab.ifprefix}-mgmt is in use by another lab"
    assert what in lines[0], lines[0]
    assert made == []
    assert _made(lab.name, lab.ifprefix) == before and lab.status()["ok"]
    reliability.row(exit=said.returncode, made=len(made), line=f"`{lines[0]}`")
