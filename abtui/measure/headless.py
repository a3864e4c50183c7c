"""`abtui run --headless`: the engine with no console; progress on stderr, events to a file.

Whatever ends the run (the plan done, the duration up, an error, Ctrl-C), the engine is shut
down: knobs restored, every remote process ended, links closed, the session file complete.
"""

from __future__ import annotations

import asyncio
import sys
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, TextIO

from abtui.core import events, numbers
from abtui.core.errors import EXIT_FAILED, EXIT_OK, KnobRefused
from abtui.core.events import AnyEvent, EventKind
from abtui.core.model import Profile
from abtui.measure.engine import Engine
from abtui.measure.engine_knobs import KnobApplierFactory
from abtui.measure.seams import ParserFactory, PingParserFactory, open_session_writer
from abtui.measure.session import ControllerSession
from abtui.reports.throughput import Segment, counted
from abtui.sessions.paths import new_session_path

if TYPE_CHECKING:
    from abtui.measure.alternate import Alternation, Verdicts


# the kinds whose payload names a run
# the payloads that name their run
RUN_PAYLOADS = (events.RunStart, events.IntervalMeasured, events.Ping, events.WatchSampled,
                events.Cpu, events.RunEnd)


class RunRates:
    """Each run's own figure as its intervals arrive (abtui.reports.throughput: the bits of its
    counted intervals ÷ their seconds), for the line that says it ended."""

    def __init__(self) -> None:
        self.runs: dict[tuple[str | None, object], Segment] = {}

    def __call__(self, event: AnyEvent) -> float | None:
        """Take an event in; for a RUN_END, the run's figure (None without intervals)."""
        p = event.payload
        run = p.run if isinstance(p, RUN_PAYLOADS) else None
        key = (event.pair, run)
        got = counted(event)
        if got is not None:
            self.runs.setdefault(key, Segment()).add(*got)
        if event.kind is EventKind.RUN_END:
            seg = self.runs.pop(key, None)
            return seg.rate if seg is not None else None
        return None


def describe(event: AnyEvent, rate: float | None = None) -> str | None:
    """The progress line for an event, None for events not worth a line; a RUN_END's line
    carries `rate`, the run's figure (RunRates)."""
    who = f"{event.pair}: " if event.pair else (f"{event.host}: " if event.host else "")
    match event.payload:
        case events.Progress(done=done, total=total, eta_s=eta):
            left = f", about {eta:.0f} s left" if isinstance(eta, int | float) else ""
            return f"plan: {done}/{total} steps done{left}"
        case events.RunEnd(run=run, status=status, message=message):
            got = f", {numbers.rate(rate)}" if rate is not None else ""
            why = f": {message}" if message else ""
            return f"{who}run {run} {status}{got}{why}"
        case events.Error(message=message) | events.KnobError(message=message):
            return f"{who}error: {message}"
        case events.Link(state=state, message=message) if state in ("lost", "connected"):
            return f"{who}link {state}{': ' + message if message else ''}"
        case events.KnobChanged(knob=knob, value=value, pairs=pairs):
            return f"{knob} = {value} on {', '.join(pairs or [])}"
        case events.Drift() as drift:
            return drift.line(event.host)
        case events.Restore(ok=ok, knob=knob, message=message) if not ok:
            return f"{who}could not restore {knob}: {message}"
    return None


class Tally:
    """Each pair's throughput since the last progress line of a continuous run, by the one
    rule (abtui.reports.throughput: bits ÷ seconds of its counted intervals; --bidir's way back is
    not mixed in)."""

    def __init__(self) -> None:
        self.rates: dict[str, Segment] = {}

    def __call__(self, event: AnyEvent) -> None:
        got = counted(event)
        if got is not None and event.pair:
            self.rates.setdefault(event.pair, Segment()).add(*got)

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


async def _continuous(duration: float, tally: Tally, pairs: Sequence[str],
                      say: Callable[[str], None]) -> None:
    tick = tick_seconds(duration)
    loop = asyncio.get_running_loop()
    start = loop.time()
    while (left := duration - (loop.time() - start)) > 0:
        await asyncio.sleep(min(left, tick or left))
        elapsed = loop.time() - start
        if tick is not None and duration - elapsed > tick / 2:
            say(tally.line(elapsed, duration, pairs))


async def _alternate(engine: Engine, profile: Profile, alt: Alternation,
                     duration: float | None, say: Callable[[str], None]) -> None:
    """The alternation: the schedule's first value set, then the next one every `alt.every`
    seconds (or one plan-mode run per stretch) until the rule, the maximum or the time limit
    stops it; the order's seed and the verdicts said, and recorded as marks."""
    from abtui.measure.alternate import drive, order_line, stopped_line, verdicts_for

    verdicts = verdicts_for(profile, alt, engine.plan_run_seconds)
    engine.subscribe(verdicts.stretches)
    first = verdicts.order[0]
    await engine.set_knob(alt.knob, first)
    loop = asyncio.get_running_loop()
    began = loop.time()
    every = f"every {alt.every:g} s" if alt.every else \
        f"one {engine.plan_run_seconds} s run per value"
    say(f"alternating {alt.knob} between {' / '.join(alt.values)}, {every}, at most "
        f"{alt.max_runs} blocks; smallest effect of interest {verdicts.min_effect:g}%")
    seeded = order_line(alt.knob, verdicts.seed, alt.values)
    say(seeded)
    await engine.mark(seeded)
    if alt.every is not None:
        await engine.start("continuous")
        verdicts.stretches.begin(0, first)
        why = await drive(engine.set_knob, alt, verdicts, say, duration)
    else:
        why = await _alternate_runs(engine, alt, verdicts, duration, say)
    await engine.stop()  # the stretch in force closes: it counts if it lasted long enough
    verdicts.stretches.close()
    lines = [stopped_line(why, verdicts, loop.time() - began), *verdicts.summary(),
             verdicts.family_line()]
    for line in lines:
        say(line)
    await engine.mark("; ".join(lines))


async def _alternate_runs(engine: Engine, alt: Alternation, verdicts: Verdicts,
                          duration: float | None, say: Callable[[str], None]) -> str:
    """Per run in plan mode: one run per entry of the schedule (alternate.plan_steps); a
    stretch closes when the plan says the next step begins. Returns why it stopped, as
    alternate.drive does."""
    from abtui.measure.alternate import plan_steps

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
            verdicts.stretches.close()
            finished.set()
        for line in verdicts.new_lines():
            say(line)
        if alt.until_verdict and verdicts.all_significant:
            decided.set()

    engine.subscribe(watch)
    await engine.start("plan", steps=plan_steps(alt.knob, order, len(alt.values)))
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
                       **engine_options: object) -> int:
    """Run the plan (or `duration` seconds continuously); 0 when every run went well.

    `settings` (knob, value) are applied before anything runs (`abtui run --set`); a refusal
    ends the run before it starts, with everything set back. `alternation` runs continuously
    flipping its knob (abtui.measure.alternate), for at most `duration` seconds.

    The session goes to `out` as a plain journal, or (None) to a new session in the sessions
    folder, compacted when it ends."""
    stream = progress or sys.stderr

    def say(line: str) -> None:
        print(f"abtui: {line}", file=stream, flush=True)

    run_rates = RunRates()
    setting = False  # while --set values are applied: a refusal is said once, below

    def show(event: AnyEvent) -> None:
        rate = run_rates(event)
        line = describe(event, rate) if not (setting and event.kind is EventKind.KNOB_ERROR) \
            else None
        if line:
            say(line)

    path = out or new_session_path(profile.name)
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
                except KnobRefused as exc:
                    say(f"--set {knob}={value} refused, not started: {exc}")
                    return EXIT_FAILED
            setting = False
            if alternation is not None:
                await _alternate(engine, profile, alternation, duration, say)
            elif duration is not None:
                tally = Tally()
                engine.subscribe(tally)
                await session.start("continuous")
                await _continuous(duration, tally, [p.label for p in profile.pairs], say)
            else:
                await session.start("plan")
                await engine.wait()
    except KnobRefused as exc:  # a flip of the alternation refused: it cannot go on
        say(f"--alternate: {exc}; stopped")
        return EXIT_FAILED
    finally:
        print(f"abtui: session written to {session.closed}", file=stream, flush=True)
    return EXIT_FAILED if engine.failed_runs else EXIT_OK
