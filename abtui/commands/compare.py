"""`abtui compare SESSION SESSION [--format md|json|junit] [--units bits|bytes]
[--match config|knobs] [--fail-on-regression PCT [--latency STAT] [--allow-inconclusive]]`:
phases matched by configuration. The gate (abtui.reports.gate) exits 0 only when every case it
tested passed: 1 on a regression, 3 (inconclusive) on an inconclusive case or one with too few
runs (0 with --allow-inconclusive), 3 when nothing could be tested at all, whatever the
options; 2 on bad input. --latency judges each configuration's RTT too (abtui.reports.latency)."""

from __future__ import annotations

import argparse
import sys
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, overload

from abtui.commands.export import add_units
from abtui.commands.sessions import add_sessions_dir
from abtui.core.errors import EXIT_FAILED, EXIT_OK, BadInput
from abtui.core.text import visible
from abtui.reports.gate import CONTROL, INCONCLUSIVE, PASS, REGRESSION, UNMATCHED, GateCase
from abtui.reports.matching import MODES

if TYPE_CHECKING:
    from abtui.reports.host_state import Change
    from abtui.sessions.session import Session


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("left", metavar="SESSION", help="the base session (file or name)")
    parser.add_argument("right", metavar="SESSION", help="the session compared with it")
    parser.add_argument("--format", choices=("md", "json", "junit"), default="md",
                        help="junit: one test case per pair, configuration and direction: "
                             "failure for a regression beyond --fail-on-regression (0%% "
                             "without it), skipped for inconclusive or unmatched")
    add_units(parser)
    parser.add_argument("--fail-on-regression", metavar="PCT",
                        help="the gate: exit 0 only when every configuration's throughput "
                             "interval lies above -PCT (e.g. 5%%); exit 1 on a regression "
                             "(the interval below -PCT, false discovery rate controlled), 3 "
                             "when inconclusive (about 30 runs a side let a no-change gate "
                             "pass at 5%%)")
    parser.add_argument("--latency", metavar="STAT", choices=("avg", "p50", "p90", "p99",
                                                               "p99.9"),
                        help="with the gate: judge each configuration's ping RTT too, on "
                             "each run's STAT (avg, p50, p90, p99, p99.9) of its replies, as "
                             "1/RTT: a regression is 1/RTT down beyond -PCT (the RTT up by "
                             "more than PCT/(100-PCT), 5.3%% at 5%%); a run with too few "
                             "replies for a percentile is left out (p99 needs 100)")
    parser.add_argument("--allow-inconclusive", action="store_true",
                        help="with the gate: exit 0 when nothing regressed although some "
                             "cases were inconclusive (they are still listed); never when "
                             "nothing could be tested")
    parser.add_argument("--match", choices=MODES, default="config",
                        help="config: match configurations by every knob's value (default); "
                             "knobs: by the knobs both sessions have, a host's own value "
                             "(not one the profile lists) matching the other's own")
    parser.add_argument("--out", metavar="FILE", help="write here instead of stdout")
    add_sessions_dir(parser)


@overload
def threshold_of(text: str, option: str = ...) -> float: ...


@overload
def threshold_of(text: None, option: str = ...) -> None: ...


def threshold_of(text: str | None, option: str = "--fail-on-regression") -> float | None:
    """The gate's percentage (`2%` or `2`; 0 allowed: any significant loss)."""
    if text is None:
        return None
    from abtui.core.errors import Invalid
    from abtui.profile import fields

    try:
        return float(fields.percent(0, 100, lo_ok=True)(text if "%" in text else float(text)))
    except (Invalid, ValueError):
        raise BadInput(f"{option} {text}: expected a percentage from 0% up to "
                       "100%, e.g. 2%") from None


def run(args: argparse.Namespace) -> int:
    from abtui.reports import compare
    from abtui.sessions import paths
    from abtui.sessions.session import Session

    threshold = threshold_of(args.fail_on_regression)
    if args.latency is not None and threshold is None and args.format != "junit":
        raise BadInput(f"--latency {args.latency}: it judges latency in the gate; give "
                       "--fail-on-regression PCT too (or --format junit)")
    left = Session.load(paths.find_session(args.left, args.sessions_dir))
    right = Session.load(paths.find_session(args.right, args.sessions_dir))
    from abtui.core.clock import check_comparable, session_clocks

    check_comparable(session_clocks(left.facts), session_clocks(right.facts),
                     (left.name or args.left, right.name or args.right))
    cases = compare.gate(left, right, threshold or 0.0, args.match, args.latency) \
        if threshold is not None or args.format == "junit" else []
    if args.format == "json":
        from abtui.reports.exports import dumps

        text = dumps(compare.to_json(left, right, args.match))
    elif args.format == "junit":
        text = compare.junit(left, right, cases, threshold or 0.0)
    else:
        text = compare.markdown(left, right, units=args.units, match=args.match)
    text = visible(text, lines=True)  # what the hosts said, spelled out (core/text.py)
    if args.out:
        from abtui.core.files import write_atomic

        write_atomic(Path(args.out), text)
    else:
        sys.stdout.write(text)
    if threshold is None:
        return EXIT_OK
    beside_gate(left, right, args.match)
    return verdict(cases, threshold, args.allow_inconclusive, args.match)


def beside_gate(left: Session, right: Session, match: str,
                say: Callable[[str], None] | None = None) -> None:
    """Before the gate's answer (`say`: on stderr by default): every difference between the
    sessions' hosts beside the knobs (compare's table), and every compared cell whose
    numbers carry a flag, since the gate judges their effect with the change it was run
    for."""
    from abtui.reports import compare

    say = say or _on_stderr
    changes: list[Change] = compare.host_changes(left, right)
    if changes:
        say(visible(f"the hosts differ beside the knobs in {len(changes)} setting"
                    f"{'s' if len(changes) != 1 else ''}; the results include their effect:"))
        for c in changes:
            say(visible(f"  {c.line()}"))
    for line in compare.flagged(left, right, match):
        say(visible(f"flagged, the gate's answer stands on it: {line}"))


def _on_stderr(text: str) -> None:
    print(f"abtui: {text}", file=sys.stderr)


def verdict(cases: list[GateCase], threshold: float, allow_inconclusive: bool,
            match: str, say: Callable[[str], None] = _on_stderr) -> int:
    """The gate's lines (`say`: on stderr after compare's table, on stdout for `abtui gate`),
    and its exit code: 0 every case tested passed, 1 a regression, 3 (EXIT_INCONCLUSIVE)
    neither; nothing tested is never a pass."""
    from abtui.core.errors import EXIT_INCONCLUSIVE
    from abtui.reports.gate import BLIND, UNTESTED, resolution

    by = {a: [c for c in cases if c.answer == a]
          for a in (REGRESSION, INCONCLUSIVE, UNTESTED, UNMATCHED, PASS)}
    for answer in (REGRESSION, INCONCLUSIVE, UNTESTED):
        for case in by[answer]:
            say(case.line())
    tested = sum(c.judged for c in cases)
    if by[UNMATCHED]:
        names = "; ".join(f"{c.pair} {c.config} ({c.why})" for c in by[UNMATCHED])
        hint = (" (--match knobs matches by the knobs both sessions set, a host's own value "
                "matching the other's)" if match != "knobs" else "")
        say(f"not matched, not tested: {names}{hint}")
    say(f"regression gate at -{threshold:g}%: {len(by[PASS])} pass, {len(by[REGRESSION])} "
        f"regression, {len(by[INCONCLUSIVE])} inconclusive, {len(by[UNTESTED])} with too few "
        f"runs, {len(by[UNMATCHED])} not matched ({CONTROL} controlled over the {tested} "
        f"case{'s' if tested != 1 else ''} tested)")
    say(resolution(cases, threshold).line())
    say(BLIND)
    if by[REGRESSION]:
        return EXIT_FAILED
    if not tested:
        say("nothing was tested: not a pass (exit 3, inconclusive)")
        return EXIT_INCONCLUSIVE
    if by[INCONCLUSIVE] or by[UNTESTED]:
        if allow_inconclusive:
            say("inconclusive cases allowed (--allow-inconclusive): exit 0")
            return EXIT_OK
        say("inconclusive: not a pass (exit 3); more runs per configuration narrow the "
            "intervals (--allow-inconclusive lets it pass)")
        return EXIT_INCONCLUSIVE
    return EXIT_OK
