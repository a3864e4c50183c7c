"""The engine: drives every pair of a profile on real hosts and streams what happens as Events.

It implements abtui.core.controller.Controller. Runs of all pairs are prepared ahead and released
together (runs.PairRun); the host clocks at release give the start skew. In continuous mode
each pair's iperf3 is restarted as soon as a run ends, and knob changes open new phases
(phases.PairPhases); in plan mode the profile's matrix is run step by step (plan.expand).
Parsers, knob changes and the session store come in through abtui.measure.seams.
"""

from __future__ import annotations

import asyncio
import contextlib
import random
import shlex
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import asdict
from pathlib import Path
from typing import Any

from abtui import __version__
from abtui.core import events
from abtui.core.configuration import pair_value
from abtui.core.controller import Mode
from abtui.core.errors import AbtuiError, KnobRefused, RemoteError, RunFailed
from abtui.core.events import Event, EventKind
from abtui.core.model import (
    DEFAULT_IPERF3,
    Knob,
    KnobKind,
    LinkState,
    Pair,
    Profile,
    TestOptions,
    now,
)
from abtui.hosts.connect import open_hosts, probe_tunnels
from abtui.hosts.undo import HostRecord, UndoJournal
from abtui.measure.phases import PairPhases
from abtui.measure.plan import DIRECTION, DIRECTION_OPTIONS, TUNNEL, PlanStep, expand
from abtui.measure.runs import PairRun, RunHooks, RunSpec
from abtui.measure.seams import (
    Emit,
    HostKnobs,
    KnobApplier,
    NoKnobs,
    ParserFactory,
    PingParserFactory,
    default_parser_factory,
    default_ping_parser_factory,
)
from abtui.remote.dialects import Dialect
from abtui.remote.iperf_cmd import JSON_STREAM_SINCE, options_for, parse_iperf_version, run_seconds
from abtui.remote.link import HostLink

# Builds the knob layer once links exist: (links by alias, emit) -> applier.
KnobApplierFactory = Callable[[Mapping[str, HostLink], Emit], KnobApplier]
PLAN_DEFAULT_DURATION = 10.0
BUSY_RETRIES = 3
RECONNECT_WAIT_S = 30.0
# Continuous mode: a pair whose run failed after measuring (a stall, a link down) is started
# again after these pauses (the last one repeated) until it measures or is stopped.
RETRY_BACKOFF_S = (0.5, 1.0, 2.0, 3.0)
# A pause between the last pair armed and the release, so no host is still busy arming.
SETTLE_S = 0.05
# A continuous run's successor is prepared this long before it ends.
PREARM_S = 3.0


def _install_hint(program: str) -> str:
    if program == DEFAULT_IPERF3:
        return "install the iperf3 package"
    return "install iperf3 there, or correct the profile's [test] iperf3 option"


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
        self.parser_factory = parser_factory or default_parser_factory()
        self.live_options: dict[str, dict[str, Any]] = {p.label: {} for p in profile.pairs}
        self.ping_parser_factory = ping_parser_factory
        if ping_parser_factory is None and any(self._options(p).ping for p in profile.pairs):
            self.ping_parser_factory = default_ping_parser_factory()
        self._applier_factory = knob_applier
        self.applier: KnobApplier = NoKnobs()
        self.chunk_seconds = chunk_seconds
        self.raw_sink = raw_sink
        self.links: dict[str, HostLink] = {}
        self.dialects: dict[str, Dialect] = {}
        # originals, tunnels and process groups, for `abtui recover` after a crash
        self.journal = journal
        self._use_journal = use_journal
        # (host, iperf3 program) -> its version, None when it is not there
        self.iperf_versions: dict[tuple[str, str], tuple[int, int] | None] = {}
        self.has_bash: dict[str, bool] = {}
        self.has_stdbuf: dict[str, bool] = {}
        self.phases = {p.label: PairPhases(p.label) for p in profile.pairs}
        self.targets = {p.label: p.target for p in profile.pairs}
        self.skews: list[float] = []
        self.failed_runs = 0
        self._subscribers: list[Callable[[Event], None]] = []
        self._runs: dict[str, PairRun] = {}
        # per pair, how many times a setting only new connections see began or ended
        # changing: a run prepared before the last such moment is stale (see _fresh)
        self._settings: dict[str, int] = {p.label: 0 for p in profile.pairs}
        self._tasks: set[asyncio.Task[Any]] = set()
        self._orphans: list[tuple[HostLink, int]] = []
        self._run_counter = 0
        self._stopping = False
        self._stopped = asyncio.Event()
        self._mode: Mode | None = None
        self._started = False

    # ---- events -------------------------------------------------------------------------
    def subscribe(self, callback: Callable[[Event], None]) -> None:
        self._subscribers.append(callback)

    def emit(self, event: Event) -> None:
        if event.kind is EventKind.RUN_END and event.data.get("status") in ("error",
                                                                            "incomplete"):
            self.failed_runs += 1
        for callback in self._subscribers:
            callback(event)

    def _spawn(self, coro: Any) -> asyncio.Task[Any]:
        task = asyncio.get_running_loop().create_task(coro)
        self._tasks.add(task)
        task.add_done_callback(self._tasks.discard)
        return task

    # ---- connecting ---------------------------------------------------------------------
    async def connect(self) -> None:
        """Open the links once: a later call (the console's start after a stop) keeps them,
        and with them the knob layer that knows every original value to restore."""
        if self.links:
            return
        self.emit(Event.of(events.SessionStart.from_data({
            "profile_text": self.profile.source_text, "profile_path": self.profile.source_path,
            "abtui_version": __version__, **self.start_data})))
        hosts = await open_hosts(self.profile, on_state=self._on_link_state)
        self.links, self.dialects = hosts.links, hosts.dialects
        doubted = [f"{a}: {hosts.errors.get(a) or link.hostkey_problem}"
                   for a, link in hosts.links.items() if link.hostkey_problem]
        if doubted:  # a host that may not be the one meant: touch no host at all
            await asyncio.gather(*(link.close() for link in self.links.values()),
                                 return_exceptions=True)
            self.links = {}
            raise AbtuiError("; ".join(doubted) + "; nothing was changed on any host "
                             "(update known_hosts if the new key is expected)")
        await probe_tunnels(self.profile, hosts)
        for alias, facts in hosts.facts.items():
            self.emit(Event.of(events.Facts(facts=asdict(facts)), host=alias))
        for alias, message in hosts.errors.items():
            text = message if alias in message else f"{alias}: {message}"
            self.emit(Event.of(events.Error(message=text), host=alias))
        programs = {(alias, self._options(pair).iperf3) for pair in self.profile.pairs
                    for alias in (pair.sender, pair.receiver)}
        await asyncio.gather(*(self._detect(self.links[alias], program)
                               for alias, program in sorted(programs)
                               if alias in self.links
                               and self.links[alias].state is LinkState.CONNECTED))
        if self.journal is None and self._use_journal:
            self.journal = UndoJournal()
        if self.journal is not None:  # how `abtui recover` reaches every host it may touch
            for link in self.links.values():
                self.journal.host(HostRecord(link.alias, link.ssh_config, link.known_hosts,
                                             link.sudo))
        if self._applier_factory is not None:
            self.applier = self._applier_factory(self.links, self.emit)
        else:
            self.applier = HostKnobs(self.profile, self.links, self.dialects, self.emit,
                                     self.journal)
        await self._read_current()
        await self._apply_initial()

    async def _read_current(self) -> None:
        """Every knob's value on every pair, read from the hosts: the first phase's
        configuration, emitted as CONFIG per pair (what the console shows and cycles from).
        A knob that no host of a pair could say is left out of that pair's configuration."""
        knobs = list(self.profile.knobs)
        if set(self.profile.tunnels) - {"none"} and \
                not any(k.kind is KnobKind.TUNNEL for k in knobs):
            knobs.append(self._knob(TUNNEL))
        found = await asyncio.gather(*(self._current(k) for k in knobs),
                                     return_exceptions=True)
        for label, phases in self.phases.items():
            config = {k.name: values[label] for k, values in zip(knobs, found, strict=True)
                      if isinstance(values, dict) and label in values}
            phases.config = config
            self.emit(Event.of(events.Config(config=dict(config)), pair=label))

    async def _current(self, knob: Knob) -> dict[str, str]:
        """One knob's value now, per pair it applies to."""
        labels = [x for x in self.phases if not knob.pairs or x in knob.pairs]
        if knob.kind is KnobKind.TUNNEL:
            return dict.fromkeys(labels, "none")  # abtui makes every tunnel it measures
        if knob.kind is KnobKind.IPERF3:
            return {x: self._iperf3_current(knob, x) for x in labels}
        read = getattr(self.applier, "current", None)
        if read is None:
            return {}
        by_role = await read(knob, [self.profile.pair(x) for x in labels])
        return {x: pair_value(roles) for x, roles in by_role.items()}

    def _iperf3_current(self, knob: Knob, label: str) -> str:
        """An iperf3 knob's value in the pair's test options, as the profile writes it."""
        from abtui.profile.knobs import IPERF3_KEYS, iperf3_value

        key = knob.key or knob.name
        value = getattr(self._options(self.profile.pair(label)), key, None)
        if key in IPERF3_KEYS:
            for v in knob.values:
                with contextlib.suppress(ValueError, KeyError):
                    if iperf3_value(key, v) == value:
                        return v
        if isinstance(value, bool):
            return "on" if value else "off"
        return "default" if value is None else str(value)

    async def _apply_initial(self) -> None:
        """Knobs with an `initial` value are set before anything runs: the first phase's
        configuration (a refusal is reported and the host's own value stays)."""
        for knob in self.profile.knobs:
            if knob.initial is None:
                continue
            labels = list(knob.pairs) or list(self.phases)
            try:
                await self._apply(knob, knob.initial, labels)
            except KnobRefused:
                continue
            for label in labels:
                self.phases[label].config[knob.name] = knob.initial

    def _on_link_state(self, link: HostLink, state: LinkState, message: str) -> None:
        self.emit(Event.of(events.Link(state=str(state), message=message), host=link.alias))
        if state is LinkState.CONNECTED and any(o[0] is link for o in self._orphans):
            self._spawn(self._end_orphans(link))
        if state is LinkState.LOST:  # a pair's run cannot go on half-watched: end it now
            for run in list(self._runs.values()):
                if link in (run.sender, run.receiver):
                    self._spawn(run.interrupt(link.alias))

    async def _detect(self, link: HostLink, program: str) -> None:
        """What a host has, asked once: iperf3's version (text or --json-stream output), bash
        (a fork-free clock at release) and stdbuf (every iperf3 line flushed as printed)."""
        result = await link.run(
            f"{shlex.quote(program)} --version 2>&1 | head -n 1; "
            "command -v bash >/dev/null && echo __abtui_bash; "
            "command -v stdbuf >/dev/null && echo __abtui_stdbuf; true")
        lines = result.stdout.splitlines()
        first = lines[0] if lines else ""
        version = parse_iperf_version(first)
        self.iperf_versions[(link.alias, program)] = version
        self.has_bash[link.alias] = "__abtui_bash" in lines
        self.has_stdbuf[link.alias] = "__abtui_stdbuf" in lines
        if version is None:
            self.emit(Event.of(events.Error(
                message=f"{link.alias}: iperf3 is not installed (`{program}` not "
                        f"found): {_install_hint(program)}"), host=link.alias))

    # ---- runs ---------------------------------------------------------------------------
    def _options(self, pair: Pair) -> TestOptions:
        return options_for(self.profile.test, pair, self.live_options.get(pair.label))

    def _new_run(self, label: str, seconds: int, port: int | None) -> PairRun:
        pair = self.profile.pair(label)
        opts = self._options(pair)
        self._run_counter += 1
        run_id = f"{label}-{self._run_counter}"
        for alias in (pair.sender, pair.receiver):
            link = self.links.get(alias)
            if link is None or link.state is not LinkState.CONNECTED:
                raise RunFailed(f"{alias} is not connected"
                                f"{' (' + str(link.state) + ')' if link else ''}", run_id)
        for alias in (pair.sender, pair.receiver):
            if self.iperf_versions.get((alias, opts.iperf3)) is None:
                raise RunFailed(f"{alias}: iperf3 is not installed (`{opts.iperf3}` not "
                                f"found): {_install_hint(opts.iperf3)}", run_id)
        sender_version = self.iperf_versions.get((pair.sender, opts.iperf3)) or (0, 0)
        spec = RunSpec(
            run_id=run_id, pair=pair, options=opts, target=self.targets[label],
            seconds=seconds, port=port or opts.port, config=dict(self.phases[label].config),
            settings=self._settings[label],
            json_stream=sender_version >= JSON_STREAM_SINCE, program=opts.iperf3,
            bash=self.has_bash.get(pair.sender, False),
            stdbuf=self.has_stdbuf.get(pair.sender, False),
            receiver_stdbuf=self.has_stdbuf.get(pair.receiver, False),
            watches=[w for w in self.profile.watches if not w.pairs or label in w.pairs],
            cpu_commands={a: self.dialects[a].cpu_times_command
                          for a in (pair.sender, pair.receiver)
                          if opts.host_cpu and a in self.dialects})
        hooks = RunHooks(emit=self.emit, parser_factory=self.parser_factory,
                         phase_for=self._phase_for, ping_parser_factory=self.ping_parser_factory,
                         raw_sink=self.raw_sink, orphan=self._add_orphan,
                         started=self.journal.record_pgid if self.journal else None,
                         ended=self.journal.forget_pgid if self.journal else None)
        return PairRun(spec, self.links[pair.sender], self.links[pair.receiver], hooks)

    def _phase_for(self, label: str, received: float, duration: float) -> tuple[int, bool]:
        return self.phases[label].classify(received, duration)

    def _fail_run(self, label: str, run_id: str, message: str) -> None:
        self.emit(Event.of(events.Error(message=message), pair=label))
        self.emit(Event.of(events.RunEnd(run=run_id, status="error", summary=None, ping=None,
                                         message=message), pair=label))

    async def _start_group(self, labels: Sequence[str], seconds: int,
                           ports: Mapping[str, int] | None = None) -> list[PairRun]:
        """Prepare every pair's run, release them all at once, record clocks and skew."""
        return await self._release(await self._prepare(labels, seconds, ports))

    async def _prepare(self, labels: Sequence[str], seconds: int,
                       ports: Mapping[str, int] | None = None) -> list[PairRun]:
        """Every pair's server listening and client armed; a pair that fails says why."""
        runs: list[PairRun] = []
        for label in labels:
            try:
                runs.append(self._new_run(label, seconds, (ports or {}).get(label)))
            except RunFailed as exc:
                self._fail_run(label, exc.run_id, exc.message)
        outcomes = await asyncio.gather(*(r.prepare() for r in runs), return_exceptions=True)
        ready = []
        for run, outcome in zip(runs, outcomes, strict=True):
            if isinstance(outcome, BaseException):
                self._fail_run(run.label, run.spec.run_id, str(outcome))
            else:
                ready.append(run)
        return ready

    async def _release(self, ready: list[PairRun]) -> list[PairRun]:
        """Release prepared runs together; RUN_START each, SKEW for the group."""
        if len(ready) > 1:
            await asyncio.sleep(SETTLE_S)
        ready = await self._fresh(ready)
        if self._stopping:  # stopped while these were being prepared: never released
            await asyncio.gather(*(r.cleanup() for r in ready), return_exceptions=True)
            return []
        for run in ready:  # one loop iteration: the newlines leave together
            run.release()
            self._runs[run.label] = run  # from now on a flip or a stop reaches it
        clocks = await asyncio.gather(*(r.read_clock() for r in ready))
        for run in ready:  # pings need no tight start: kept off the clients' way
            run.release_ping()
        known = [c for c in clocks if c is not None]
        first = min(known) if known else None
        for run, clock in zip(ready, clocks, strict=True):
            self.phases[run.label].measured = True
            self.emit(Event.of(events.RunStart(
                run=run.spec.run_id, config=dict(self.phases[run.label].config),
                phase=self.phases[run.label].phase,
                host_clock=clock,
                skew_ms=None if clock is None or first is None else (clock - first) * 1e3,
                options=_jsonable(asdict(run.spec.options)), target=run.spec.target,
                port=run.spec.port, argv=list(run.client_argv) or None), pair=run.label))
        if len(known) > 1 and first is not None:
            skew = (max(known) - first) * 1e3
            self.skews.append(skew)
            self.emit(Event.of(events.Skew(
                skew_ms=skew, clocks={r.label: c for r, c in zip(ready, clocks, strict=True)})))
        if self._stopping:  # stopped while they were being released
            await asyncio.gather(*(r.stop() for r in ready), return_exceptions=True)
        return ready

    async def _fresh(self, ready: list[PairRun]) -> list[PairRun]:
        """The prepared runs, those prepared before a restarting knob changed their pair
        (armed with the old options, target or socket settings) prepared again."""
        for _ in range(BUSY_RETRIES):
            stale = [r for r in ready if r.spec.settings != self._settings[r.label]]
            if not stale or self._stopping:
                break
            await asyncio.gather(*(r.cleanup() for r in stale), return_exceptions=True)
            again = await self._prepare([r.label for r in stale], stale[0].spec.seconds)
            ready = [r for r in ready if r not in stale] + again
        return ready

    async def _stream(self, run: PairRun) -> PairRun:
        """Stream a run to its end; a busy server is retried on another port, alone. In a
        plan, a run a restarting knob retired is followed by a fresh one of the step's
        length, so the step measures the setting now in force (in continuous mode `_follow`
        starts the next run)."""
        busy = 0
        while True:
            await run.stream()
            if self._stopping:
                break
            if run.retry_port is not None and busy < BUSY_RETRIES - 1:
                busy += 1
                ports: dict[str, int] | None = {run.label: run.retry_port}
            elif run.retired_at is not None and self._mode == "plan":
                ports = None
            else:
                break
            again = await self._start_group([run.label], run.spec.seconds, ports)
            if not again:
                break
            run = again[0]
        self._runs.pop(run.label, None)
        return run

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
        self._started, self._stopping, self._mode = True, False, mode
        self._stopped.clear()
        t = now()
        for phases in self.phases.values():
            phases.start = t
        if mode == "plan":
            self._spawn(self._plan_loop(steps))
            return
        labels = [p.label for p in self.profile.pairs]
        for run in await self._start_group(labels, self._seconds(plan=False)):
            self._spawn(self._follow(run))

    async def _follow(self, run: PairRun) -> None:
        """One pair in continuous mode: restart its run whenever one ends, until stopped.

        The next run is prepared while the current one goes on (PREARM_S before its end),
        so a chunk that ends is followed by the next one without a set-up gap. A run that
        failed after the pair had measured (a stall, a link down) is started again with a
        growing pause (RETRY_BACKOFF_S) until it measures again; one that never measured
        (iperf3 missing, a wrong target) ends the pair's loop."""
        label = run.label
        measured = False
        while True:
            ahead = self._spawn(self._prearm(run))
            run = await self._stream(run)
            measured = measured or run.interval_count > 0
            spare = await ahead
            done = self._stopping or (run.status == "error" and not measured) or (
                run.status == "incomplete" and not await self._links_back(run))
            if spare is not None and (done or run.status != "ok"):
                await spare.cleanup()  # not for a run that failed, or one that must change
                spare = None
            if done:
                return
            if spare is not None:
                again = await self._release([spare])
            elif run.status == "error":
                again = await self._retry(label)
            else:
                again = await self._start_group([label], self._seconds(plan=False))
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
            if self._stopping:
                return []
            again = await self._start_group([label], self._seconds(plan=False))
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
        prepared = await self._prepare([run.label], self._seconds(plan=False))
        await run.finished.wait()
        return prepared[0] if prepared else None

    async def _links_back(self, run: PairRun) -> bool:
        ok = await asyncio.gather(run.sender.wait_connected(RECONNECT_WAIT_S),
                                  run.receiver.wait_connected(RECONNECT_WAIT_S))
        return all(ok) and not self._stopping

    async def wait(self) -> None:
        """Until every run has ended (plan finished, or stopped)."""
        while self._tasks:
            await asyncio.gather(*list(self._tasks), return_exceptions=True)

    async def stop(self) -> None:
        self._stopping = True
        self._stopped.set()
        await asyncio.gather(*(run.stop() for run in list(self._runs.values())),
                             return_exceptions=True)
        await self.wait()
        if self._started:
            t = now()
            for phases in self.phases.values():
                closed = phases.close(t)
                if closed is not None:
                    self.emit(closed)
        self._started = False

    # ---- knobs --------------------------------------------------------------------------
    def _knob(self, name: str) -> Knob:
        try:
            return self.profile.knob(name)
        except KeyError:
            if name == TUNNEL:  # the profile's tunnel types, without a knob of that name
                return Knob(name=TUNNEL, kind=KnobKind.TUNNEL, values=self.profile.tunnels)
            raise KnobRefused(f"no knob named {name!r} in the profile") from None

    async def set_knob(self, knob: str, value: str, pairs: Sequence[str] | None = None) -> None:
        k = self._knob(knob)
        labels = list(pairs) if pairs else (list(k.pairs) or list(self.phases))
        unknown = [label for label in labels if label not in self.phases]
        if unknown:
            raise KnobRefused(f"knob {knob}: no pair named {', '.join(unknown)}")
        # a pair whose hosts have the value already is not changed: no new phase for it
        labels = [label for label in labels if self.phases[label].config.get(k.name) != value]
        if not labels:
            return
        begin = now()
        for label in labels:
            self.phases[label].begin_change(begin)
        # a setting only new connections see: the pairs' runs end (continuous: `_follow`
        # starts the next; a plan's step: `_stream` measures it again)
        restarts = k.restart or k.kind in (KnobKind.TUNNEL, KnobKind.IPERF3)
        retired = [self._runs[x] for x in labels if restarts and x in self._runs]
        for run in retired:  # its connection keeps the old setting: counted nowhere after
            run.retired_at = begin
        if restarts:
            self._settings_changed(labels)
        try:
            targets = await self._apply(k, value, labels)
        except KnobRefused:
            for label in labels:
                self.phases[label].abort_change()
            for run in retired:
                run.retired_at = None
            raise
        finally:
            if restarts:
                self._settings_changed(labels)
        end = now()
        for label in labels:
            closed = self.phases[label].commit_change(begin, end, {knob: value})
            if closed is not None:
                self.emit(closed)
            self.phases[label].measured = label in self._runs  # a run goes on into it
        if restarts or targets:
            await self._restart_pairs(labels, begin)

    async def _apply(self, k: Knob, value: str, labels: Sequence[str]) -> Mapping[str, str]:
        """Apply on the hosts (or the test options); KNOB or KNOB_ERROR, TUNNEL per pair."""
        try:
            if k.kind is KnobKind.IPERF3:
                self._set_iperf3_option(k, value, labels)
                targets: Mapping[str, str] = {}
            else:
                targets = await self.applier.apply(k, value, [self.profile.pair(x)
                                                              for x in labels])
        except AbtuiError as exc:  # the one place a host's or an option's error becomes a refusal
            self.emit(Event.of(events.KnobError(knob=k.name, value=value, message=str(exc))))
            raise exc if isinstance(exc, KnobRefused) else KnobRefused(str(exc)) from exc
        self.emit(Event.of(events.Knob(knob=k.name, value=value, pairs=list(labels),
                                       hosts=self._hosts(k, labels))))
        for label, target in targets.items():
            self.targets[label] = target
            self.emit(Event.of(events.Tunnel(type=value, target=target), pair=label))
        return targets

    def _hosts(self, knob: Knob, labels: Sequence[str]) -> list[str]:
        return list(dict.fromkeys(self.profile.pair(label).host(role)
                                  for label in labels for role in knob.scope.roles))

    def _set_iperf3_option(self, knob: Knob, value: str, labels: Sequence[str]) -> None:
        """An iperf3 knob's key names a test option (parallel, reverse, congestion, ...);
        BadInput (which `_apply` reports as the refusal) when the value does not fit."""
        from abtui.profile.knobs import iperf3_setting

        key, converted = iperf3_setting(knob, value)
        for label in labels:
            options_for(self.profile.test, self.profile.pair(label),
                        {**self.live_options[label], key: converted})
        for label in labels:
            self.live_options[label][key] = converted

    def _settings_changed(self, labels: Sequence[str]) -> None:
        for label in labels:
            self._settings[label] += 1

    async def _restart_pairs(self, labels: Sequence[str], since: float) -> None:
        """End the pairs' current runs, counted nowhere after `since` (one released while
        the change was made may have either setting); `_follow` (continuous) or `_stream`
        (a plan's step) start new ones right away."""
        running = [self._runs[label] for label in labels if label in self._runs]
        for run in running:
            if run.retired_at is None:
                run.retired_at = since
        await asyncio.gather(*(run.stop() for run in running), return_exceptions=True)

    # ---- plan ---------------------------------------------------------------------------
    async def _plan_loop(self, given: Sequence[PlanStep] | None = None) -> None:
        seed = random.SystemRandom().randrange(2**31)
        steps = list(given) if given is not None else expand(self.profile, seed)
        if given is None and self.profile.plan.shuffle:
            used = self.profile.plan.seed if self.profile.plan.seed is not None else seed
            self.emit(Event.of(events.Mark(text=f"plan order: shuffled, seed {used}")))
        labels = [p.label for p in self.profile.pairs]
        started = time.monotonic()
        self.emit(Event.of(events.Progress(done=0, total=len(steps), eta_s=None)))
        for done, step in enumerate(steps, 1):
            if self._stopping:
                return
            if await self._apply_step(step):
                runs = await self._start_group(labels, self._seconds(plan=True))
                await asyncio.gather(*(self._stream(r) for r in runs))
            elapsed = time.monotonic() - started
            eta = elapsed / done * (len(steps) - done)
            self.emit(Event.of(events.Progress(done=done, total=len(steps),
                                               eta_s=round(eta, 1))))
            if done < len(steps) and not self._stopping:
                await asyncio.sleep(self.profile.plan.pause)

    async def _apply_step(self, step: PlanStep) -> bool:
        """Put every pair in the step's configuration; False (and an error) when refused."""
        for name, value in step.config.items():
            if name == DIRECTION and name not in {k.name for k in self.profile.knobs}:
                self._set_direction(value)
                continue
            k = self._knob(name)
            labels = list(k.pairs) or list(self.phases)
            if all(self.phases[x].config.get(name) == value for x in labels):
                continue
            try:
                await self.set_knob(name, value, labels)
            except KnobRefused as exc:
                self.emit(Event.of(events.Error(
                    message=f"plan step {step.index + 1} ({_describe(step.config)}) "
                            f"skipped: {exc}")))
                self.failed_runs += 1
                return False
        return True

    def _set_direction(self, value: str) -> None:
        t = now()
        for label, phases in self.phases.items():
            self.live_options[label].update(DIRECTION_OPTIONS[value])
            if phases.config.get(DIRECTION) != value:
                closed = phases.commit_change(t, t, {DIRECTION: value})
                if closed is not None:
                    self.emit(closed)

    # ---- the rest -----------------------------------------------------------------------
    async def mark(self, text: str) -> None:
        self.emit(Event.of(events.Mark(text=text)))

    def _add_orphan(self, link: HostLink, pgid: int) -> None:
        self._orphans.append((link, pgid))

    async def _end_orphans(self, link: HostLink) -> None:
        mine = [o for o in self._orphans if o[0] is link]
        self._orphans = [o for o in self._orphans if o[0] is not link]
        for _, pgid in mine:
            with contextlib.suppress(RemoteError):
                await link.kill_group(pgid)
                if self.journal is not None:
                    self.journal.forget_pgid(link.alias, pgid)

    async def shutdown(self, reason: str = "shutdown") -> None:
        await self.stop()
        try:
            await self.applier.restore()
        finally:
            for link in {o[0] for o in self._orphans}:
                if link.state is LinkState.CONNECTED:
                    await self._end_orphans(link)
            await asyncio.gather(*(link.close() for link in self.links.values()),
                                 return_exceptions=True)
            pending = getattr(self.applier, "failures", [])
            for line in pending:
                self.emit(Event.of(events.Error(message=line)))
            if self.journal is not None:  # kept when something is left for `abtui recover`
                if self._orphans or pending:
                    self.journal.close()
                else:
                    self.journal.finish()
            self.emit(Event.of(events.SessionEnd(reason=reason)))


def _jsonable(options: dict[str, Any]) -> dict[str, Any]:
    return {k: list(v) if isinstance(v, tuple) else v for k, v in options.items()}


def _describe(config: Mapping[str, str]) -> str:
    return ", ".join(f"{k}={v}" for k, v in config.items()) or "no knobs"
