"""An ssh-agent of a test's own holding an RSA and an ed25519 key (what a developer's agent
holds), ended when the test is done; skipped, saying why, without OpenSSH's agent tools."""

from __future__ import annotations

import os
import shutil
import subprocess
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import pytest


@contextmanager
def agent_with_keys(folder: Path) -> Iterator[str]:
    """The agent's socket path; the agent (started here, by its PID) ends on the way out."""
    if not (shutil.which("ssh-agent") and shutil.which("ssh-add") and shutil.which("ssh-keygen")):
        pytest.skip("needs OpenSSH's ssh-agent, ssh-add and ssh-keygen")
    sock = folder / "agent.sock"
    proc = subprocess.Popen(["ssh-agent", "-D", "-a", str(sock)], stdout=subprocess.DEVNULL,
                            stderr=subprocess.DEVNULL)
    try:
        deadline = time.monotonic() + 10
        while not sock.exists() and time.monotonic() < deadline:
            time.sleep(0.02)
        for kind in ("rsa", "ed25519"):
            key = folder / f"agent_{kind}"
            subprocess.run(["ssh-keygen", "-q", "-t", kind, "-N", "", "-f", str(key)],
                           check=True)
            subprocess.run(["ssh-add", "-q", str(key)], check=True, stderr=subprocess.DEVNULL,
                           env={**os.environ, "SSH_AUTH_SOCK": str(sock)})
        yield str(sock)
    finally:
        proc.terminate()
        proc.wait(10)
