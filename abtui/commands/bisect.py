"""`abtui bisect PROFILE --knob NAME --good G --bad B [--candidates V1,V2,…|--from FILE]
[--threshold PCT] [--metric throughput|rtt] [--max-blocks N] [--every S] [--pair P]
[--design blocks|crossover] [--out FILE] [--resume SESSION] [--headless]`: which
candidate made it worse (abtui.measure.bisect.search; docs/bisect.md), in the console with its
bisect panel (abtui.ui.flow.bisection), or headless."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path
from typing import TYPE_CHECKING

from abtui.commands.sessions import add_session_out
from abtui.core import signals
from abtui.core.errors import BadInput
from abtui.measure.alternate.design import DESIGNS

if TYPE_CHECKING:
    from abtui.core.model import Knob, Profile
    from abtui.measure.bisect.run import BisectPlan

DEFAULT_THRESHOLD = 5.0
DEFAULT_MAX_BLOCKS = 10
DEFAULT_EVERY = 5.0
METRICS = ("throughput", "rtt")


def add_arguments(parser: argparse.ArgumentParser) -> None:
    from abtui.commands.run import add_profile_argument

    parser.add_argument("profile", metavar="PROFILE", help="the profile (TOML) with the knob")
    add_profile_argument(parser)
    parser.add_argument("--knob", required=True, metavar="NAME",
                        help="the knob whose values are bisected (a build knob: its builds)")
    parser.add_argument("--good", required=True, metavar="G", help="the candidate known good")
    parser.add_argument("--bad", required=True, metavar="B", help="the candidate known bad")
    given = parser.add_mutually_exclusive_group()
    given.add_argument("--candidates", metavar="V1,V2,…",
                       help="the candidates in order, good to bad (default: the knob's values "
                            "in the profile); G and B among them")
    given.add_argument("--from", dest="from_file", metavar="FILE",
                       help="the candidates in order, one a line (# comments, blank lines "
                            "skipped)")
    parser.add_argument("--threshold", type=float, default=DEFAULT_THRESHOLD, metavar="PCT",
                        help="a candidate is bad when worse than the good one by PCT %% or "
                             f"more (default {DEFAULT_THRESHOLD:g})")
    parser.add_argument("--metric", choices=METRICS, default=METRICS[0],
                        help="what a step compares: throughput (default), or rtt: ping's "
                             "RTT, as its inverse (a lost reply 0), so worse is negative")
    parser.add_argument("--max-blocks", type=int, default=DEFAULT_MAX_BLOCKS, metavar="N",
                        help="blocks of four stretches a step takes at most before it is "
                             f"undecided (default {DEFAULT_MAX_BLOCKS})")
    parser.add_argument("--every", type=float, default=DEFAULT_EVERY, metavar="S",
                        help=f"seconds each value is held (default {DEFAULT_EVERY:g})")
    parser.add_argument("--pair", action="append", metavar="P",
                        help="judge only this pair (repeatable; default every pair the knob "
                             "touches)")
    parser.add_argument("--design", choices=DESIGNS, default=DESIGNS[0],
                        help="how a step alternates: `blocks` (default: every judged pair "
                             "the same value at once, each pair judged alone) or `crossover` "
                             "(exactly two pairs: each block the second runs the mirror of "
                             "the first's order, one call on the mean of the two)")
    add_session_out(parser)
    parser.add_argument("--resume", metavar="SESSION",
                        help="go on with the bisection this session recorded (the same knob, "
                             "candidates and threshold): its steps' calls are kept, an "
                             "undecided step is judged again")
    parser.add_argument("--headless", action="store_true",
                        help="no console: progress on stderr, the answer on stdout")


def candidates_of(args: argparse.Namespace, profile: Profile) -> tuple[str, ...]:
    """The ordered candidates from G to B: --candidates, --from FILE, or the knob's values."""
    if args.candidates is not None:
        listed = [v.strip() for v in args.candidates.split(",")]
        where = "--candidates"
    elif args.from_file is not None:
        path = Path(args.from_file)
        try:
            text = path.read_text()
        except (OSError, UnicodeDecodeError) as exc:
            raise BadInput(f"--from {path}: cannot read it ({exc})") from None
        listed = [line.strip() for line in text.splitlines()
                  if line.strip() and not line.strip().startswith("#")]
        where = f"--from {path}"
    else:
        listed = list(profile.knob(args.knob).values)
        where = f"knob {args.knob}'s values"
    if not listed or not any(listed):
        raise BadInput(f"{where}: no candidates; give the values in order, good to bad")
    if any(not v for v in listed):
        raise BadInput(f"{where}: an empty candidate; give the values in order, good to bad")
    twice = sorted({v for v in listed if listed.count(v) > 1})
    if twice:
        raise BadInput(f"{where}: {twice[0]!r} is listed twice; each candidate once")
    for flag, value in (("--good", args.good), ("--bad", args.bad)):
        if value not in listed:
            raise BadInput(f"{flag} {value!r} is not among the candidates ({where}: "
                           f"{', '.join(listed)})")
    g, b = listed.index(args.good), listed.index(args.bad)
    if g >= b:
        raise BadInput(f"--good {args.good!r} comes {'after' if g > b else 'as'} --bad "
                       f"{args.bad!r} in {where}; order them good to bad")
    return tuple(listed[g:b + 1])


def plan_of(args: argparse.Namespace, profile: Profile) -> BisectPlan:
    """The bisection asked for, every option checked against the profile."""
    from abtui.measure.bisect.run import BisectPlan

    knobs = [k.name for k in profile.knobs]
    if args.knob not in knobs:
        raise BadInput(f"--knob {args.knob}: the profile has no knob {args.knob!r} "
                       f"(it has: {', '.join(knobs) or 'none'})")
    if not 0 < args.threshold < 100:
        raise BadInput(f"--threshold {args.threshold:g}: give a percentage above 0 and "
                       "below 100")
    if not 2 <= args.max_blocks <= 500:
        raise BadInput(f"--max-blocks {args.max_blocks}: give 2 to 500 blocks")
    if not args.every > 0:
        raise BadInput(f"--every {args.every:g}: give the seconds each value is held (above 0)")
    if args.metric == "rtt" and not (profile.test.ping and profile.test.ping_count == 0):
        raise BadInput("--metric rtt: the profile's runs ping nothing alongside iperf3; set "
                       "[test] ping = true (and ping_count = 0)")
    knob = profile.knob(args.knob)
    touched = [p.label for p in profile.pairs if not knob.pairs or p.label in knob.pairs]
    for pair in args.pair or []:
        if pair not in touched:
            raise BadInput(f"--pair {pair}: knob {args.knob} is on pairs "
                           f"{', '.join(touched) or 'none'}")
    candidates = candidates_of(args, profile)
    _check_values(knob, candidates)
    if args.design == "crossover":
        from abtui.measure.alternate.design import check_design

        judged = [p for p in touched if not args.pair or p in args.pair]
        check_design(args.design, (args.good, args.bad), judged)
    return BisectPlan(args.knob, candidates, args.threshold,
                      args.max_blocks, args.every,
                      tuple(args.pair) if args.pair else None, args.metric,
                      design=args.design)


def _check_values(knob: Knob, candidates: tuple[str, ...]) -> None:
    """Every candidate a value of the knob's kind (a build knob: one of the builds the
    profile describes), before any host is touched."""
    from abtui.core.errors import ProfileError
    from abtui.core.model import BUILD_KINDS
    from abtui.profile.knobs import check_kind

    if knob.kind in BUILD_KINDS:
        unknown = [v for v in candidates if v not in knob.values]
        if unknown:
            raise BadInput(f"candidate {unknown[0]!r}: knob {knob.name} has no such build "
                           f"(the profile describes: {', '.join(knob.values)})")
        return
    try:
        check_kind(knob.kind, knob.key, candidates, {"scope": knob.scope}, ("candidates",))
    except ProfileError as exc:
        raise BadInput(f"candidates of knob {knob.name}: {exc.message}") from None


def resumed(ref: str, plan: BisectPlan) -> tuple[BisectPlan, str | None]:
    """The plan with the steps the session `ref` recorded, checked against it; or the
    session's answer line when it has one (nothing to run)."""
    import dataclasses

    from abtui.measure.bisect.recorded import answer_of, plan_problem
    from abtui.measure.bisect.search import UNDECIDED, Bisection
    from abtui.sessions import paths
    from abtui.sessions.session import Session

    path = paths.find_session(ref)
    rows = [m["bisect"] for m in Session.load(path).marks if isinstance(m.get("bisect"), dict)]
    recorded = next((r["plan"] for r in rows if isinstance(r.get("plan"), dict)), None)
    if recorded is None:
        raise BadInput(f"--resume {path}: the session recorded no bisection")
    problem = plan_problem(recorded, plan.record())
    if problem is not None:
        raise BadInput(f"--resume {path}: {problem}")
    answer = next((r for r in rows if "answer" in r), None)
    if answer is not None:
        try:
            said, line = answer_of(answer)
        except ValueError as exc:
            raise BadInput(f"--resume {path}: {exc}") from None
        if said != UNDECIDED:
            return plan, line
    steps = tuple(r for r in rows if "plan" not in r and "answer" not in r)
    try:
        Bisection(plan.candidates, plan.threshold).replay(steps)
    except ValueError as exc:
        raise BadInput(f"--resume {path}: {exc}") from None
    return dataclasses.replace(plan, resumed=steps, resumed_from=str(path)), None


def run(args: argparse.Namespace) -> int:
    if not args.headless and args.out is not None:
        raise BadInput("--out: the console writes its session in the sessions folder; give "
                       "--out with --headless")
    from abtui.commands.run import profile_and_out, with_profile_rate
    from abtui.hosts.journals import recovery_notice

    path, out = profile_and_out(args)
    from abtui.profile import load_profile

    profile = with_profile_rate(load_profile(path), args.profile_hz)
    plan = plan_of(args, profile)
    if args.resume is not None:
        plan, answered = resumed(args.resume, plan)
        if answered is not None:
            print(answered, flush=True)
            print("abtui: --resume: the session's bisection has its answer; nothing to run",
                  file=sys.stderr, flush=True)
            return 0
    if not args.headless:
        from abtui.commands.tui import open_on_hosts

        return open_on_hosts(profile, f"abtui — {profile.name} — bisect {plan.knob}",
                             bisection=plan)
    notice = recovery_notice()
    if notice:
        print(f"abtui: {notice}", file=sys.stderr, flush=True)
    from abtui.lab import lease
    from abtui.measure.headless import run_headless

    with lease.hold(lease.labs_of(profile)):
        return signals.run(run_headless(profile, out, bisection=plan))
