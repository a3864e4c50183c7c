"""`abtui run --headless`: the engine with no console; progress on stderr, events to a file.

Whatever ends the run (the plan done, the duration up, an error, ctrl+c, SIGTERM, SIGHUP:
abtui.core.signals), the engine is shut down: knobs restored, every remote process ended, links
closed, the session file complete; anything left set is said with the `abtui recover` line and
a non-zero exit.
"""

from __future__ import annotations

import asyncio
import contextlib
import sys
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import TYPE_CHECKING, TextIO

from abtui.core import events, numbers
from abtui.core.dimensions import DIRECTION, DIRECTION_NAMES
from abtui.core.errors import (
    EXIT_FAILED,
    EXIT_INCONCLUSIVE,
    EXIT_OK,
    KnobRefused,
    WriteFailed,
)
from abtui.core.events import AnyEvent, EventKind
from abtui.core.model import Profile
from abtui.measure.engine.front import Engine
from abtui.measure.engine.host_state import HOSTS_CHANGED
from abtui.measure.engine.knobs import KnobApplierFactory
from abtui.measure.ports import ParserFactory, PingParserFactory, open_session_writer
from abtui.measure.session import ControllerSession
from abtui.remote.iperf_cmd import run_seconds
from abtui.reports.throughput import Segment, counted
from abtui.sessions.paths import new_session_path

if TYPE_CHECKING:
    from abtui.measure.alternate.design import Alternation
    from abtui.measure.alternate.verdicts import Verdicts
    from abtui.measure.bisect.run import BisectPlan
    from abtui.measure.bisect.search import Bisection
    from abtui.measure.why_book import WhyBook


@dataclass(frozen=True, slots=True)
class Measured:
    """What a run (at its RUN_END) or a plan's step (at its PROGRESS) measured: `parts`, each
    configuration it counted in, named by its direction and the knobs in play, with that
    configuration's figure (None: none, or a step); `rate` the run's own figure."""

    parts: tuple[tuple[str, float | None], ...] = ()
    rate: float | None = None
    across: bool = False  # every interval of the run straddled a flip: in no configuration


@dataclass(slots=True)
class _Run:
    """One run so far: the configuration it started in, its direction, its own figure (every
    interval it counted, as the runs table) and, per phase, its intervals that counted in no
    knob change (abtui.measure.phases: a straddling one belongs to neither side)."""

    config: dict[str, str]
    direction: str
    whole: Segment = field(default_factory=Segment)
    phases: dict[int, Segment] = field(default_factory=dict)


def direction_of(options: object) -> str:
    """A run's direction as the reports name it (TX, RX (-R), bidir) from its test options."""
    opts = options if isinstance(options, dict) else {}
    key = "bidir" if opts.get("bidir") else "rx" if opts.get("reverse") else "tx"
    return DIRECTION_NAMES[key]


class RunRates:
    """Each run's figure and what it measured, as its events arrive, for the line that says it
    ended: a run names the values it ran at and never one it did not (a run stopped by a
    flip ran at the value before it), and a plan's step its direction and values.

    The knobs in play are named: `named` (the plan's matrix, the alternated knob, --set
    ones) and every knob a KNOB event changed so far. A phase's configuration is the run's
    at its start, a PHASE event's, or the pair's as KNOB events left it when a run counted
    in a new phase."""

    def __init__(self, named: Sequence[str] = ()) -> None:
        self.named = list(dict.fromkeys(named))
        self.runs: dict[tuple[str | None, object], _Run] = {}
        self.config: dict[str, dict[str, str]] = {}  # per pair, as last known
        self.phase_config: dict[str, dict[int, dict[str, str]]] = {}
        self.step: dict[str, None] = {}  # what the plan's step in progress runs at

    def __call__(self, event: AnyEvent) -> Measured | None:
        """Take an event in; for a RUN_END what the run measured, for a PROGRESS what the
        step did (None for others, and for a RUN_END of a run never seen)."""
        p, pair = event.payload, event.pair or ""
        match p:
            case events.Config(config=config) if pair:
                self._configure(pair, config, None)
            case events.Phase(phase=int() as phase, config=dict() as config) if pair:
                # a phase closed, with the values it had (the pair's own have moved on)
                self.phase_config.setdefault(pair, {})[phase] = \
                    {str(k): str(v) for k, v in config.items()}
            case events.KnobChanged(knob=knob, value=value, pairs=pairs) | events.Drift(
                    knob=knob, value=value, pairs=pairs, since=float()):
                # (a drift read back: the host's value, set by someone else, from now on)
                self.named += [] if knob in self.named else [str(knob)]
                for label in pairs or []:
                    self.config.setdefault(label, {})[str(knob)] = str(value)
            case events.RunStart(run=run, config=config, phase=phase, options=options):
                self._configure(pair, config, phase)
                started = _Run(dict(self.config.get(pair, {})), direction_of(options))
                self.runs[(event.pair, run)] = started
                self.step[self._name(started.direction, started.config)] = None
            case events.IntervalMeasured(run=run, phase=phase, straddles=straddles):
                # a run whose start was not seen: its direction is not known
                seen = self.runs.setdefault((event.pair, run),
                                            _Run(dict(self.config.get(pair, {})), ""))
                self._interval(event, seen, phase, straddles)
            case events.RunEnd(run=run):
                ended = self.runs.pop((event.pair, run), None)
                return None if ended is None else self._measured(pair, ended)
            case events.Progress():
                step, self.step = self.step, {}
                return Measured(tuple((what, None) for what in step))
        return None

    def _configure(self, pair: str, config: object, phase: object) -> None:
        if not isinstance(config, dict):
            return
        self.config[pair] = {str(k): str(v) for k, v in config.items()}
        if isinstance(phase, int):
            self.phase_config.setdefault(pair, {})[phase] = dict(self.config[pair])

    def _interval(self, event: AnyEvent, run: _Run, phase: object, straddles: object) -> None:
        got = counted(event)
        if got is None:
            return
        run.whole.add(*got)
        if straddles or not isinstance(phase, int):
            return
        known = self.phase_config.setdefault(event.pair or "", {})
        known.setdefault(phase, dict(self.config.get(event.pair or "", run.config)))
        run.phases.setdefault(phase, Segment()).add(*got)

    def _measured(self, pair: str, run: _Run) -> Measured:
        known = self.phase_config.get(pair, {})
        named: dict[str, Segment] = {}  # phases that read alike are one configuration here
        for phase, seg in sorted(run.phases.items()):
            named.setdefault(self._name(run.direction, known.get(phase, run.config)),
                             Segment()).merge(seg)
        if len(named) > 1:
            return Measured(tuple((what, seg.rate) for what, seg in named.items()),
                            run.whole.rate)
        what = next(iter(named), self._name(run.direction, run.config))
        return Measured(((what, run.whole.rate),), run.whole.rate,  # the run's own figure
                        across=not named and run.whole.rate is not None)

    def _name(self, direction: str, config: dict[str, str]) -> str:
        """`TX, tcp_rmem=4096 131072 6291456`: the direction and the knobs in play."""
        return ", ".join([*([direction] if direction else []),
                          *(f"{k}={config[k]}" for k in self.named if k in config)])


def describe(event: AnyEvent, measured: Measured | None = None) -> str | None:
    """The progress line for an event, None for events not worth a line; a RUN_END's and a
    PROGRESS's line say what it `measured` (RunRates): the direction and values it ran at,
    with the figure of each."""
    who = f"{event.pair}: " if event.pair else (f"{event.host}: " if event.host else "")
    parts = measured.parts if measured is not None else ()
    match event.payload:
        case events.Progress(done=done, total=total, eta_s=eta):
            left = f", about {eta:.0f} s left" if isinstance(eta, int | float) else ""
            at = f" ({'; '.join(what for what, _ in parts)})" if parts else ""
            return f"plan: {done}/{total} steps done{at}{left}"
        case events.RunEnd(run=run, status=status, message=message):
            why = f": {message}" if message else ""
            if len(parts) > 1:  # a run that went on through a flip: each value its figure
                each = "; ".join(f"({what}) {numbers.rate(r) if r is not None else 'no figure'}"
                                 for what, r in parts)
                whole = f", {numbers.rate(measured.rate)}" \
                    if measured is not None and measured.rate is not None else ""
                return f"{who}run {run} {status}{whole}: {each}{why}"
            at = f" ({parts[0][0]})" if parts and parts[0][0] else ""
            got = f", {numbers.rate(parts[0][1])}" if parts and parts[0][1] is not None else ""
            if measured is not None and measured.across:
                got += " across a flip (counted in no configuration)"
            return f"{who}run {run}{at} {status}{got}{why}"
        case events.Error(message=message) | events.KnobError(message=message):
            return f"{who}error: {message}"
        case events.Link(state=state, message=message) if state in ("lost", "connected"):
            return f"{who}link {state}{': ' + message if message else ''}"
        case events.KnobChanged(knob=knob, value=value, pairs=pairs):
            return f"{knob} = {value} on {', '.join(pairs or [])}"
        case events.Drift() as drift:
            return drift.line(event.host)
        case events.Mark(text=text) if str(text).startswith(HOSTS_CHANGED):
            return str(text)
        case events.Mark(text=text) if event.host:  # done on a host (a dead run's flow ended)
            return f"{who}{text}"
        case events.BuildSwitch() as switch:
            return switch.line(event.host)
        case events.Restore(ok=ok, knob=knob, message=message, left=left) if not ok:
            return f"{who}{knob} {message}" if left is not None else \
                f"{who}could not restore {knob}: {message}"
    return None


class LinkNews:
    """Which link lines are news: a host's first loss, not each reconnect attempt that fails
    after it, and none while the host boots into another build (its switch's lines say what
    happens: `booting after (kexec)…`, `after up in 34 s`)."""

    def __init__(self) -> None:
        self.lost: set[str] = set()
        self.switching: set[str] = set()

    def __call__(self, event: AnyEvent) -> bool:
        host = event.host or ""
        match event.payload:
            case events.BuildSwitch(stage=stage):
                (self.switching.add if stage == "booting" else self.switching.discard)(host)
                self.lost.discard(host)
            case events.Link() if host in self.switching:
                return False
            case events.Link(state="lost") if host in self.lost:
                return False
            case events.Link(state="lost"):
                self.lost.add(host)
            case events.Link(state="connected"):
                self.lost.discard(host)
        return True


class Tally:
    """Each pair's throughput since the last progress line of a continuous run, by the one
    rule (abtui.reports.throughput: bits ÷ seconds of its counted intervals; --bidir's way back is
    not mixed in)."""

    def __init__(self) -> None:
        self.rates: dict[str, Segment] = {}
        self.ended: set[str] = set()  # pairs with a run ended

    def __call__(self, event: AnyEvent) -> None:
        got = counted(event)
        if got is not None and event.pair:
            self.rates.setdefault(event.pair, Segment()).add(*got)
        if event.kind is EventKind.RUN_END and event.pair:
            self.ended.add(event.pair)

    def line(self, elapsed: float, duration: float, pairs: Sequence[str]) -> str:
        """`+20/60 s: A 12.0 Gbit/s (5 intervals), B 980 Mbit/s (5 intervals), C no intervals`
        (abtui.core.numbers.rate), then start afresh."""
        parts = []
        for pair in pairs:
            seg = self.rates.get(pair)
            rate = seg.rate if seg is not None else None
            parts.append(f"{pair} {numbers.rate(rate)} ({seg.n} "
                         f"interval{'s' if seg.n != 1 else ''})"
                         if seg is not None and rate is not None else f"{pair} no intervals")
        self.rates.clear()
        return f"+{elapsed:.0f}/{duration:.0f} s: " + ", ".join(parts)


def tick_seconds(duration: float) -> float | None:
    """How often a continuous run says how it goes: about ten lines a run, 5 s at least, a
    minute at most; none for runs too short to need one."""
    if duration < 10:
        return None
    return min(60.0, max(5.0, round(duration / 10)))


# A --duration's runs that end by themselves (iperf3 -t of that duration) are waited for
# this much past it, so their last interval and summary are theirs, not a stop's
END_GRACE_S = 5.0


async def _continuous(duration: float, tally: Tally, pairs: Sequence[str],
                      say: Callable[[str], None],
                      own_end: Callable[[], None] | None = None) -> None:
    """`duration` seconds of a continuous run, a progress line every tick; `own_end` (its
    runs last that long, iperf3 -t): called once the time is up, no run released after it,
    and each pair's run waited for to end by itself."""
    tick = tick_seconds(duration)
    loop = asyncio.get_running_loop()
    start = loop.time()
    while (left := duration - (loop.time() - start)) > 0:
        await asyncio.sleep(min(left, tick or left))
        elapsed = loop.time() - start
        if tick is not None and duration - elapsed > tick / 2:
            say(tally.line(elapsed, duration, pairs))
    if own_end is None:
        return
    own_end()
    deadline = loop.time() + END_GRACE_S
    while not set(pairs) <= tally.ended and loop.time() < deadline:
        await asyncio.sleep(0.05)


async def _alternate(engine: Engine, profile: Profile, alt: Alternation,
                     duration: float | None, say: Callable[[str], None]) -> None:
    """The alternation: the schedule's first value set, then the next one every `alt.every`
    seconds (or one plan-mode run per stretch) until the rule, the maximum or the time limit
    stops it; the order's seed and the verdicts said, and recorded as marks."""
    from abtui.measure.alternate.design import change_window, order_line
    from abtui.measure.alternate.drive import anew, drive, ended_lines
    from abtui.measure.alternate.verdicts import verdicts_for

    verdicts = verdicts_for(profile, alt, engine.plan_run_seconds)
    engine.subscribe(verdicts.stretches)
    book = _why_book(profile, verdicts)
    if book is not None:
        engine.subscribe(book)  # after the stretches: a window is placed in the one in force
    await engine.set_values(alt.knob, verdicts.values_at(0))
    loop = asyncio.get_running_loop()
    began = loop.time()
    every = f"every {alt.every:g} s" if alt.every else \
        f"one {engine.plan_run_seconds} s run per value"
    crossed = f", crossed over {' and '.join(verdicts.stretches.pairs)}" \
        if alt.design == "crossover" else ""
    stat = "mean RTT" if alt.metric == "rtt" else "RTT " + alt.metric.split()[-1]
    judged = "" if alt.metric == "throughput" else (
        f"; judged on each stretch's {stat}"
        f"{' of sockperf' if profile.test.sockperf and alt.metric != 'rtt' else ''} as 1/RTT "
        "(-9.1% is the RTT +10%)")
    say(f"alternating {alt.knob} between {' / '.join(alt.values)}{crossed}, {every}, at most "
        f"{verdicts.family.max_runs} blocks; smallest effect of interest "
        f"{verdicts.min_effect:g}%{judged}")
    seeded = order_line(alt.knob, verdicts.seed, alt.values, alt.design,
                        verdicts.stretches.pairs)
    say(seeded)
    await engine.mark(seeded)
    if judged:  # the report's notes say what the verdicts' Δ is of
        await engine.mark(f"the alternation's verdicts{judged}")
    if alt.every is not None:
        await engine.start("continuous")  # stretch 0 opens in drive, after the window
        why = await drive(engine.set_values, replace(alt, window=change_window(profile, alt.every)),
                          verdicts, say, duration, again=anew(engine),
                          check=engine.read_back)
    else:
        why = await _alternate_runs(engine, alt, verdicts, duration, say)
    await engine.stop()  # the stretch in force closes: it counts if it lasted long enough
    verdicts.stretches.close()
    lines = ended_lines(why, verdicts, loop.time() - began)
    for line in lines:
        say(line)
    await engine.mark("; ".join(lines), verdicts=verdicts.table())
    if book is not None:
        for line in book.lines() or ["why: no profile window fell in a counted stretch"]:
            say(line)
        found = book.found()
        if found.rows:
            engine.note(found)


def _why_book(profile: Profile, verdicts: Verdicts) -> WhyBook | None:
    """The alternation's profiles, judged beside its verdicts, when profiling is on."""
    from abtui.measure.why_book import profiled, why_book

    return why_book(verdicts) if profiled(profile) else None


async def _alternate_runs(engine: Engine, alt: Alternation, verdicts: Verdicts,
                          duration: float | None, say: Callable[[str], None]) -> str:
    """Per run in plan mode: one run per entry of the schedule (plan.plan_steps); a
    stretch closes when the plan says the next step begins. Returns why it stopped, as
    alternate.drive does."""
    from abtui.measure.alternate.drive import prepare_looks
    from abtui.measure.plan import plan_steps

    finished, decided = asyncio.Event(), asyncio.Event()
    order = verdicts.order

    def watch(event: AnyEvent) -> None:
        progress = event.payload
        if not isinstance(progress, events.Progress):
            return
        done = progress.done
        if isinstance(done, int) and done < len(order):
            verdicts.stretches.begin(done, order[done])
        else:
            verdicts.stretches.close(full=True)  # the last run ran whole
            finished.set()
        for line in verdicts.new_lines():
            say(line)
        if alt.until_verdict and verdicts.all_significant:
            decided.set()

    engine.subscribe(watch)
    prepare_looks(verdicts)
    await engine.start("plan", steps=plan_steps(alt.knob, order, verdicts.block))
    waits = {asyncio.ensure_future(finished.wait()), asyncio.ensure_future(decided.wait())}
    await asyncio.wait(waits, timeout=duration, return_when=asyncio.FIRST_COMPLETED)
    for w in waits:
        w.cancel()
    return "verdict" if decided.is_set() else "max-runs" if finished.is_set() else "time limit"


async def run_headless(profile: Profile, out: Path | None, duration: float | None = None, *,
                       parser_factory: ParserFactory | None = None,
                       ping_parser_factory: PingParserFactory | None = None,
                       knob_applier: KnobApplierFactory | None = None,
                       progress: TextIO | None = None,
                       settings: Sequence[tuple[str, str]] = (),
                       alternation: Alternation | None = None,
                       bisection: BisectPlan | None = None,
                       **engine_options: object) -> int:
    """Run the plan (or `duration` seconds continuously); 0 when every run went well.

    `settings` (knob, value) are applied before anything runs (`abtui run --set`); a refusal
    ends the run before it starts, with everything set back. `alternation` runs continuously
    flipping its knob (abtui.measure.alternate), for at most `duration` seconds. `bisection`
    runs a bisection's steps on one continuous run (abtui.measure.bisect.run); an undecided
    one exits EXIT_INCONCLUSIVE.

    The session goes to `out` as a plain journal, or (None) to a new session in the sessions
    folder, compacted when it ends."""
    stream = progress or sys.stderr
    answer: str | None = None
    ended: int | None = None  # the exit code of a run that stopped early
    bisected: Bisection | None = None

    def say(line: str) -> None:
        # a terminal that has gone (SIGHUP) is no reason to stop setting hosts back
        with contextlib.suppress(OSError, ValueError):
            print(f"abtui: {line}", file=stream, flush=True)

    # the knobs a line names: what this run varies (and every knob a flip changes later)
    varied = [alternation.knob] if alternation is not None else \
        [bisection.knob] if bisection is not None else \
        [] if duration is not None else [m for m in profile.plan.matrix if m != DIRECTION]
    run_rates = RunRates([*varied, *(knob for knob, _ in settings)])
    news = LinkNews()
    setting = False  # while --set values are applied: a refusal is said once, below

    def show(event: AnyEvent) -> None:
        measured = run_rates(event)
        line = describe(event, measured) if not (setting and event.kind is EventKind.KNOB_ERROR) \
            else None
        if news(event) and line:
            say(line)

    path = out or new_session_path(profile.name)
    # --duration shorter than a run: iperf3 runs that long (-t), so what the report says ran
    # (the command line RUN_START records) is what the duration asked
    own_end = (duration is not None and alternation is None and bisection is None
               and 0 < run_seconds(profile.test, duration) < run_seconds(profile.test))
    if own_end:
        engine_options.setdefault("chunk_seconds", run_seconds(profile.test, duration))
    engine = Engine(profile, parser_factory=parser_factory,
                    ping_parser_factory=ping_parser_factory, knob_applier=knob_applier,
                    session_path=path, **engine_options)  # type: ignore[arg-type]
    session = ControllerSession(engine, open_session_writer(path, profile,
                                                            compact=out is None))
    engine.subscribe(show)
    try:
        async with session:
            setting = True
            for knob, value in settings:
                try:
                    await engine.set_knob(knob, value)
                except KnobRefused as exc:  # exit 2 for a value abtui itself rejects
                    say(f"--set {knob}={value} refused, not started: {exc}")
                    raise _NotStarted(exc.exit_code) from None
            setting = False
            if alternation is not None:
                await _alternate(engine, profile, alternation, duration, say)
            elif bisection is not None:
                from abtui.measure.bisect.run import run_steps
                from abtui.measure.bisect.search import UNDECIDED

                bisected = await run_steps(engine, profile, bisection, say)
                answer = bisected.answer
                await engine.stop()
            elif duration is not None:
                tally = Tally()
                engine.subscribe(tally)
                await session.start("continuous")
                await _continuous(duration, tally, [p.label for p in profile.pairs], say,
                                  engine.release_no_more if own_end else None)
            else:
                await session.start("plan")
                await engine.wait()
    except _NotStarted as exc:
        ended = exc.code
    except KnobRefused as exc:  # a flip of the alternation refused: it cannot go on
        say(f"{'bisect' if bisection is not None else '--alternate'}: {exc}; stopped")
        ended = EXIT_FAILED
    except WriteFailed as exc:  # the session file: stopped, the hosts set back
        say(f"{exc}; stopped, {_set_back(engine)}")
        return EXIT_FAILED
    except asyncio.CancelledError:  # ctrl+c, SIGTERM, SIGHUP (abtui.core.signals)
        say(f"stopped, {_set_back(engine)}")
        raise
    finally:
        if session.write_error is None and session.closed is not None:
            say(f"session written to {session.closed}")
    if session.write_error is not None:  # the journal whole, its compaction failed
        say(session.write_error)
    if engine.not_restored:  # whatever ended the run, the recover line and a failure
        say(_set_back(engine))
    if session.write_error or engine.not_restored:
        return ended or EXIT_FAILED
    if ended is not None:
        return ended
    if bisection is not None:  # runs that failed under it are said; the answer decides
        if bisected is not None:
            print(bisected.result_line(), flush=True)  # the answer, on stdout for scripts
        return EXIT_INCONCLUSIVE if answer == UNDECIDED else EXIT_OK
    return EXIT_FAILED if engine.failed_runs else EXIT_OK


class _NotStarted(Exception):
    """A --set value refused: the run ends before it starts, exiting `code`."""

    def __init__(self, code: int) -> None:
        super().__init__(code)
        self.code = code


def _set_back(engine: Engine) -> str:
    """What the shutdown set back, as the last line says it."""
    if engine.not_restored:
        return "not everything was set back on the hosts: run `abtui recover` to finish"
    return "every host set back"
