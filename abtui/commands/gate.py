"""`abtui gate OLD NEW [--threshold PCT] [--allow-inconclusive] [--match config|knobs]
[--junit FILE]`: the regression gate as a command of its own (what `abtui compare
--fail-on-regression` does, kept there too): every configuration both sessions ran, judged at
-PCT with the false discovery rate controlled (abtui.reports.gate); one line per case that did
not pass and a summary on stdout, the exit code the CI reads."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from abtui.commands.compare import threshold_of, verdict
from abtui.commands.sessions import add_sessions_dir
from abtui.reports.matching import MODES

DEFAULT_THRESHOLD = "5%"


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("old", metavar="OLD", help="the base session (file or name)")
    parser.add_argument("new", metavar="NEW", help="the session judged against it")
    parser.add_argument("--threshold", metavar="PCT", default=DEFAULT_THRESHOLD,
                        help="a regression is a throughput interval below -PCT (default "
                             f"{DEFAULT_THRESHOLD.replace('%', '%%')}; 0 = any significant "
                             "loss)")
    parser.add_argument("--allow-inconclusive", action="store_true",
                        help="exit 0 when nothing regressed although some cases were "
                             "inconclusive (still listed); never when nothing was tested")
    parser.add_argument("--match", choices=MODES, default="config",
                        help="config: configurations matched by every knob's value "
                             "(default); knobs: by the knobs both sessions have")
    parser.add_argument("--junit", metavar="FILE",
                        help="also write the cases as JUnit XML (one test case each)")
    add_sessions_dir(parser)


def run(args: argparse.Namespace) -> int:
    from abtui.reports import compare
    from abtui.sessions import paths
    from abtui.sessions.session import Session

    threshold = threshold_of(args.threshold, option="--threshold")
    old = Session.load(paths.find_session(args.old, args.sessions_dir))
    new = Session.load(paths.find_session(args.new, args.sessions_dir))
    cases = compare.gate(old, new, threshold, args.match)
    if args.junit:
        from abtui.core.files import write_atomic
        from abtui.core.text import visible

        write_atomic(Path(args.junit), visible(compare.junit(old, new, cases, threshold),
                                               lines=True))
    return verdict(cases, threshold, args.allow_inconclusive, args.match,
                   say=lambda text: print(text, file=sys.stdout, flush=True))
