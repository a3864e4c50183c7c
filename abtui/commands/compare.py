"""`abtui compare SESSION SESSION [--format md|json]`: phases matched by configuration."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from abtui.commands.sessions import add_sessions_dir


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("left", metavar="SESSION", help="the base session (file or name)")
    parser.add_argument("right", metavar="SESSION", help="the session compared with it")
    parser.add_argument("--format", choices=("md", "json"), default="md")
    parser.add_argument("--out", metavar="FILE", help="write here instead of stdout")
    add_sessions_dir(parser)


def run(args: argparse.Namespace) -> int:
    from abtui.reports import compare
    from abtui.sessions import store
    from abtui.sessions.session import Session

    left = Session.load(store.find_session(args.left, args.sessions_dir))
    right = Session.load(store.find_session(args.right, args.sessions_dir))
    if args.format == "json":
        from abtui.reports.exports import dumps

        text = dumps(compare.to_json(left, right))
    else:
        text = compare.markdown(left, right)
    if args.out:
        Path(args.out).write_text(text)
    else:
        sys.stdout.write(text)
    return 0
