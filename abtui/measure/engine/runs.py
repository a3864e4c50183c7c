"""The engine's run scheduler, the only owner of runs: each pair's run prepared (server
listening, client armed), all of a group released together (RUN_START, the start skew), and
streamed to their end.

A run prepared before a restarting knob changed its pair is prepared again (`_fresh`); a busy
server is retried on another port; at a new stretch (`restart(..., clear=True)`) no run of its
pairs is released before their hosts have cleared what the ended connections left. What runs
when (continuous mode, a plan's steps) is abtui.measure.engine.front's; one run's processes
and output are abtui.measure.run.pair'.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable, Mapping, Sequence
from dataclasses import asdict
from typing import TYPE_CHECKING, Any

from abtui.core import events
from abtui.core.controller import Mode
from abtui.core.errors import RunFailed
from abtui.core.events import Event
from abtui.core.model import LinkState, Pair, Profile
from abtui.measure.engine.carryover import Carryover
from abtui.measure.ports import Emit, ParserFactory, PingParserFactory
from abtui.measure.run.context import ProfileSpec, RunParsers, RunSpec
from abtui.measure.run.traffic import counters_for
from abtui.measure.tasks import Tasks
from abtui.remote.cork import corked
from abtui.remote.iperf_cmd import JSON_STREAM_SINCE, install_hint
from abtui.remote.link import HostLink
from abtui.remote.profiling import profile_loop_command
from abtui.remote.uring import Uncorker

if TYPE_CHECKING:  # types only: the objects are handed in by their owner
    from abtui.measure.engine.hosts import HostPool
    from abtui.measure.engine.verify import HostGate
    from abtui.measure.phase_book import PhaseBook
    from abtui.measure.run.context import RunOwner
    from abtui.measure.run.pair import PairRun

    NewRun = Callable[[RunSpec, HostLink, HostLink, RunOwner, RunParsers], PairRun]

BUSY_RETRIES = 3
# How long a new stretch waits for its pairs' next runs to be released (continuous mode): the
# window an alternation drops after a boundary then covers their set-up and ramp
NEXT_RUN_WAIT_S = 10.0
# A pause between the last pair armed and the release, so no host is still busy arming.
SETTLE_S = 0.05



class RunIds:
    """Runs numbered per pair (`A-1`, `A-2`, `B-1`): one count across the pairs made pair
    B's first run `B-2`."""

    def __init__(self) -> None:
        self._counts: dict[str, int] = {}

    def next(self, label: str) -> str:
        self._counts[label] = self._counts.get(label, 0) + 1
        return f"{label}-{self._counts[label]}"

class RunScheduler:
    """Run groups prepared, released and streamed, and the owner every run reports to
    (abtui.measure.run.context.RunOwner): its events go straight to the engine's `emit`,
    its phase to the phase book's `phase_for`; see the module docstring."""

    def __init__(self, profile: Profile, book: PhaseBook, pool: HostPool, gate: HostGate,
                 emit: Emit, tasks: Tasks, *, parser_factory: ParserFactory,
                 ping_parser_factory: PingParserFactory | None,
                 new_run: NewRun, raw_sink: Callable[[str, str], None] | None = None) -> None:
        self.profile = profile
        self._make_run = new_run  # a run is made by its own class, handed in by the engine
        self._book, self._pool, self._gate = book, pool, gate  # what a run is armed from
        self._emit, self._tasks = emit, tasks
        # what a run asks its owner, answered by the parts that know (no relay in between)
        self.emit = emit
        self.phase_for = book.phase_for
        self.raw_line: Callable[[str, str], None] = raw_sink or _ignore
        self.parser_factory = parser_factory
        self.ping_parser_factory = ping_parser_factory

        self._runs: dict[str, PairRun] = {}
        self._run_ids = RunIds()
        self.skews: list[float] = []
        self._uncorker: Uncorker | None = None  # made at the first release of several runs
        self._stopping = False  # the engine stopped: nothing more is released
        self.mode: Mode | None = None
        # pair -> set once its hosts forgot what the last stretch's connections left
        self._clearing: dict[str, asyncio.Future[None]] = {}
        # pair -> new stretches waiting for its next run's release (continuous mode)
        self._next: dict[str, list[asyncio.Future[None]]] = {}
        self.carryover = Carryover(pool, emit)

    @property
    def stopping(self) -> bool:
        """Whether the engine stopped (nothing more is released) since it last began."""
        return self._stopping

    def begin(self, mode: Mode) -> None:
        """The engine starts measuring in `mode`: runs are released again."""
        self._stopping, self.mode = False, mode

    def stop_releasing(self) -> None:
        """The engine stops: no run is released from now on (those being prepared end)."""
        self._stopping = True

    def running(self, label: str) -> PairRun | None:
        """The pair's run released and not yet ended, if any."""
        return self._runs.get(label)

    def close(self) -> None:
        """What the releases held on this machine (their ring) let go; made again if needed."""
        if self._uncorker is not None:
            self._uncorker.close()
            self._uncorker = None

    async def stop_all(self) -> None:
        """Stop every run going on."""
        await asyncio.gather(*(run.stop() for run in list(self._runs.values())),
                             return_exceptions=True)

    def interrupt(self, link: HostLink) -> None:
        """A link was lost: the runs that use it end now (a pair's run cannot go on
        half-watched)."""
        for run in list(self._runs.values()):
            if link in (run.sender, run.receiver):
                self._tasks.spawn(run.interrupt(link.alias))

    async def restart(self, labels: Sequence[str], since: float, clear: bool = False) -> None:
        """End the pairs' current runs, counted nowhere after `since` (one released while
        the change was made may have either setting); the engine's continuous loop or
        `stream` (a plan's step) start new ones right away. `clear` (a new stretch): no run
        of these pairs is released until their hosts have forgotten what the ended
        connections left to the next one (abtui.measure.engine.carryover), and in continuous
        mode it returns once the pairs' next runs are released (at most NEXT_RUN_WAIT_S), so
        a stretch's clock, and the window dropped at its start, begin with its runs whatever
        the value."""
        running = [self._runs[label] for label in labels if label in self._runs]
        for run in running:
            if run.retired_at is None:
                run.retire(since)
        loop = asyncio.get_running_loop()
        held = loop.create_future() if clear else None
        nexts: list[asyncio.Future[None]] = []
        if held is not None:
            for label in labels:
                self._clearing[label] = held
            if self.mode == "continuous" and not self.stopping:
                for run in running:  # the continuous loop releases each pair's next run
                    nexts.append(loop.create_future())
                    self._next.setdefault(run.label, []).append(nexts[-1])
        try:
            await asyncio.gather(*(run.stop() for run in running), return_exceptions=True)
            if held is not None:
                await self.carryover.clear([self.profile.pair(x) for x in labels])
        finally:
            if held is not None:
                held.set_result(None)
                for label in labels:
                    if self._clearing.get(label) is held:
                        del self._clearing[label]
        if nexts:  # a new stretch begins once its runs do (a pair that cannot: bounded)
            await asyncio.wait(nexts, timeout=NEXT_RUN_WAIT_S)
            for waiting in nexts:
                waiting.cancel()
            for label in labels:
                left = [f for f in self._next.get(label, []) if not f.done()]
                if left:
                    self._next[label] = left
                else:
                    self._next.pop(label, None)

    def _new_run(self, label: str, seconds: int, port: int | None,
                 group: Sequence[str] = ()) -> PairRun:
        pair = self.profile.pair(label)
        opts = self._book.options(pair)
        run_id = self._run_ids.next(label)
        for alias in (pair.sender, pair.receiver):
            link = self._pool.links.get(alias)
            if link is None or link.state is not LinkState.CONNECTED:
                raise RunFailed(f"{alias} is not connected"
                                f"{' (' + str(link.state) + ')' if link else ''}", run_id)
        for alias in (pair.sender, pair.receiver):
            if alias in self._gate:
                raise RunFailed(f"{alias} reconnected, but its knobs could not be read again "
                                "yet: no run is labelled with values it may not have", run_id)
        for alias in (pair.sender, pair.receiver):
            if self._pool.iperf_versions.get((alias, opts.iperf3)) is None:
                raise RunFailed(f"{alias}: iperf3 is not installed (`{opts.iperf3}` not "
                                f"found): {install_hint(opts.iperf3)}", run_id)
        sender_version = self._pool.iperf_versions.get((pair.sender, opts.iperf3)) or (0, 0)
        spec = RunSpec(
            run_id=run_id, pair=pair, options=opts, target=self._book.targets[label],
            seconds=seconds, port=port or opts.port, config=dict(self._book.phases[label].config),
            settings=self._book.settings[label],
            json_stream=sender_version >= JSON_STREAM_SINCE, program=opts.iperf3,
            bash=self._pool.has_bash.get(pair.sender, False),
            stdbuf=self._pool.has_stdbuf.get(pair.sender, False),
            receiver_stdbuf=self._pool.has_stdbuf.get(pair.receiver, False),
            watches=[w for w in self.profile.watches if not w.pairs or label in w.pairs],
            cpu_commands={a: self._pool.dialects[a].cpu_times_command
                          for a in (pair.sender, pair.receiver)
                          if opts.host_cpu and a in self._pool.dialects},
            profile_commands=self._profiled(pair, opts.profile_hz, group or (label,)),
            rr=bool(opts.sockperf) and all(self._pool.has_sockperf.get(a, False)
                                           for a in (pair.sender, pair.receiver)),
            counters_for=counters_for(self._pool.dialects.get(pair.sender),
                                      self._book.targets[label]))
        return self._make_run(spec, self._pool.links[pair.sender],
                              self._pool.links[pair.receiver], self,
                              RunParsers(self.parser_factory, self.ping_parser_factory))

    # ---- what a run tells its owner (RunOwner; emit, phase_for and raw_line are above) ----
    def started(self, host: str, pgid: int, what: str) -> None:
        """A process group a run started on `host`, written in the undo journal."""
        if self._pool.journal is not None:
            self._pool.journal.record_pgid(host, pgid, what)

    def ended(self, host: str, pgid: int) -> None:
        if self._pool.journal is not None:
            self._pool.journal.forget_pgid(host, pgid)

    def orphaned(self, link: HostLink, pgid: int) -> None:
        """A process left on a host whose link dropped: ended once the link is back."""
        self._pool.orphans.add(link, pgid)

    def _profiled(self, pair: Pair, hz: int, group: Sequence[str]) -> dict[str, ProfileSpec]:
        """The pair's hosts to profile at `hz` (none at 0): each with perf, but of hosts that
        share one machine's kernel (namespace hosts) only the first, in the profile's order,
        of the pairs that will run beside this one (`group`, started with it, and the pairs
        already running): its profile is the machine's (said so in each window). A pair run
        alone is profiled whatever its place in the profile."""
        if not hz:
            return {}
        shared = self._pool.cpu_shared
        beside = {*group, *self._runs, pair.label}
        first_shared = next((a for p in self.profile.pairs if p.label in beside
                             for a in (p.sender, p.receiver)
                             if a in shared and self._pool.has_perf.get(a)), None)
        out: dict[str, ProfileSpec] = {}
        for alias in (pair.sender, pair.receiver):
            if not self._pool.has_perf.get(alias) or (alias in shared and alias != first_shared):
                continue
            dialect = self._pool.dialects.get(alias)
            out[alias] = ProfileSpec(profile_loop_command(hz), hz, alias in shared,
                                     dialect.counters_loop_command() if dialect else None)
        return out

    def _fail_run(self, label: str, run_id: str, message: str) -> None:
        self._emit(Event.of(events.Error(message=message), pair=label))
        self._emit(Event.of(events.RunEnd(run=run_id, status="error", summary=None, ping=None,
                                         message=message), pair=label))

    async def start_group(self, labels: Sequence[str], seconds: int,
                           ports: Mapping[str, int] | None = None) -> list[PairRun]:
        """Prepare every pair's run, release them all at once, record clocks and skew."""
        return await self.release(await self.prepare(labels, seconds, ports))

    async def prepare(self, labels: Sequence[str], seconds: int,
                       ports: Mapping[str, int] | None = None) -> list[PairRun]:
        """Every pair's server listening and client armed; a pair that fails says why. A
        pair whose host reconnected waits until that host's knobs are read again."""
        await self._gate.wait([h for x in labels for h in
                                   (self.profile.pair(x).sender, self.profile.pair(x).receiver)])
        runs: list[PairRun] = []
        for label in labels:
            try:
                runs.append(self._new_run(label, seconds, (ports or {}).get(label), labels))
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

    async def release(self, ready: list[PairRun]) -> list[PairRun]:
        """Release prepared runs together; RUN_START each, SKEW for the group."""
        if len(ready) > 1:
            await asyncio.sleep(SETTLE_S)
        clearing = {id(f): f for r in ready if (f := self._clearing.get(r.label)) is not None}
        if clearing:  # a new stretch's hosts still forgetting the last one's connections
            await asyncio.wait(list(clearing.values()))
        ready = await self._fresh(ready)
        if self.stopping:  # stopped while these were being prepared: never released
            await asyncio.gather(*(r.cleanup() for r in ready), return_exceptions=True)
            return []
        # one loop iteration, every sender's connection corked: the newlines leave together,
        # all in one system call where the system allows (else a system call apart), never
        # apart by asyncssh's work on the next one
        socks = [s for s in (run.release_sock() for run in ready) if s is not None]
        if len(socks) > 1 and self._uncorker is None:
            self._uncorker = Uncorker()
        with corked(socks, self._uncorker.lift if self._uncorker else None):
            for run in ready:
                run.release()
                self._runs[run.label] = run  # from now on a flip or a stop reaches it
        clocks = await asyncio.gather(*(r.read_clock() for r in ready))
        for run in ready:  # pings need no tight start: kept off the clients' way
            run.release_ping()
        known = [c for c in clocks if c is not None]
        first = min(known) if known else None
        for run, clock in zip(ready, clocks, strict=True):
            self._book.phases[run.label].running(True)
            self._emit(Event.of(events.RunStart(
                run=run.spec.run_id, config=dict(self._book.phases[run.label].config),
                phase=self._book.phases[run.label].phase,
                host_clock=clock,
                skew_ms=None if clock is None or first is None else (clock - first) * 1e3,
                options=_jsonable(asdict(run.spec.options)), target=run.spec.target,
                port=run.spec.port, argv=list(run.processes.client_argv) or None), pair=run.label))
        if len(known) > 1 and first is not None:
            skew = (max(known) - first) * 1e3
            self.skews.append(skew)
            self._emit(Event.of(events.Skew(
                skew_ms=skew, clocks={r.label: c for r, c in zip(ready, clocks, strict=True)})))
        for run in ready:  # a new stretch waiting for its pair's next run: it started
            for waiting in self._next.pop(run.label, []):
                if not waiting.done():
                    waiting.set_result(None)
        if self.stopping:  # stopped while they were being released
            await asyncio.gather(*(r.stop() for r in ready), return_exceptions=True)
        return ready

    async def _fresh(self, ready: list[PairRun]) -> list[PairRun]:
        """The prepared runs, those prepared before a restarting knob changed their pair
        (armed with the old options, target or socket settings) prepared again."""
        for _ in range(BUSY_RETRIES):
            stale = [r for r in ready if r.spec.settings != self._book.settings[r.label]]
            if not stale or self.stopping:
                break
            await asyncio.gather(*(r.cleanup() for r in stale), return_exceptions=True)
            again = await self.prepare([r.label for r in stale], stale[0].spec.seconds)
            ready = [r for r in ready if r not in stale] + again
        return ready

    async def stream(self, run: PairRun) -> PairRun:
        """Stream a run to its end; a busy server is retried on another port, alone. In a
        plan, a run a restarting knob retired is followed by a fresh one of the step's
        length, so the step measures the setting now in force (in continuous mode the
        engine's continuous loop starts the next run)."""
        busy = 0
        while True:
            await run.stream()
            if self.stopping:
                break
            if run.retry_port is not None and busy < BUSY_RETRIES - 1:
                busy += 1
                ports: dict[str, int] | None = {run.label: run.retry_port}
            elif run.retired_at is not None and self.mode == "plan":
                ports = None
            else:
                break
            again = await self.start_group([run.label], run.spec.seconds, ports)
            if not again:
                break
            run = again[0]
        self._runs.pop(run.label, None)
        return run



def _ignore(_run_id: str, _line: str) -> None:
    """No raw lines wanted."""


def _jsonable(options: dict[str, Any]) -> dict[str, Any]:
    return {k: list(v) if isinstance(v, tuple) else v for k, v in options.items()}

