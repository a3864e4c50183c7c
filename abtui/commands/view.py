"""`abtui view [--follow] SESSION`: a read-only console on a session file. With --follow it
follows the file as another abtui records it (the live journal, NAME.abtui.jsonl, then its
finished NAME.abtui.jsonl.gz) and shows each event as it is written; without, it shows what
the file holds now. A finished session is shown whole either way. Keys that would change a
host (a knob, a plan, a mark) are refused with one line: the console recording the session
is the one that drives its hosts.

Example:
  abtui run lab.toml --headless --out /tmp/base.abtui.jsonl &   # the recording
  abtui view --follow /tmp/base.abtui.jsonl                      # a reviewer watches

Exit codes: 0 the console was closed; 2 bad input (no such session, not a session file).
"""

from __future__ import annotations

import argparse
from pathlib import Path
from typing import TYPE_CHECKING

from abtui.commands.sessions import add_sessions_dir

if TYPE_CHECKING:
    from abtui.measure.replay.follow import FollowController


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("session", metavar="SESSION",
                        help="a session file (live journal or finished), or a session name")
    parser.add_argument("--follow", action="store_true",
                        help="follow the file as it grows, until its recording ends")
    add_sessions_dir(parser)


def controller_for(path: Path, follow: bool) -> tuple[FollowController, str]:
    """The read-only controller on `path` and the console's title (also `abtui serve`'s)."""
    from abtui.commands.tui import recorded_profile
    from abtui.measure.replay.follow import FollowController
    from abtui.sessions.follow import SessionTail

    # the events written so far: the session's profile (its first event) and pairs
    profile = recorded_profile(SessionTail(path, once=True).poll(), path)
    controller = FollowController(profile, path, follow=follow)
    what = "following" if not controller.finished else "viewing"
    return controller, f"abtui — {profile.name} — {what} {path.name} (read-only)"


def run(args: argparse.Namespace) -> int:
    from abtui.commands.tui import collector_paused, open_console
    from abtui.sessions import paths

    with collector_paused():
        path = paths.find_session(args.session, args.sessions_dir)
        controller, title = controller_for(path, args.follow)
        return open_console(controller, title)
