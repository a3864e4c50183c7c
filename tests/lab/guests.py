"""The tests' side channel into a VM guest: OpenSSH with the lab's own config and known_hosts
(StrictHostKeyChecking=yes: a guest that came back with another host key is refused); and
abtui's own command line run against a VM lab, as a user would."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

from abtui.lab.netns import Lab

ROOT = Path(__file__).resolve().parents[2]


def ssh_argv(lab: Lab, *options: str) -> list[str]:
    """OpenSSH on the lab's own config, never asking (a prompt would hang the test), refusing
    a host key other than the lab's; `options` go before the host."""
    return ["ssh", "-F", str(lab.ssh_config), "-o", "BatchMode=yes", "-o",
            "StrictHostKeyChecking=yes", *options]


def guest_ssh(lab: Lab, alias: str, command: str, timeout: float = 180) -> str:
    """`command`'s standard output on the guest `alias` (CalledProcessError when it fails)."""
    return subprocess.run([*ssh_argv(lab), alias, command], capture_output=True,
                          text=True, check=True, timeout=timeout).stdout


def lab_env(lab: Lab, state: Path) -> dict[str, str]:
    """The environment that points abtui at `lab`, its state (undo journal, sessions) kept
    under `state`."""
    return {**os.environ, "ABTUI_LAB": f"{lab.name},{lab.ifprefix},{lab.mgmt}",
            "ABTUI_LAB_DIR": str(lab.state_dir.parent), "XDG_STATE_HOME": str(state),
            "PYTHONPATH": str(ROOT)}


def abtui_on(lab: Lab, state: Path, *args: str, timeout: float
             ) -> subprocess.CompletedProcess[str]:
    """`abtui ARGS` against `lab` (lab_env), its output kept."""
    return subprocess.run([sys.executable, "-m", "abtui", *args], cwd=ROOT,
                          env=lab_env(lab, state), capture_output=True, text=True,
                          timeout=timeout)
