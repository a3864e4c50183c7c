"""Local processes by PID: is one still running? The lab asks it of its sshd daemons, the undo
journal of the abtui process that wrote a journal (a live writer's changes are not recovered).
And the one rule on which process groups abtui may ever end, wherever a group is read."""

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


def pgid_problem(pgid: object, own: int | None = None) -> str:
    """Why a process group must never be ended ("" when it may): not a whole number, 0 (the
    caller's own group), 1 or below (`kill -TERM -1` is every process the caller may signal),
    or `own` (the controller's own group on that host)."""
    if not isinstance(pgid, int) or isinstance(pgid, bool):
        return f"process group {pgid!r} is not a whole number"
    if pgid <= 1:
        return (f"process group {pgid} is never ended (it would end every process, or "
                "the caller's own)")
    if own is not None and pgid == own:
        return f"process group {pgid} is the controller's own on that host"
    return ""
