"""`abtui lab status` says why a host is down (issue 49): a DOWN line carries its reason
(the sshd killed here: "its sshd is not running"), and `--json` its `why`. A lab of the
test's own (its own names and state folder), taken down even when the test fails."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from abtui.lab.netns import Lab
from tests.lab.namespaces import kill_sshd, lab_names

pytestmark = pytest.mark.lab


def test_a_down_host_says_why(tmp_path: Path) -> None:
    name, ifprefix, mgmt = lab_names("w")
    env = dict(os.environ, ABTUI_LAB=f"{name},{ifprefix},{mgmt}", ABTUI_LAB_DIR=str(tmp_path))
    lab = Lab(name=name, octet=19, ifprefix=ifprefix, mgmt=mgmt, state_dir=tmp_path / name)

    def abtui(*args: str) -> subprocess.CompletedProcess[str]:
        return subprocess.run([sys.executable, "-m", "abtui", *args], capture_output=True,
                              text=True, env=env, timeout=120)

    try:
        up = abtui("lab", "up", "--pairs", "1")
        assert up.returncode == 0, up.stderr
        alias = f"{name}-a-snd"
        kill_sshd(lab, alias)
        st = abtui("lab", "status")
        assert st.returncode == 1, st.stdout + st.stderr
        lines = st.stdout.splitlines()
        down = next(ln for ln in lines if ln.startswith(f"DOWN {alias}"))
        assert down.endswith(": its sshd is not running"), down
        assert sum(ln.startswith("DOWN") for ln in lines) == 1  # the receiver is ok
        doc = json.loads(abtui("lab", "status", "--json").stdout)
        why = {h["alias"]: h["why"] for h in doc["hosts"]}
        assert why == {alias: "its sshd is not running", f"{name}-a-rcv": ""}
    finally:
        assert abtui("lab", "down").returncode == 0
