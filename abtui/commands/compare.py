"""`abtui compare SESSION SESSION [--format md|json|junit] [--units bits|bytes]
[--fail-on-regression PCT]`: phases
matched by configuration; the gate exits 1 when a configuration got significantly worse."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from abtui.commands.export import add_units
from abtui.commands.sessions import add_sessions_dir
from abtui.core.errors import EXIT_FAILED, EXIT_OK, BadInput


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("left", metavar="SESSION", help="the base session (file or name)")
    parser.add_argument("right", metavar="SESSION", help="the session compared with it")
    parser.add_argument("--format", choices=("md", "json", "junit"), default="md",
                        help="junit: one test case per pair and configuration, failed when "
                             "it regressed beyond --fail-on-regression (0%% without it)")
    add_units(parser)
    parser.add_argument("--fail-on-regression", metavar="PCT",
                        help="exit 1 when a configuration's throughput got worse by more than "
                             "PCT (e.g. 2%%): its whole confidence interval below -PCT")
    parser.add_argument("--out", metavar="FILE", help="write here instead of stdout")
    add_sessions_dir(parser)


def threshold_of(text: str | None) -> float | None:
    """--fail-on-regression's percentage (`2%` or `2`; 0 allowed: any significant loss)."""
    if text is None:
        return None
    from abtui.core.errors import Invalid
    from abtui.profile import fields

    try:
        return float(fields.percent(0, 100, lo_ok=True)(text if "%" in text else float(text)))
    except (Invalid, ValueError):
        raise BadInput(f"--fail-on-regression {text}: expected a percentage from 0% up to "
                       "100%, e.g. 2%") from None


def run(args: argparse.Namespace) -> int:
    from abtui.reports import compare
    from abtui.sessions import paths
    from abtui.sessions.session import Session

    threshold = threshold_of(args.fail_on_regression)
    left = Session.load(paths.find_session(args.left, args.sessions_dir))
    right = Session.load(paths.find_session(args.right, args.sessions_dir))
    cases = compare.gate(left, right, threshold or 0.0) \
        if threshold is not None or args.format == "junit" else []
    if args.format == "json":
        from abtui.reports.exports import dumps

        text = dumps(compare.to_json(left, right))
    elif args.format == "junit":
        text = compare.junit(left, right, cases, threshold or 0.0)
    else:
        text = compare.markdown(left, right, units=args.units)
    if args.out:
        Path(args.out).write_text(text)
    else:
        sys.stdout.write(text)
    if threshold is None:
        return EXIT_OK
    failed = [c for c in cases if c.failed]
    for case in failed:
        print(f"abtui: regression: {case.line(threshold)}", file=sys.stderr)
    judged = sum(not c.skipped for c in cases)
    print(f"abtui: regression gate at -{threshold:g}%: {len(failed)} of {judged} judged "
          f"configurations worse ({len(cases) - judged} not judged)", file=sys.stderr)
    return EXIT_FAILED if failed else EXIT_OK
