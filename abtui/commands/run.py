"""`abtui run PROFILE --headless [--lab] [--quick] [--duration S] [--out FILE] [--seed N]
[--alternate KNOB=V1,V2 --every S [--until-verdict] [--max-runs N] [--design crossover]]`:
measure with no console;
`--lab` runs the profile on the local lab's hosts (abtui.lab.prepare, abtui.lab.mapping)."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path
from typing import TYPE_CHECKING

from abtui.commands.sessions import add_session_out
from abtui.core import signals
from abtui.core.errors import BadInput
from abtui.core.model import DEFAULT_MAX_RUNS

if TYPE_CHECKING:
    from abtui.core.model import Profile
    from abtui.measure.alternate.design import Alternation


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("profile", metavar="PROFILE", help="the profile (TOML) to run")
    parser.add_argument("--headless", action="store_true",
                        help="no console: progress on stderr, the session written to a file")
    parser.add_argument("--duration", type=float, metavar="S",
                        help="instead of the plan, measure continuously for S seconds")
    add_session_out(parser)
    parser.add_argument("--lab", action="store_true",
                        help="run on the local lab (brought up when it is not): pairs mapped "
                             "onto lab hosts, what the lab lacks translated (each translation "
                             "printed and recorded)")
    parser.add_argument("--quick", action="store_true",
                        help="short runs: iperf3 -t 2 -i 0.5, ping -c 3, one repetition")
    parser.add_argument("--set", action="append", default=[], metavar="KNOB=VALUE",
                        dest="settings",
                        help="set a knob of the profile before measuring (repeatable); every "
                             "value is restored when the run ends")
    parser.add_argument("--alternate", metavar="KNOB=V1,V2",
                        help="flip KNOB between the values (the first the base; KNOB alone: "
                             "the profile's values) in blocks drawn at random (two values: "
                             "four stretches, each twice, in one of six balanced orders; more: "
                             "a permutation), every --every seconds or per run; each complete "
                             "block is one sample of the live verdict")
    parser.add_argument("--every", type=float, metavar="S",
                        help="with --alternate: seconds each value is held on a continuous "
                             "run (without it: one plan-mode run of [test] duration per "
                             "stretch)")
    parser.add_argument("--until-verdict", action="store_true",
                        help="with --alternate: stop once every comparison is significant by "
                             "the sequential rule (docs/sequential.md)")
    parser.add_argument("--max-runs", type=int, metavar="N",
                        help="with --alternate: at most N stretches of each value (N/2 "
                             f"blocks of four for two values; default {DEFAULT_MAX_RUNS})")
    parser.add_argument("--design", choices=("blocks", "crossover"), metavar="DESIGN",
                        help="with --alternate: `blocks` (default: every pair the same value "
                             "at once, each pair judged alone) or `crossover` (two values on "
                             "exactly two pairs: each block the second pair runs the mirror "
                             "of the first's order, one verdict on the mean of the two; needs "
                             "--every)")
    parser.add_argument("--metric", choices=ALTERNATE_METRICS, metavar="METRIC",
                        help="with --alternate: what the verdict judges: throughput "
                             "(default), rtt (the mean RTT of ping's replies) or p50, p90, "
                             "p99, p99.9 (each stretch's RTT percentile: of sockperf's round "
                             "trips where [test] sockperf is set, else of ping's replies); "
                             "latency as 1/RTT, so that worse is negative as with throughput")
    parser.add_argument("--seed", type=int, metavar="N",
                        help="the seed of the random order (the alternation's blocks, or the "
                             "plan's shuffle, over the profile's plan.seed): the seed a "
                             "session records replays its order")
    add_profile_argument(parser)


def add_profile_argument(parser: argparse.ArgumentParser) -> None:
    """`--profile[=HZ]` (run, bisect): each judged pair's hosts profiled per stretch."""
    parser.add_argument("--profile", dest="profile_hz", type=profile_rate, metavar="HZ",
                        help="profile every CPU of the hosts with perf (call graphs, at HZ "
                             "samples a second, 99 when given as --profile) stretch by "
                             "stretch; the report's Why section and `export` show which "
                             "functions moved between the values, with intervals")


def profile_rate(text: str) -> int:
    try:
        hz = int(text)
    except ValueError:
        hz = 0
    if not 1 <= hz <= 999:
        raise argparse.ArgumentTypeError(f"{text!r}: give --profile or --profile=HZ, HZ a "
                                         "whole number from 1 to 999")
    return hz


def with_profile_rate(profile: Profile, hz: int | None) -> Profile:
    """The profile with `--profile`'s rate as its [test] profile_hz (unchanged without)."""
    if not hz:
        return profile
    import dataclasses

    return dataclasses.replace(profile, test=dataclasses.replace(profile.test, profile_hz=hz))


def parse_setting(text: str, knobs: list[str]) -> tuple[str, str]:
    """`KNOB=VALUE` of --set, the knob one of the profile's."""
    name, sep, value = text.partition("=")
    if not sep or not name:
        raise BadInput(f"--set {text}: write KNOB=VALUE")
    if name not in knobs:
        raise BadInput(f"--set {text}: the profile has no knob {name!r} "
                       f"(it has: {', '.join(knobs) or 'none'})")
    return name, value


def profile_and_out(args: argparse.Namespace) -> tuple[Path, Path | None]:
    """PROFILE, a file, and --out, a new file in a folder there is (`run`, `bisect`)."""
    path = Path(args.profile)
    if not path.is_file():
        raise BadInput(f"{path}: no such profile file")
    out = Path(args.out) if args.out else None
    if out is not None and out.exists():
        raise BadInput(f"--out {out}: the file exists; give another name")
    if out is not None and not out.parent.is_dir():
        raise BadInput(f"--out {out}: no such directory {out.parent}")
    return path, out


def run(args: argparse.Namespace) -> int:
    from abtui.hosts.journals import recovery_notice

    notice = recovery_notice()
    if notice:
        print(f"abtui: {notice}", file=sys.stderr, flush=True)
    if not args.headless:
        raise BadInput("abtui run needs --headless (the console is `abtui tui PROFILE`)")
    if args.duration is not None and not args.duration > 0:
        raise BadInput(f"--duration {args.duration:g}: give a number of seconds above 0")
    path, out = profile_and_out(args)
    from abtui.profile import load_profile

    profile = with_profile_rate(load_profile(path), args.profile_hz)
    settings = [parse_setting(s, [k.name for k in profile.knobs]) for s in args.settings]
    alternation = _alternation(args, profile)
    if args.seed is not None and alternation is None:
        import dataclasses

        profile = dataclasses.replace(profile, plan=dataclasses.replace(profile.plan,
                                                                        seed=args.seed))
    start_data: dict[str, object] = {}
    from abtui.lab import lease
    from abtui.lab.layout import LabLayout

    # the lab this run uses is leased from before it is brought up to the run's end
    with lease.hold([LabLayout.default().state_dir] if args.lab else []):
        if args.lab or args.quick:
            profile, start_data = _translate(profile, lab=args.lab, quick=args.quick)
        from abtui.measure.headless import run_headless

        with lease.hold(lease.labs_of(profile)):
            return signals.run(run_headless(profile, out, args.duration,
                                            start_data=start_data, settings=settings,
                                            alternation=alternation))


def _alternation(args: argparse.Namespace, profile: Profile) -> Alternation | None:
    """--alternate and its options, checked."""
    from abtui.measure.alternate.design import CROSSOVER, Alternation, check_design, parse_alternate

    if args.seed is not None and not 0 <= args.seed < 2**63:
        raise BadInput(f"--seed {args.seed}: give a whole number from 0 to 2^63 - 1")
    if args.alternate is None:
        extra = [o for o, v in (("--every", args.every), ("--max-runs", args.max_runs),
                                ("--until-verdict", args.until_verdict or None),
                                ("--design", args.design),
                                ("--metric", getattr(args, "metric", None))) if v is not None]
        if extra:
            raise BadInput(f"{extra[0]} goes with --alternate KNOB=V1,V2")
        return None
    if args.every is not None and not args.every > 0:
        raise BadInput(f"--every {args.every:g}: give the seconds each value is held (above 0)")
    max_runs = DEFAULT_MAX_RUNS if args.max_runs is None else args.max_runs
    if not 2 <= max_runs <= 1000:
        raise BadInput(f"--max-runs {max_runs}: give 2 to 1000 stretches per value")
    knob, values = parse_alternate(args.alternate, profile)
    design = args.design or "blocks"
    if design == CROSSOVER:
        if args.every is None:
            raise BadInput("--design crossover: give --every S (the pairs' values are set at "
                           "every boundary; a plan-mode run sets one value on every pair)")
        k = profile.knob(knob)
        check_design(design, values, [p.label for p in profile.pairs
                                      if not k.pairs or p.label in k.pairs])
    metric = _metric(getattr(args, "metric", None), args.every, profile)
    return Alternation(knob, values, args.every, max_runs, args.until_verdict, args.seed,
                       design=design, metric=metric)


# --metric's choices: abtui.measure.latency_stretch.METRICS, a percentile by its name alone
ALTERNATE_METRICS = ("throughput", "rtt", "p50", "p90", "p99", "p99.9")


def _metric(given: str | None, every: float | None, profile: Profile) -> str:
    """--metric as the alternation names it (`rtt p99`), checked against what the runs
    measure."""
    if given is None or given == "throughput":
        return "throughput"
    test = profile.test
    metric = given if given == "rtt" else f"rtt {given}"
    if given != "rtt" and test.sockperf:
        if every is not None:
            raise BadInput(f"--metric {given}: sockperf's round trips come when each run ends; "
                           "alternate one run per value (leave out --every), or set "
                           "[test] sockperf off to judge ping's replies")
        return metric
    if not test.ping or test.ping_count:
        raise BadInput(f"--metric {given}: the profile's runs ping nothing alongside iperf3; "
                       "set [test] ping = true and ping_count = 0 (or [test] sockperf)")
    return metric


def _translate(profile: Profile, *, lab: bool, quick: bool) -> tuple[Profile, dict[str, object]]:
    """The profile as --lab / --quick run it; each translation printed on stderr."""
    from abtui.lab.prepare import for_lab

    def say(line: str) -> None:
        print(f"abtui: {line}", file=sys.stderr, flush=True)

    mapping, data = for_lab(profile, lab=lab, short=quick, say=say)
    for t in mapping.translations:
        say(t.line())
    return mapping.profile, data
