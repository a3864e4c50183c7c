"""The engine: drives every pair of a profile on real hosts and streams what happens as Events.

It implements abtui.core.controller.Controller. Runs of all pairs are prepared ahead and released
together (runs.PairRun); the host clocks at release give the start skew. In continuous mode
each pair's iperf3 is restarted as soon as a run ends, and knob changes open new phases
(phases.PairPhases); in plan mode the profile's matrix is run step by step (plan.expand).
Parsers, knob changes and the session store come in through abtui.measure.ports.

The engine is a thin front over parts that own their state, each given its collaborators:
the event bus (bus.EventBus), the phase book (phase_book.PhaseBook), the host pool
(hosts.HostPool), the knob changer (knobs.KnobChanger), the run scheduler, the
only owner of runs (runs.RunScheduler), and the host verifier with its gate
(verify). This module is what runs when: continuous mode, the plan, stop and shutdown.
"""

from __future__ import annotations

import asyncio
import contextlib
import random
import time
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import Any

from abtui import __version__
from abtui.core import events
from abtui.core.controller import Mode
from abtui.core.dimensions import DIRECTION
from abtui.core.errors import AbtuiError, KnobRefused
from abtui.core.events import AnyEvent, Event, EventKind
from abtui.core.model import LinkState, Profile, now
from abtui.hosts.applier import HostKnobs
from abtui.hosts.restore import settle_journal
from abtui.hosts.undo import UndoJournal
from abtui.measure.bus import EventBus, Subscription
from abtui.measure.engine.drift import DriftWatch
from abtui.measure.engine.host_state import HostStateRecorder
from abtui.measure.engine.hosts import HostPool
from abtui.measure.engine.knobs import KnobApplierFactory, KnobChanger
from abtui.measure.engine.runs import RunScheduler
from abtui.measure.engine.traffic import TrafficJudge
from abtui.measure.engine.verify import HostGate, HostVerifier
from abtui.measure.phase_book import PhaseBook
from abtui.measure.plan import DIRECTION_OPTIONS, PlanStep, expand
from abtui.measure.ports import (
    ParserFactory,
    PingParserFactory,
    default_parser_factory,
    default_ping_parser_factory,
)
from abtui.measure.run.pair import PairRun
from abtui.measure.tasks import Tasks
from abtui.remote.iperf_cmd import run_seconds
from abtui.remote.link import HostLink

PLAN_DEFAULT_DURATION = 10.0
RECONNECT_WAIT_S = 30.0
# Continuous mode: a pair whose run failed after measuring (a stall, a link down) is started
# again after these pauses (the last one repeated) until it measures or is stopped.
RETRY_BACKOFF_S = (0.5, 1.0, 2.0, 3.0)
# A continuous run's successor is prepared this long before it ends.
PREARM_S = 3.0


def never_measured(run: PairRun, measured: bool) -> bool:
    """Does a failed run end its pair's continuous loop? Only when the pair never measured
    and the run did not stall: an error the hosts said (iperf3 missing, a wrong target) is
    not cured by starting again, while a stream that started and brought no interval (a
    guest just booted onto another build, a host under load) is retried like any later
    failure (the VM crossover's first run stalled so, and its pair measured nothing more)."""
    return run.status == "error" and not measured and not run.reader.stalled


class Engine:
    """The Controller on real hosts; see the module docstring."""

    def __init__(self, profile: Profile, *, parser_factory: ParserFactory | None = None,
                 ping_parser_factory: PingParserFactory | None = None,
                 knob_applier: KnobApplierFactory | None = None,
                 session_path: Path | None = None,
                 chunk_seconds: int | None = None,
                 raw_sink: Callable[[str, str], None] | None = None,
                 journal: UndoJournal | None = None, use_journal: bool = True,
                 start_data: Mapping[str, Any] | None = None) -> None:
        self.profile = profile
        # more SESSION_START data, e.g. the lab mapping's pairs and translations
        self.start_data = dict(start_data or {})
        self.session_path = session_path
        self.chunk_seconds = chunk_seconds
        self.failed_runs = 0
        # what shutdown could not set back (one line each), for `abtui recover` to finish
        self.not_restored: list[str] = []
        self.bus = EventBus()
        # every part emits straight onto the bus (an interval's path: no relay on the way);
        # the failed runs are counted by the bus's first subscriber
        self.emit: Callable[[AnyEvent], None] = self.bus.emit
        self.bus.subscribe(self._count_failed)
        self.tasks = Tasks()
        self.book = PhaseBook(profile)
        if ping_parser_factory is None and any(self.book.options(p).ping
                                               for p in profile.pairs):
            ping_parser_factory = default_ping_parser_factory()
        self.hosts = HostPool(profile, self.book, self.emit, self.tasks, journal=journal,
                              use_journal=use_journal)
        self.gate = HostGate(self.hosts)
        self.runs = RunScheduler(profile, self.book, self.hosts, self.gate, self.emit,
                                 self.tasks, parser_factory=parser_factory or
                                 default_parser_factory(),
                                 ping_parser_factory=ping_parser_factory, new_run=PairRun,
                                 raw_sink=raw_sink)
        self.knobs = KnobChanger(profile, self.book, self.runs, self.emit)
        self.verifier = HostVerifier(profile, self.book, self.hosts, self.gate, self.knobs,
                                     self.runs, self.emit, self.tasks)
        self.knobs.pause_with(self.verifier)  # a build switch holds its pairs' runs
        # every setting the session set, read back while measuring (someone else's change)
        # and before every change (someone else's value is seen before anything is written)
        self.drift = DriftWatch(profile, self.book, self.hosts, self.gate, self.knobs,
                                self.runs, self.emit)
        self.knobs.read_back_first(self.drift.check)
        # the one knob entry point: each pair its own value of a knob, in one change (a
        # crossover's boundary; `again`: a new stretch), the changer's own method
        self.set_values = self.knobs.set_values
        self.host_state = HostStateRecorder(profile, self.emit)
        self.traffic = TrafficJudge(profile.pairs, self.emit)  # no flow but ours
        self.bus.subscribe(self.traffic.feed)
        self._applier_factory = knob_applier
        self._stopped = asyncio.Event()
        self._started = False

    # ---- events -------------------------------------------------------------------------
    def subscribe(self, callback: Callable[[AnyEvent], None]) -> Subscription:
        """Every event from now on, until the returned handle is closed."""
        return self.bus.subscribe(callback)

    def _count_failed(self, event: AnyEvent) -> None:
        if (event.kind is EventKind.RUN_END and isinstance(end := event.payload, events.RunEnd)
                and end.status in ("error", "incomplete")):
            self.failed_runs += 1

    # ---- connecting ---------------------------------------------------------------------
    async def connect(self) -> None:
        """Open the links once: a later call (the console's start after a stop) keeps them,
        and with them the knob layer that knows every original value to restore."""
        if self.hosts.links:
            return
        self.emit(Event.of(events.SessionStart.from_data({
            "profile_text": self.profile.source_text, "profile_path": self.profile.source_path,
            "abtui_version": __version__, **self.start_data})))
        await self.hosts.connect(self._on_link_state)
        if self._applier_factory is not None:
            self.knobs.use(self._applier_factory(self.hosts.links, self.emit))
        else:
            self.knobs.use(HostKnobs(self.profile, self.hosts.links, self.hosts.dialects,
                                     self.emit, self.hosts.journal))
        await self.knobs.read_current()
        await self.host_state.record("start", self.hosts.links, self.hosts.dialects)
        await self.knobs.apply_initial()

    def _on_link_state(self, link: HostLink, state: LinkState, message: str) -> None:
        self.hosts.link_changed(link, state, message)
        if state is LinkState.LOST:
            self.runs.interrupt(link)
        self.verifier.link_changed(link, state)

    async def set_knob(self, knob: str, value: str, pairs: Sequence[str] | None = None,
                       again: bool = False) -> None:
        """`value` on the pairs (the knob's own, or all): the knob's one entry point,
        `set_values`, on the pairs it reaches."""
        await self.set_values(knob, dict.fromkeys(self.knobs.labels(knob, pairs), value), again)

    async def read_back(self) -> None:
        """Every setting the session set read back now (an alternation's stretch boundary):
        what someone else changed is a DRIFT event, its pairs' phases split (drift)."""
        await self.drift.check()

    @property
    def plan_run_seconds(self) -> int:
        """How long each run of a plan lasts."""
        return self._seconds(plan=True)

    def _seconds(self, plan: bool) -> int:
        if plan:
            return run_seconds(self.profile.test, self.profile.test.duration or
                               PLAN_DEFAULT_DURATION)
        return self.chunk_seconds or run_seconds(self.profile.test)

    # ---- continuous ---------------------------------------------------------------------
    async def start(self, mode: Mode = "continuous",
                    steps: Sequence[PlanStep] | None = None) -> None:
        """Measure continuously, or run the plan: the profile's (plan.expand), or `steps`
        (an alternation's ABAB…, abtui.measure.alternate)."""
        if self._started:
            raise AbtuiError("already measuring: stop first")
        self._started = True
        self.runs.begin(mode)
        self._stopped.clear()
        t = now()
        for phases in self.book.phases.values():
            phases.open_at(t)
        self.drift.start()
        if mode == "plan":
            self.tasks.spawn(self._plan_loop(steps))
            return
        labels = [p.label for p in self.profile.pairs]
        for run in await self.runs.start_group(labels, self._seconds(plan=False)):
            self.tasks.spawn(self._follow(run))

    async def _follow(self, run: PairRun) -> None:
        """One pair in continuous mode: restart its run whenever one ends, until stopped.

        The next run is prepared while the current one goes on (PREARM_S before its end),
        so a chunk that ends is followed by the next one without a set-up gap. A run that
        failed after the pair had measured (a stall, a link down) is started again with a
        growing pause (RETRY_BACKOFF_S) until it measures again; one that never measured
        ends the pair's loop unless it stalled (`never_measured`). A pair is never silently
        left out: one whose hosts have not come back within RECONNECT_WAIT_S is said (one
        line naming it) and waits for them, and a restart that did not start is retried."""
        label = run.label
        measured = False
        while True:
            ahead = self.tasks.spawn(self._prearm(run))
            run = await self.runs.stream(run)
            measured = measured or run.reader.count > 0
            spare = await ahead
            done = self.runs.stopping or never_measured(run, measured)
            if not done and run.status == "incomplete" and not await self._links_back(run):
                done = not await self._hosts_back(run)
            if spare is not None and (done or run.status != "ok"):
                await spare.cleanup()  # not for a run that failed, or one that must change
                spare = None
            if done:
                return
            if spare is not None:
                again = await self.runs.release([spare])
            elif run.status == "error":
                again = await self._retry(label)
            else:
                again = await self.runs.start_group([label], self._seconds(plan=False))
            if not again and not self.runs.stopping:  # it did not start: never left out
                again = await self._retry(label)
            if not again:
                return
            run = again[0]

    async def _retry(self, label: str) -> list[PairRun]:
        """Start the pair again after a failure, pausing longer each time, until stopped."""
        attempt = 0
        while True:
            delay = RETRY_BACKOFF_S[min(attempt, len(RETRY_BACKOFF_S) - 1)]
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(self._stopped.wait(), delay)
            if self.runs.stopping:
                return []
            again = await self.runs.start_group([label], self._seconds(plan=False))
            if again:
                return again
            attempt += 1

    async def _prearm(self, run: PairRun) -> PairRun | None:
        """The pair's next run, prepared shortly before `run` ends (None if it ends first)."""
        lead = max(0.0, run.spec.seconds - PREARM_S)
        try:
            await asyncio.wait_for(run.finished.wait(), lead)
            return None
        except TimeoutError:
            pass
        prepared = await self.runs.prepare([run.label], self._seconds(plan=False))
        await run.finished.wait()
        return prepared[0] if prepared else None

    async def _hosts_back(self, run: PairRun) -> bool:
        """A pair whose hosts did not come back within RECONNECT_WAIT_S: said once, then
        waited for until they do (True) or measuring stops (False)."""
        if self.runs.stopping:
            return False
        self.emit(Event.of(events.Error(
            message=f"pair {run.label}: its hosts have not answered for {RECONNECT_WAIT_S:g} s "
                    "since its run was cut; it measures again once they do"), pair=run.label))
        while not self.runs.stopping:  # looked at every second: a stop is not held up
            back = await asyncio.gather(run.sender.wait_connected(1.0),
                                        run.receiver.wait_connected(1.0))
            if all(back):
                return not self.runs.stopping
        return False

    async def _links_back(self, run: PairRun) -> bool:
        ok = await asyncio.gather(run.sender.wait_connected(RECONNECT_WAIT_S),
                                  run.receiver.wait_connected(RECONNECT_WAIT_S))
        return all(ok) and not self.runs.stopping

    async def wait(self) -> None:
        """Until every run has ended (plan finished, or stopped)."""
        await self.tasks.wait()

    def release_no_more(self) -> None:
        """No run is released from now on; those going on end by themselves (`abtui run
        --duration` shorter than a run: its runs last the duration), then `stop`."""
        self.runs.stop_releasing()

    async def stop(self) -> None:
        await self.drift.stop()
        if self._started:  # a change since the last read is seen before the phases close
            with contextlib.suppress(AbtuiError, OSError):
                await self.drift.check()
        self.runs.stop_releasing()
        self._stopped.set()
        await self.runs.stop_all()
        await self.wait()
        if self._started:
            t = now()
            for phases in self.book.phases.values():
                closed = phases.close(t)
                if closed is not None:
                    self.emit(closed)
        self._started = False

    # ---- plan ---------------------------------------------------------------------------
    async def _plan_loop(self, given: Sequence[PlanStep] | None = None) -> None:
        seed = random.SystemRandom().randrange(2**31)
        steps = list(given) if given is not None else expand(self.profile, seed)
        if given is None and self.profile.plan.shuffle:
            used = self.profile.plan.seed if self.profile.plan.seed is not None else seed
            self.emit(Event.of(events.Mark(
                text=f"plan order: each repetition a block in random order, seed {used} "
                     f"(replay: --seed {used})")))
        labels = [p.label for p in self.profile.pairs]
        started = time.monotonic()
        self.emit(Event.of(events.Progress(done=0, total=len(steps), eta_s=None)))
        for done, step in enumerate(steps, 1):
            if self.runs.stopping:
                return
            if await self._apply_step(step):
                runs = await self.runs.start_group(labels, self._seconds(plan=True))
                await asyncio.gather(*(self.runs.stream(r) for r in runs))
            elapsed = time.monotonic() - started
            eta = elapsed / done * (len(steps) - done)
            self.emit(Event.of(events.Progress(done=done, total=len(steps),
                                               eta_s=round(eta, 1))))
            if done < len(steps) and not self.runs.stopping:
                await asyncio.sleep(self.profile.plan.pause)

    async def _apply_step(self, step: PlanStep) -> bool:
        """Put every pair in the step's configuration; False (and an error) when refused."""
        for name, value in step.config.items():
            if name == DIRECTION and name not in {k.name for k in self.profile.knobs}:
                self._set_direction(value)
                continue
            k = self.knobs.knob(name)
            labels = list(k.pairs) or list(self.book.phases)
            again = step.again  # a new stretch (a build: one boot per stretch)
            if all(self.book.phases[x].config.get(name) == value for x in labels) and not again:
                continue
            try:
                await self.set_knob(name, value, labels, again)
            except KnobRefused as exc:
                self.emit(Event.of(events.Error(
                    message=f"plan step {step.index + 1} ({_describe(step.config)}) "
                            f"skipped: {exc}")))
                self.failed_runs += 1
                return False
        return True

    def _set_direction(self, value: str) -> None:
        t = now()
        for label, phases in self.book.phases.items():
            self.book.live_options[label].update(DIRECTION_OPTIONS[value])
            if phases.config.get(DIRECTION) != value:
                closed = phases.commit_change(t, t, {DIRECTION: value})
                if closed is not None:
                    self.emit(closed)

    # ---- the rest -----------------------------------------------------------------------
    def note(self, payload: events.Payload) -> None:
        """An event the engine did not make itself (a bisection's look), on its clock."""
        self.emit(Event.of(payload))

    async def mark(self, text: str, verdicts: list[dict[str, Any]] | None = None,
                   bisect: dict[str, Any] | None = None) -> None:
        self.emit(Event.of(events.Mark(text=text, verdicts=verdicts, bisect=bisect)))

    async def shutdown(self, reason: str = "shutdown") -> None:
        """Runs ended, every host set back (even when ending the runs failed), links closed;
        `not_restored` then says what is left for `abtui recover`."""
        try:
            await self.stop()
        finally:
            await self._set_back(reason)

    async def _set_back(self, reason: str) -> None:
        pending: list[str] = []
        self.verifier.stand_down()  # a restore's boot is not a reset to undo
        try:
            pending = await self.knobs.applier.restore()
        finally:
            cut = await self.host_state.record_end(self.hosts.links, self.hosts.dialects)
            self.runs.close()
            await self.hosts.end_orphans()
            await self.hosts.close()
            for line in pending:
                self.emit(Event.of(events.Error(message=line)))
            self.not_restored = [*pending, *(["process groups left on hosts"]
                                             if self.hosts.orphans else [])]
            # kept when something is left for `abtui recover`
            settle_journal(self.hosts.journal, left=bool(self.hosts.orphans or pending))
            self.emit(Event.of(events.SessionEnd(reason=reason)))
            if cut:  # cancelled while reading the hosts: the set-back is done, it goes on
                raise asyncio.CancelledError



def _describe(config: Mapping[str, str]) -> str:
    return ", ".join(f"{k}={v}" for k, v in config.items()) or "no knobs"
