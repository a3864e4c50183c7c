"""The lab's calls into this machine: run a program, read a pidfile, end processes, knock on
an sshd's port. Every other lab module (namespaces, sshd, VM pairs) does its work through these,
so a failed `ip` or `ssh-keygen` always says the same way what failed.
"""

from __future__ import annotations

import contextlib
import os
import signal
import socket
import subprocess
import time
from collections.abc import Iterable
from pathlib import Path

from abtui.core.errors import LabError
from abtui.core.pids import pid_alive


def run(args: list[str], check: bool = True, input_text: str | None = None) -> str:
    proc = subprocess.run(args, capture_output=True, text=True, input=input_text)
    if check and proc.returncode != 0:
        raise LabError(f"`{' '.join(args)}` failed: {proc.stderr.strip() or proc.stdout.strip()}")
    return proc.stdout


def ssh_banner(address: str, port: int = 22, timeout: float = 1.0) -> tuple[bool, str]:
    """True when an SSH server answers with its banner at address:port."""
    try:
        with socket.create_connection((address, port), timeout=timeout) as s:
            s.settimeout(timeout)
            banner = s.recv(64).decode("ascii", "replace")
    except OSError as exc:
        return False, str(exc)
    return banner.startswith("SSH-"), banner.strip()


def terminate(pids: Iterable[int], grace: float = 2.0) -> None:
    """SIGTERM the given PIDs (all of them started by the lab), SIGKILL what remains."""
    alive = set(pids)
    for pid in list(alive):
        try:
            os.kill(pid, signal.SIGTERM)
        except ProcessLookupError:
            alive.discard(pid)
    deadline = time.monotonic() + grace
    while alive and time.monotonic() < deadline:
        for pid in list(alive):
            if not pid_alive(pid):
                alive.discard(pid)
        time.sleep(0.02)
    for pid in alive:
        with contextlib.suppress(ProcessLookupError):
            os.kill(pid, signal.SIGKILL)


def pidfile_pid(path: Path) -> int | None:
    try:
        return int(path.read_text().split()[0])
    except (OSError, ValueError, IndexError):
        return None
