"""A quiet terminal (issue 49): every command, run as a developer runs it (an ssh-agent
holding RSA and ed25519 keys in SSH_AUTH_SOCK, Python's default warning filters), writes no
library warning and no traceback to stderr. Real sshd, iperf3 and sysctls in namespaces.

The console's two commands (`tui`, `demo`) own the terminal and are driven through tmux by
tests/e2e; they load asyncssh through the same abtui.remote.sshlib as every command here."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from abtui.lab.netns import Lab
from tests.ssh_agent import agent_with_keys

pytestmark = [pytest.mark.lab, pytest.mark.usefixtures("no_strays")]
ROOT = Path(__file__).resolve().parents[2]
FIXTURES = ROOT / "tests" / "fixtures"
BIG, TINY = "4096 131072 6291456", "4096 8192 16384"  # the lab's tcp_rmem, and the step


def _noise(stderr: str) -> list[str]:
    return [ln for ln in stderr.splitlines()
            if "Warning" in ln or "Traceback" in ln or "warnings.warn" in ln]


# every command against the lab, about 45 s (tests/unit/remote/test_quiet_asyncssh.py keeps the
# filter in the default tier)
@pytest.mark.slow
def test_every_command_with_an_agent_holding_keys_is_quiet(lab: Lab, tmp_path: Path) -> None:
    env = {k: v for k, v in os.environ.items() if k != "PYTHONWARNINGS"}
    env.update({"ABTUI_LAB": f"{lab.name},{lab.ifprefix},{lab.mgmt}",
                "ABTUI_LAB_DIR": str(lab.state_dir.parent), "XDG_STATE_HOME": str(tmp_path),
                "ABTUI_SESSIONS_DIR": str(tmp_path / "sessions")})
    profile = str(lab.profile_path)
    one, two = tmp_path / "one.jsonl", tmp_path / "two.jsonl"
    logs = sorted(str(p) for p in FIXTURES.rglob("*.txt"))[:2]
    commands = [
        ["lab", "status"],
        ["check", profile],
        ["run", profile, "--headless", "--duration", "3", "--out", str(one)],
        ["run", profile, "--headless", "--duration", "3", "--out", str(two)],
        ["bisect", profile, "--knob", "tcp_rmem", "--good", BIG, "--bad", TINY,
         "--candidates", f"{BIG},{TINY}", "--every", "2", "--max-blocks", "2", "--pair", "A",
         "--out", str(tmp_path / "bisect.jsonl"), "--headless"],
        ["recover", "--dry-run"],
        ["sessions"],
        ["export", str(one), "--format", "md"],
        ["export", str(one), "--format", "text"],
        ["compare", str(one), str(two)],
        ["gate", str(one), str(two)],
        ["import", *logs],
    ]
    with agent_with_keys(tmp_path) as sock:
        for command in commands:
            done = subprocess.run([sys.executable, "-m", "abtui", *command], cwd=ROOT,
                                  env={**env, "SSH_AUTH_SOCK": sock}, capture_output=True,
                                  text=True, timeout=300)
            assert done.returncode in (0, 1, 3), (command, done.stdout, done.stderr)
            assert _noise(done.stderr) == [], (command, done.stderr)
