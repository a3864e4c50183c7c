"""Local processes by PID: is one still running? The lab asks it of its sshd daemons, the undo
journal of the abtui process that wrote a journal (a live writer's changes are not recovered)."""

from __future__ import annotations

import os


def pid_alive(pid: int) -> bool:
    """True while process `pid` exists and is not a zombie (a zombie has ended for our
    purpose: it only waits to be reaped)."""
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    try:
        with open(f"/proc/{pid}/stat") as fh:
            return fh.read().split(")")[-1].split()[0] != "Z"
    except OSError:
        return False
