"""`abtui run PROFILE --headless [--duration S] [--out FILE]`: measure with no console."""

from __future__ import annotations

import argparse
import asyncio
from pathlib import Path

from abtui.errors import BadInput


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("profile", metavar="PROFILE", help="the profile (TOML) to run")
    parser.add_argument("--headless", action="store_true",
                        help="no console: progress on stderr, the session written to a file")
    parser.add_argument("--duration", type=float, metavar="S",
                        help="instead of the plan, measure continuously for S seconds")
    parser.add_argument("--out", metavar="FILE",
                        help="the session file (default: a new session in the sessions folder, "
                             "see `abtui sessions`)")


def run(args: argparse.Namespace) -> int:
    if not args.headless:
        raise BadInput("abtui run needs --headless (the console is `abtui tui PROFILE`)")
    if args.duration is not None and not args.duration > 0:
        raise BadInput(f"--duration {args.duration:g}: give a number of seconds above 0")
    path = Path(args.profile)
    if not path.is_file():
        raise BadInput(f"{path}: no such profile file")
    out = Path(args.out) if args.out else None
    if out is not None and out.exists():
        raise BadInput(f"--out {out}: the file exists; give another name")
    if out is not None and not out.parent.is_dir():
        raise BadInput(f"--out {out}: no such directory {out.parent}")
    from abtui.profile import load_profile

    profile = load_profile(path)
    from abtui.headless import run_headless

    return asyncio.run(run_headless(profile, out, args.duration))
