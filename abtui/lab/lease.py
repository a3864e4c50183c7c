"""Who is using a lab: one lease file per process, so no command tears down a lab that a
console or a run is measuring on.

A process that drives a lab's hosts (the console, `abtui run`, `abtui check`, `abtui demo`)
holds a lease: a file named by its PID in `<state dir>.users/` (beside the lab's state dir, so
a rebuild that removes the state dir keeps it), holding the process's start time. Taking the
lab down or rebuilding it refuses while another live process holds one, naming that process.
A lease whose process is gone (killed, crashed) or whose PID now belongs to another process
(the start time differs) is stale: it is removed and never blocks.
"""

from __future__ import annotations

import contextlib
import os
import sys
from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from pathlib import Path

from abtui.core.errors import LabError
from abtui.core.model import Profile
from abtui.core.text import visible


class LabInUse(LabError):
    """The lab is used by another process: it is not taken down or rebuilt."""


@dataclass(frozen=True, slots=True)
class LabUser:
    """A process that holds the lab (its pid) and what it runs."""

    pid: int
    command: str


def lease_dir(state_dir: Path) -> Path:
    return state_dir.with_name(f"{state_dir.name}.users")


def _start_time(pid: int) -> str | None:
    """The process's start time (clock ticks after boot): tells a PID reused apart."""
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return None
    fields = stat.rsplit(")", 1)[-1].split()
    return fields[19] if len(fields) > 19 else None


COMMAND_CHARS = 120


def _command(pid: int, recorded: str) -> str:
    """The process's command line as `ps` shows it, on one line, cut to COMMAND_CHARS."""
    try:
        argv = Path(f"/proc/{pid}/cmdline").read_bytes().rstrip(b"\0").split(b"\0")
        command = b" ".join(argv).decode(errors="replace") or recorded
    except OSError:
        command = recorded
    one = visible(" ".join(command.split()))
    return one if len(one) <= COMMAND_CHARS else one[:COMMAND_CHARS - 1] + "…"


def users(state_dir: Path) -> list[LabUser]:
    """The live processes holding a lease on the lab (stale leases are removed)."""
    folder = lease_dir(state_dir)
    out = []
    for path in sorted(folder.iterdir()) if folder.is_dir() else []:
        try:
            pid = int(path.name)
            started, _, command = path.read_text().partition("\n")
        except (ValueError, OSError):
            continue
        if started and _start_time(pid) == started:
            out.append(LabUser(pid, _command(pid, command.strip())))
        else:
            with contextlib.suppress(OSError):
                path.unlink()
    return out


def refuse_if_used(state_dir: Path, name: str, doing: str) -> None:
    """LabInUse (one line naming the process) when another process holds a lease."""
    others = [u for u in users(state_dir) if u.pid != os.getpid()]
    if others:
        who = "; ".join(f"PID {u.pid} ({u.command})" for u in others)
        raise LabInUse(f"lab {name!r} is in use by {who}: not {doing}; end that first, or "
                       "give this command a lab of its own (ABTUI_LAB=name,ifprefix,mgmt)")


# the leases this process holds (an inner `hold` of the same lab leaves the outer's alone)
_HELD: set[Path] = set()


@contextlib.contextmanager
def hold(state_dirs: Iterable[Path]) -> Iterator[None]:
    """This process uses these labs until the block ends (a crash leaves a stale lease)."""
    taken = []
    started = _start_time(os.getpid()) or ""
    try:
        for state_dir in state_dirs:
            folder = lease_dir(state_dir)
            path = folder / str(os.getpid())
            if path in _HELD:
                continue
            folder.mkdir(parents=True, exist_ok=True)
            path.write_text(f"{started}\n{' '.join(sys.argv)}\n")
            _HELD.add(path)
            taken.append(path)
        yield
    finally:
        for path in taken:
            _HELD.discard(path)
            with contextlib.suppress(OSError):
                path.unlink()


def labs_of(profile: Profile) -> list[Path]:
    """The state dirs of the labs a profile's hosts are on (its ssh_config is a lab's)."""
    if not profile.ssh_config:
        return []
    folder = Path(profile.ssh_config).expanduser().parent
    return [folder] if (folder / "lab.json").is_file() else []
