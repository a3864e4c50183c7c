"""A run's request/response load: sockperf's server on the receiver, its client on the sender
(ping-pong or under-load, TestOptions.sockperf), released with iperf3, interrupted when iperf3
ends, its round trips placed in the run's intervals and phases as RR events.

sockperf prints its observations only when it ends (abtui.parse.sockperf), so a run's RR
events come at its end, before RUN_END, each dated when its interval ended; a run longer than
CHUNK_S (a continuous one) runs sockperf in chunks one after the other, each chunk's events
coming as it ends. An observation is
placed by when it was sent: the release's time (controller clock) plus its time on sockperf's
clock, which starts with the process (exec'd at the release): within ~0.15 s, measured on
this machine. Its first ~2.5 s carry no observation (sockperf's start-up and warm-up).

A part of a run (abtui.measure.run.pair.PairRun); its processes are started and ended through
the run's context (the undo journal knows them); if sockperf cannot start or measures nothing,
the run goes on without it and says so in one line. Its full log is read from its stdout
alone (`--full-log /dev/fd/3 3>&1 1>&2`: its messages on stderr, where its errors are read).
"""

from __future__ import annotations

import asyncio
import contextlib
import shlex
import time
from typing import TYPE_CHECKING, Protocol

from abtui.core import events
from abtui.core.errors import RemoteError
from abtui.core.model import LinkState
from abtui.parse.sockperf import (
    SockperfParser,
    SockperfResult,
    bins,
    parse_sockperf,
    server_outcome,
)
from abtui.remote.iperf_cmd import (
    ARMED_MARK,
    SOCKPERF_PORT_OFFSET,
    armed_command,
    interrupt_group,
    plain,
    sockperf_client_argv,
    sockperf_server_argv,
)
from abtui.remote.lines import OutputLines
from abtui.remote.link import HostLink
from abtui.remote.streams import RemoteProcess

if TYPE_CHECKING:  # types only: the context is handed in by the run
    from abtui.measure.run.context import RunContext

PORT_TRIES = 8
START_TIMEOUT = 5.0
END_TIMEOUT = 10.0  # for sockperf to print its full log once interrupted
CLEANUP_WAIT_S = 3.0  # a run ended otherwise (an error, a stop): its chunk's end waited for
# a run longer than this (a continuous one) runs sockperf in chunks this long, one after the
# other, so its round trips come every chunk rather than at the run's end (each chunk's first
# ~2.5 s, sockperf's start-up and warm-up, measure nothing)
CHUNK_S = 10


class RequestResponseLoad:
    """sockperf's server and client for one run; see the module docstring."""

    def __init__(self, ctx: RunContext) -> None:
        self.ctx = ctx
        self.server: RemoteProcess[HostLink] | None = None
        self.client: RemoteProcess[HostLink] | None = None
        self.client_lines: OutputLines | None = None
        self.released_at: float | None = None
        self.port: int | None = None
        self._reader: asyncio.Task[None] | None = None
        self._finishing = False  # the run ends: the chunk going on is its last
        # what the chunks measured: their count, sockperf's own counts summed, the last result
        self._chunks = 0
        self._totals = {"observations": 0, "sent": 0, "received": 0, "dropped": 0}
        self._last: SockperfResult | None = None
        self._said = False  # a chunk that measured nothing was said (once a run)

    @property
    def chunked(self) -> bool:
        """Whether the run is long enough to run sockperf in chunks (CHUNK_S)."""
        seconds = self.ctx.spec.seconds
        return seconds <= 0 or seconds > CHUNK_S

    def _argv(self) -> list[str]:
        spec = self.ctx.spec
        assert self.port is not None
        if self.chunked:
            return sockperf_client_argv(spec.options, spec.target, self.port, CHUNK_S, spare=0)
        return sockperf_client_argv(spec.options, spec.target, self.port, spec.seconds)

    @property
    def wanted(self) -> bool:
        return self.ctx.spec.rr

    async def prepare(self) -> None:
        """Server listening, client armed; a failure is said once and the run goes on."""
        if not self.wanted:
            return
        try:
            await self._start_server()
            await self._arm_client()
        except (RemoteError, _NotStarted) as exc:
            self.ctx.event(events.Error(message=f"sockperf: {exc}; no request/response "
                                                "latency in this run"))
            await self.cleanup()

    async def _start_server(self) -> None:
        spec, receiver = self.ctx.spec, self.ctx.receiver
        port = spec.port + SOCKPERF_PORT_OFFSET
        for _ in range(PORT_TRIES):
            argv = sockperf_server_argv(port, spec.options.sockperf_tcp)
            proc = await self.ctx.start_process(receiver, plain(argv) + " 2>&1",
                                                "sockperf server")
            lines = OutputLines(proc)
            said: list[str] = []
            deadline = time.monotonic() + START_TIMEOUT
            outcome: str | None = "it did not report listening in time"
            while time.monotonic() < deadline:
                try:
                    line = await lines.get(max(0.0, deadline - time.monotonic()))
                except TimeoutError:
                    break
                if line is None:
                    outcome = server_outcome(said)
                    break
                said.append(line)
                outcome = server_outcome(said)
                if outcome is None:
                    break
            if outcome is None:
                lines.keep = False  # what it prints from now on is not read
                self.server, self.port = proc, port
                return
            lines.task.cancel()
            await self.ctx.end_process(proc)
            if "already in use" not in outcome:
                raise _NotStarted(f"{receiver.alias}: the server did not start: {outcome}")
            port += 1
        raise _NotStarted(f"{receiver.alias}: no free port for the server")

    async def _arm_client(self) -> None:
        spec = self.ctx.spec
        command = armed_command(_client(self._argv()), spec.bash)
        self.client = await self.ctx.start_process(self.ctx.sender, command,
                                                   "sockperf client")
        self.client_lines = OutputLines(self.client)
        try:
            line = await self.client_lines.get(START_TIMEOUT)
        except TimeoutError:
            line = None
        if line != ARMED_MARK:
            raise _NotStarted(f"{self.ctx.sender.alias}: the client could not be armed")

    def release(self) -> None:
        """Let the armed client go (with iperf3's): its clock starts now."""
        if self.client is None or self.client_lines is None:
            return
        with contextlib.suppress(Exception):
            self.client.write("\n")
            self.released_at = time.time()
            self._reader = asyncio.get_running_loop().create_task(self._follow())

    async def _follow(self) -> None:
        """Each chunk's output read to its end and its round trips emitted; the next chunk
        started (a chunked run) until the run ends."""
        client, lines, anchor = self.client, self.client_lines, self.released_at
        clock = True  # the armed client prints the host's clock before exec
        while client is not None and lines is not None and anchor is not None:
            result = await _read(lines, clock)
            self._take(result, anchor, client)
            await self.ctx.end_process(client)  # (it ended: its group struck off)
            if self._finishing or not self.chunked:
                return
            anchor, clock = time.time(), False
            client = await self.ctx.start_process(self.ctx.sender, _client(self._argv()),
                                                  "sockperf client")
            lines = OutputLines(client)
            self.client, self.client_lines = client, lines
            if self._finishing:  # the run ended while it started
                await self._interrupt(client)

    def _take(self, result: SockperfResult, anchor: float,
              client: RemoteProcess[HostLink]) -> None:
        """One chunk's round trips as RR events (sent at `anchor` + their time), and its
        counts into the run's."""
        if not result.observations:
            said = parse_sockperf(client.stderr).error or result.error
            # a chunk the run's end interrupted in its start-up measured nothing, and says
            # nothing unless the whole run measured nothing (finish)
            if not self._said and (said or not self._finishing):
                self._said = True
                self.ctx.event(events.Error(
                    message=f"sockperf: {said or 'no round trip measured'}; no "
                            "request/response latency from it"))
            return
        assert self.released_at is not None
        for payload, t in interval_events(result, self.ctx.spec.run_id, self.released_at,
                                          self.ctx.spec.options.interval, self.ctx,
                                          anchor=anchor):
            self.ctx.event(payload, t=t)
        self._chunks += 1
        self._last = result
        for key, value in (("observations", result.total), ("sent", result.sent),
                           ("received", result.received), ("dropped", result.dropped)):
            self._totals[key] += value or 0

    async def _interrupt(self, client: RemoteProcess[HostLink] | None) -> None:
        """SIGINT to a client's group: sockperf prints its observations and ends."""
        if client is not None and client.pgid is not None and \
                self.ctx.sender.state is LinkState.CONNECTED:
            with contextlib.suppress(RemoteError):
                await self.ctx.sender.run(interrupt_group(client.pgid))

    async def finish(self) -> dict[str, object] | None:
        """Interrupt the chunk going on (it prints its observations), its RR events out;
        sockperf's own summary for RUN_END (a chunked run's: its counts summed, its
        percentiles in the RR events), None when it measured nothing."""
        if self._reader is None or self.released_at is None:
            return None
        self._finishing = True
        await self._interrupt(self.client)
        try:
            await asyncio.wait_for(self._reader, END_TIMEOUT)
        except (TimeoutError, Exception):
            return None
        last = self._last
        if last is None:
            if not self._said:
                self._said = True
                self.ctx.event(events.Error(message="sockperf: no round trip measured in this "
                                                    "run (it ended within sockperf's start-up)"))
            return None
        own = last if self._chunks == 1 else SockperfResult()
        return {"avg_ms": own.avg_ms, "stddev_ms": own.stddev_ms, "min_ms": own.min_ms,
                "max_ms": own.max_ms, "percentiles_ms": dict(own.percentiles_ms),
                **self._totals, "chunks": self._chunks}

    async def cleanup(self) -> None:
        """End both processes, whatever state the load is in."""
        self._finishing = True
        if self._reader is not None and not self._reader.done():
            # the chunk going on ends first (a reader cancelled while it starts the next one
            # would lose that one's handle); bounded, then cancelled
            await self._interrupt(self.client)
            with contextlib.suppress(TimeoutError, Exception):
                await asyncio.wait_for(asyncio.shield(self._reader), CLEANUP_WAIT_S)
            self._reader.cancel()
        procs = [p for p in (self.client, self.server) if p is not None]
        await asyncio.gather(*(self.ctx.end_process(p) for p in procs),
                             return_exceptions=True)
        if self.client_lines is not None:
            self.client_lines.task.cancel()


class _NotStarted(Exception):
    """sockperf could not be started (said in one line; the run goes on)."""


def _client(argv: list[str]) -> str:
    """The client's command: its full log (with its summary) alone on stdout, its messages on
    stderr (two stdio buffers on one pipe would cut each other's lines)."""
    return f"LC_ALL=C exec {shlex.join(argv)} 3>&1 1>&2"


async def _read(lines: OutputLines, clock: bool) -> SockperfResult:
    """A client's output to its end, parsed; `clock`: its first line is the host's clock."""
    parser = SockperfParser()
    while True:
        line = await lines.get(None)
        if line is None:
            return parser.finish()
        if clock:
            clock = False
            continue
        parser.feed(line)


class Placer(Protocol):
    """What interval_events asks of a run (its RunContext): an observation's phase, and
    since when nothing counts."""

    @property
    def retired_at(self) -> float | None: ...

    def phase(self, received: float, duration: float) -> tuple[int, bool]: ...


def interval_events(result: SockperfResult, run_id: events.RunId, released_at: float,
                    interval: float, ctx: Placer, anchor: float | None = None
                    ) -> list[tuple[events.RequestResponse, float]]:
    """The observations as RR payloads, one per (interval of the run, phase), each with the
    time its interval ended; observations after the run was retired are left out. `anchor`:
    when this client started (a later chunk's; None: at the release)."""
    groups: dict[tuple[int, int], list[float]] = {}
    retired = ctx.retired_at
    start = released_at if anchor is None else anchor
    for tx, rtt in result.observations:
        when = start + tx
        if retired is not None and when >= retired:
            continue
        phase, _ = ctx.phase(when, 0.0)
        groups.setdefault((int((when - released_at) // interval), phase), []).append(rtt)
    from abtui.reports.latency import of_values  # numpy: not at the console's start

    out = []
    for (k, phase), values in sorted(groups.items()):
        lat = of_values(values)
        p = lat.percentiles
        out.append((events.RequestResponse(
            run=run_id, phase=phase, start=round(k * interval, 6),
            end=round((k + 1) * interval, 6), n=lat.n, avg_ms=lat.avg, p50_ms=p.get("p50"),
            p90_ms=p.get("p90"), p99_ms=p.get("p99"), p999_ms=p.get("p99.9"),
            max_ms=lat.max, bins=bins(values)), released_at + (k + 1) * interval))
    return out

