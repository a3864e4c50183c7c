"""A run's request/response load: sockperf's server on the receiver, its client on the sender
(ping-pong or under-load, TestOptions.sockperf), released with iperf3, interrupted when iperf3
ends, its round trips placed in the run's intervals and phases as RR events.

sockperf prints its observations only when it ends (abtui.parse.sockperf), so a run's RR
events come at its end, before RUN_END, each dated when its interval ended. An observation is
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
from abtui.reports.latency import of_values

if TYPE_CHECKING:  # types only: the context is handed in by the run
    from abtui.measure.run.context import RunContext

PORT_TRIES = 8
START_TIMEOUT = 5.0
END_TIMEOUT = 10.0  # for sockperf to print its full log once interrupted


class RequestResponseLoad:
    """sockperf's server and client for one run; see the module docstring."""

    def __init__(self, ctx: RunContext) -> None:
        self.ctx = ctx
        self.server: RemoteProcess[HostLink] | None = None
        self.client: RemoteProcess[HostLink] | None = None
        self.client_lines: OutputLines | None = None
        self.released_at: float | None = None
        self.port: int | None = None
        self._reader: asyncio.Task[SockperfResult] | None = None

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
        assert self.port is not None
        argv = sockperf_client_argv(spec.options, spec.target, self.port, spec.seconds)
        # its full log (with its summary) alone on stdout, its messages on stderr: two stdio
        # buffers on one pipe would cut each other's lines
        command = armed_command(f"LC_ALL=C exec {shlex.join(argv)} 3>&1 1>&2", spec.bash)
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
            self._reader = asyncio.get_running_loop().create_task(self._read(self.client_lines))

    @staticmethod
    async def _read(lines: OutputLines) -> SockperfResult:
        parser = SockperfParser()
        first = True
        while True:
            line = await lines.get(None)
            if line is None:
                return parser.finish()
            if first:  # the host's clock, printed by the armed command before exec
                first = False
                continue
            parser.feed(line)

    async def finish(self) -> dict[str, object] | None:
        """Interrupt the client (it prints its observations), emit its RR events; its own
        summary for RUN_END, None when it measured nothing."""
        client, reader = self.client, self._reader
        if client is None or reader is None or self.released_at is None:
            return None
        if client.pgid is not None and self.ctx.sender.state is LinkState.CONNECTED:
            with contextlib.suppress(RemoteError):
                await self.ctx.sender.run(interrupt_group(client.pgid))
        try:
            result = await asyncio.wait_for(reader, END_TIMEOUT)
        except (TimeoutError, Exception):
            return None
        if not result.observations:
            said = parse_sockperf(client.stderr).error or result.error
            self.ctx.event(events.Error(
                message=f"sockperf: {said or 'no round trip measured'}; no request/response "
                        "latency in this run"))
            return None
        for payload, t in interval_events(result, self.ctx.spec.run_id, self.released_at,
                                          self.ctx.spec.options.interval, self.ctx):
            self.ctx.event(payload, t=t)
        return {"avg_ms": result.avg_ms, "stddev_ms": result.stddev_ms,
                "min_ms": result.min_ms, "max_ms": result.max_ms,
                "percentiles_ms": dict(result.percentiles_ms), "observations": result.total,
                "sent": result.sent, "received": result.received, "dropped": result.dropped}

    async def cleanup(self) -> None:
        """End both processes, whatever state the load is in."""
        if self._reader is not None and not self._reader.done():
            self._reader.cancel()
        procs = [p for p in (self.client, self.server) if p is not None]
        await asyncio.gather(*(self.ctx.end_process(p) for p in procs),
                             return_exceptions=True)
        if self.client_lines is not None:
            self.client_lines.task.cancel()


class _NotStarted(Exception):
    """sockperf could not be started (said in one line; the run goes on)."""


class Placer(Protocol):
    """What interval_events asks of a run (its RunContext): an observation's phase, and
    since when nothing counts."""

    @property
    def retired_at(self) -> float | None: ...

    def phase(self, received: float, duration: float) -> tuple[int, bool]: ...


def interval_events(result: SockperfResult, run_id: events.RunId, released_at: float,
                    interval: float, ctx: Placer
                    ) -> list[tuple[events.RequestResponse, float]]:
    """The observations as RR payloads, one per (interval of the run, phase), each with the
    time its interval ended; observations after the run was retired are left out."""
    groups: dict[tuple[int, int], list[float]] = {}
    retired = ctx.retired_at
    for tx, rtt in result.observations:
        when = released_at + tx
        if retired is not None and when >= retired:
            continue
        phase, _ = ctx.phase(when, 0.0)
        groups.setdefault((int(tx // interval), phase), []).append(rtt)
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

