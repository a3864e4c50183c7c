"""The tests' side channel into a VM guest: OpenSSH with the lab's own config and known_hosts
(StrictHostKeyChecking=yes: a guest that came back with another host key is refused)."""

from __future__ import annotations

import subprocess

from abtui.lab.netns import Lab


def ssh_argv(lab: Lab, *options: str) -> list[str]:
    """OpenSSH on the lab's own config, never asking (a prompt would hang the test), refusing
    a host key other than the lab's; `options` go before the host."""
    return ["ssh", "-F", str(lab.ssh_config), "-o", "BatchMode=yes", "-o",
            "StrictHostKeyChecking=yes", *options]


def guest_ssh(lab: Lab, alias: str, command: str, timeout: float = 180) -> str:
    """`command`'s standard output on the guest `alias` (CalledProcessError when it fails)."""
    return subprocess.run([*ssh_argv(lab), alias, command], capture_output=True,
                          text=True, check=True, timeout=timeout).stdout
