"""`abtui sessions`: list saved sessions (name, profile, date, pairs, duration).

Fast: only each file's header is read (a finished session's header carries its end time); a
live or cut-short journal's end comes from the last few KB of the file."""

from __future__ import annotations

import argparse
import json


def add_sessions_dir(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--sessions-dir", metavar="DIR",
                        help="where sessions are kept (default: $ABTUI_SESSIONS_DIR, else the "
                             "user data folder's abtui/sessions)")


def add_arguments(parser: argparse.ArgumentParser) -> None:
    add_sessions_dir(parser)
    parser.add_argument("--json", action="store_true", help="machine-readable list")


def run(args: argparse.Namespace) -> int:
    from abtui.core.errors import BadInput
    from abtui.reports.formatting import fmt_duration, fmt_time
    from abtui.sessions import paths, reader

    entries = []
    for path in paths.list_sessions(args.sessions_dir):
        try:
            h = reader.read_header(path)
        except BadInput:
            continue
        live = not path.name.endswith(paths.FINISHED_SUFFIX)
        end = reader.tail_time(path) if live else h.get("end")
        start = (reader.head_time(path) if live else h.get("start")) or h.get("created")
        entries.append({"name": h.get("name") or paths.name_of(path), "path": str(path),
                        "profile": h.get("profile", ""), "created": start,
                        "pairs": h.get("pairs") or [],
                        "duration": (end - start) if end and start else None,
                        "finished": not live})
    if args.json:
        print(json.dumps({"sessions": entries}, indent=2))
        return 0
    if not entries:
        print(f"no sessions in {paths.sessions_dir(args.sessions_dir)}")
        return 0
    print(f"{'name':<40} {'profile':<14} {'date':<23} {'pairs':<12} duration")
    for e in entries:
        dur = fmt_duration(e["duration"]) if e["duration"] is not None else "?"
        print(f"{e['name']:<40} {e['profile']:<14} {fmt_time(e['created']):<23} "
              f"{','.join(e['pairs']):<12} {dur}{'' if e['finished'] else ' (live/cut short)'}")
    return 0
