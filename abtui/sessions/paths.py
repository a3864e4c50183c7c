"""Naming and locating sessions: where they live, what a new one is called, which file a
typed name or path means. No file is read or written here beyond listing the folder; the
journal itself is `writer` (writing) and `reader` (reading). See docs/session-format.md.
"""

from __future__ import annotations

import os
import re
import time
from datetime import UTC, datetime
from pathlib import Path

from abtui.core.errors import BadInput

LIVE_SUFFIX = ".abtui.jsonl"
FINISHED_SUFFIX = ".abtui.jsonl.gz"
ENV_DIR = "ABTUI_SESSIONS_DIR"
PART_SUFFIX = ".part"


def sessions_dir(override: str | os.PathLike[str] | None = None) -> Path:
    """Where sessions live: `override`, else $ABTUI_SESSIONS_DIR, else the user's data dir."""
    if override:
        return Path(override).expanduser()
    env = os.environ.get(ENV_DIR)
    if env:
        return Path(env).expanduser()
    import platformdirs

    return Path(platformdirs.user_data_dir("abtui")) / "sessions"


def session_name(profile_name: str, when: float | None = None) -> str:
    """`<profile>-<UTC timestamp>`, safe as a file name, sorting by time within a profile."""
    stamp = datetime.fromtimestamp(time.time() if when is None else when, UTC)
    safe = re.sub(r"[^A-Za-z0-9._-]+", "_", profile_name).strip("._") or "session"
    return f"{safe}-{stamp:%Y%m%dT%H%M%SZ}"


def new_session_path(profile_name: str, directory: str | os.PathLike[str] | None = None,
                     when: float | None = None) -> Path:
    """A fresh live-journal path for a profile, never one that exists already."""
    folder = sessions_dir(directory)
    base = session_name(profile_name, when)
    path = folder / f"{base}{LIVE_SUFFIX}"
    n = 1
    while path.exists() or path.with_name(path.name + ".gz").exists():
        n += 1
        path = folder / f"{base}-{n}{LIVE_SUFFIX}"
    return path


def name_of(path: Path) -> str:
    """The session's name: its file name without the journal suffixes."""
    name = path.name
    for suffix in (FINISHED_SUFFIX, LIVE_SUFFIX, ".jsonl.gz", ".gz", ".jsonl"):
        if name.endswith(suffix):
            return name[: -len(suffix)]
    return name


def saved_path(path: Path) -> Path:
    """Where a session saved under a typed `path` goes: exactly there when it names a session
    file (`.jsonl`, a plain journal, or `.jsonl.gz`), else NAME.abtui.jsonl.gz."""
    if path.name.endswith((".jsonl", ".jsonl.gz")):
        return path
    return finished_path(path)


def finished_path(path: Path) -> Path:
    """Where a session journalled at `path` is once finished: NAME.abtui.jsonl.gz beside it
    (whatever suffix `path` has)."""
    return path.with_name(name_of(path) + FINISHED_SUFFIX)


def find_session(ref: str, directory: str | os.PathLike[str] | None = None) -> Path:
    """A session file from a path, or from a name in the sessions folder; BadInput if none."""
    p = Path(ref).expanduser()
    if p.is_file():
        return p
    if p.name.endswith(".jsonl") and finished_path(p).is_file():
        return finished_path(p)  # a journal's path, once the journal was finished
    folder = sessions_dir(directory)
    for cand in (folder / ref, folder / f"{ref}{FINISHED_SUFFIX}", folder / f"{ref}{LIVE_SUFFIX}"):
        if cand.is_file():
            return cand
    raise BadInput(f"{ref}: no such session (not a file, nor a session in {folder})")


def part_path(path: Path) -> Path:
    """Where a save to `path` is journalled until it is whole (`.NAME.part`, hidden beside
    it): what a save cut short (the console killed) leaves."""
    return path.with_name(f".{path.name}{PART_SUFFIX}")


def finish_part(part: Path) -> Path:
    """Where a save cut short can be moved to be read as the session it holds: its name
    without the dot and `.part`, as a plain journal (the part is one, not compressed)."""
    name = part.name[1:-len(PART_SUFFIX)]
    return part.with_name(name.removesuffix(".gz"))


def cut_short_saves(directory: str | os.PathLike[str] | None = None) -> list[Path]:
    """The saves cut short in the sessions folder (part_path), oldest first by name."""
    folder = sessions_dir(directory)
    if not folder.is_dir():
        return []
    return sorted(p for p in folder.iterdir()
                  if p.name.startswith(".") and p.name.endswith(PART_SUFFIX) and p.is_file())


def list_sessions(directory: str | os.PathLike[str] | None = None) -> list[Path]:
    """Session files in the folder, oldest first by name."""
    folder = sessions_dir(directory)
    if not folder.is_dir():
        return []
    files = [p for p in folder.iterdir()
             if p.name.endswith((FINISHED_SUFFIX, LIVE_SUFFIX)) and p.is_file()]
    return sorted(files, key=lambda p: (p.stat().st_mtime, p.name))
