"""`abtui sessions`: list saved sessions (name, profile, date, pairs, duration), then what
cannot be read there (with why) and the saves cut short (with how to finish each).

Fast: only each file's header is read (a finished session's header carries its end time); a
live or cut-short journal's end comes from the last few KB of the file."""

from __future__ import annotations

import argparse
import json
import shlex
from pathlib import Path
from typing import Any


def add_sessions_dir(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--sessions-dir", metavar="DIR",
                        help="where sessions are kept (default: $ABTUI_SESSIONS_DIR, else the "
                             "user data folder's abtui/sessions)")


def add_session_out(parser: argparse.ArgumentParser) -> None:
    """`--out FILE` of the commands that write a session (run, bisect)."""
    parser.add_argument("--out", metavar="FILE",
                        help="the session file (default: a new session in the sessions folder, "
                             "see `abtui sessions`)")


def add_arguments(parser: argparse.ArgumentParser) -> None:
    add_sessions_dir(parser)
    parser.add_argument("--json", action="store_true", help="machine-readable list")


def _entry(path: Path) -> dict[str, Any]:
    """One session's line, from its header (and a live journal's first and last records);
    BadInput or OSError when it cannot be read."""
    from abtui.sessions import paths, reader

    h = reader.read_header(path)
    live = not path.name.endswith(paths.FINISHED_SUFFIX)
    end = reader.tail_time(path) if live else h.get("end")
    start = (reader.head_time(path) if live else h.get("start")) or h.get("created")
    return {"name": h.get("name") or paths.name_of(path), "path": str(path),
            "profile": h.get("profile", ""), "created": start, "pairs": h.get("pairs") or [],
            "duration": (end - start) if end and start else None, "finished": not live,
            "copy_of": h.get("copy_of")}


def _finish(part: Path) -> str:
    """How to finish a save cut short (abtui.sessions.paths.finish_part)."""
    from abtui.sessions import paths

    target = paths.finish_part(part)
    if target.exists() or paths.finished_path(target).exists():
        return f"a copy of it is saved already: remove it with rm {shlex.quote(str(part))}"
    return (f"a save cut short: mv {shlex.quote(str(part))} {shlex.quote(str(target))} makes "
            "it a session abtui reads (all it holds up to the cut)")


def run(args: argparse.Namespace) -> int:
    from abtui.core.errors import BadInput
    from abtui.core.files import why
    from abtui.core.text import visible
    from abtui.reports.formatting import fmt_duration, fmt_time
    from abtui.sessions import paths

    entries, unreadable = [], []
    for path in paths.list_sessions(args.sessions_dir):
        try:
            entries.append(_entry(path))
        except BadInput as exc:
            unreadable.append({"path": str(path), "why": str(exc)})
        except OSError as exc:
            unreadable.append({"path": str(path), "why": f"{path}: cannot read ({why(exc)})"})
    cut = [{"path": str(p), "finish": _finish(p)}
           for p in paths.cut_short_saves(args.sessions_dir)]
    if args.json:
        print(json.dumps({"sessions": entries, "unreadable": unreadable, "cut_short": cut},
                         indent=2))
        return 0
    if not entries:
        print(f"no sessions in {paths.sessions_dir(args.sessions_dir)}")
    else:
        print(f"{'name':<40} {'profile':<14} {'date':<23} {'pairs':<12} duration")
    for e in entries:
        dur = fmt_duration(e["duration"]) if e["duration"] is not None else "?"
        print(f"{visible(e['name']):<40} {visible(e['profile']):<14} "
              f"{fmt_time(e['created']):<23} {visible(','.join(e['pairs'])):<12} "
              f"{dur}{'' if e['finished'] else ' (live/cut short)'}"
              + (f" (saved copy of {visible(e['copy_of'])})" if e["copy_of"] else ""))
    for u in unreadable:
        print(f"cannot read: {visible(u['why'])}")
    for c in cut:
        print(f"cut short: {visible(c['path'])}: {visible(c['finish'])}")
    return 0
