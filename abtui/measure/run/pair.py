"""One run: iperf3 (and ping, and watches) on one pair under one configuration.

A run is prepared (server listening on a free port, client and ping started but armed), then
released by the engine together with the other pairs', then streamed: every interval iperf3
prints becomes an INTERVAL event, every ping reply a PING event, every watch sample a WATCH
event, and the run ends with RUN_END. Whatever happens, every process it started is ended.

PairRun is composed of its parts, each owning its state: the processes (procs), the
samplers (sampling), the interval reader (reader), sharing one RunContext
(context); this module streams and judges (how a run ends: ok, stopped, incomplete,
error); which side's lines count is sides'.
"""

from __future__ import annotations

import asyncio
from dataclasses import asdict

from abtui.core import events
from abtui.core.model import LinkState
from abtui.measure.ports import iperf_error_of, iperf_summary_of
from abtui.measure.run.context import RunContext, RunOwner, RunParsers, RunSpec
from abtui.measure.run.cpu import CpuSampler
from abtui.measure.run.procs import RunProcesses
from abtui.measure.run.profiler import CounterSampler, ProfileSampler
from abtui.measure.run.reader import STALL_INTERVALS, IntervalReader
from abtui.measure.run.rr import RequestResponseLoad
from abtui.measure.run.sampling import RunSamplers
from abtui.measure.run.traffic import LinkCounterSampler
from abtui.parse.iperf3.sides import fill_cpu
from abtui.remote.link import HostLink

__all__ = ["PairRun", "classify_iperf_error"]


def classify_iperf_error(message: str, spec: RunSpec, receiver: str) -> tuple[str, bool]:
    """A clear message for iperf3's error, and whether to retry on another port."""
    low = message.lower()
    where = f"{spec.target} port {spec.port}"
    if "busy" in low:
        return f"the iperf3 server at {where} is busy running another test", True
    if "connection refused" in low:
        return (f"connection refused by {where}: no iperf3 server listens there (is the pair's "
                f"target an address of {receiver}?)"), False
    if "no route to host" in low or "network is unreachable" in low or "timed out" in low:
        return f"cannot reach {where} from the sender: {message}", False
    return f"iperf3: {message}", False


class PairRun:
    """iperf3 server, client, ping and watches for one pair; see the module docstring."""

    def __init__(self, spec: RunSpec, sender: HostLink, receiver: HostLink, owner: RunOwner,
                 parsers: RunParsers) -> None:
        self.context = RunContext(spec, sender, receiver, owner, parsers)
        self.processes = RunProcesses(self.context)
        self.samplers = RunSamplers(self.context, CpuSampler,
                                    profilers=(ProfileSampler, CounterSampler),
                                    link_sampler=LinkCounterSampler)
        self.reader = IntervalReader(self.context)
        self.rr = RequestResponseLoad(self.context)  # sockperf, when the spec asks for it
        self.status = "error"
        self.message = ""
        self.retry_port: int | None = None
        self.finished = asyncio.Event()  # set once the run is over (RUN_END is out)

    # ---- what the engine reads ----------------------------------------------------------
    @property
    def spec(self) -> RunSpec:
        return self.context.spec

    @property
    def sender(self) -> HostLink:
        return self.context.sender

    @property
    def receiver(self) -> HostLink:
        return self.context.receiver

    @property
    def label(self) -> str:
        return self.context.label

    @property
    def retired_at(self) -> float | None:
        """Since when nothing it measures counts (a setting it cannot see was changed)."""
        return self.context.retired_at

    def retire(self, since: float) -> None:
        """Nothing it measures after `since` counts."""
        self.context.retired_at = since

    # ---- its life -----------------------------------------------------------------------
    async def prepare(self) -> None:
        """Server listening, client and ping armed; raises RunFailed with one clear line (a
        request/response load that cannot start is said, and the run goes on without it)."""
        try:  # both to their end before either is judged: nothing started after a cleanup
            got = await asyncio.gather(self.processes.prepare(), self.rr.prepare(),
                                       return_exceptions=True)
        except BaseException:  # cancelled: whatever the load started is ended
            await self.rr.cleanup()
            raise
        failed = [r for r in got if isinstance(r, BaseException)]
        if failed:
            await self.rr.cleanup()
            raise failed[0]
        # the profile loops through perf's start-up before the traffic is released
        try:
            self.samplers.start_profiles()
            await self.samplers.profiles_ready()
        except BaseException:  # cancelled: the loops and the armed processes are ended
            await self.cleanup()
            raise

    def release(self) -> None:
        """Let the armed client go: called for every pair in one loop iteration."""
        self.processes.release()
        self.rr.release()

    def release_sock(self) -> object | None:
        """The socket its release goes out on (abtui.remote.cork.corked holds it)."""
        return self.processes.client_sock()

    def release_ping(self) -> None:
        self.processes.release_ping()

    async def read_clock(self, timeout: float = 5.0) -> float | None:
        """The host's clock at release, printed by the armed command before exec."""
        return await self.processes.read_clock(timeout)

    async def stream(self) -> str:
        """Intervals until iperf3 ends; returns the status put in RUN_END."""
        try:
            return await self._stream()
        finally:
            self.finished.set()

    async def _stream(self) -> str:
        procs = self.processes
        assert procs.client_lines is not None
        self.reader.follow_server(procs.server_lines)
        self.samplers.start(procs.ping, procs.idle_replies, procs.ping_gathered)
        gave_up = False
        try:
            gave_up = await self.reader.read_client(procs.client_lines)
        finally:
            if self.reader.stalled or gave_up:
                await procs.end_client()
            rc = await procs.client_status()
        result = await self.reader.finish()
        self.status, self.message = self._judge(rc, iperf_error_of(result))
        ping = await self.samplers.finish_ping(procs.idle_summary)
        rr = await self.rr.finish()
        await self.cleanup()
        summary = iperf_summary_of(result)
        server = self.reader.server_outcome()
        fill_cpu(summary, iperf_summary_of(server) if server is not None else None)
        reverse = iperf_summary_of(result, reverse=True) if self.status != "error" else None
        self.context.event(events.RunEnd(
            run=self.spec.run_id, status=self.status,
            summary=asdict(summary) if summary and self.status != "error" else None,
            ping=asdict(ping) if ping else None, message=self.message,
            reverse_summary=asdict(reverse) if reverse else None, rr=rr))
        return self.status

    def _judge(self, rc: int | None, error: str | None) -> tuple[str, str]:
        ctx = self.context
        lost = [link.alias for link in (self.sender, self.receiver)
                if link.state is not LinkState.CONNECTED or link.alias in ctx.interrupted]
        n = self.reader.count
        if ctx.stopping and not ctx.interrupted:
            return "stopped", ""
        if lost:
            return "incomplete", (f"link to {', '.join(lost)} lost mid-run; {n} interval(s) "
                                  "received are kept")
        if self.reader.stalled:
            what = "no data moved" if self.reader.empty_streak else "no interval from iperf3"
            window = STALL_INTERVALS * self.spec.options.interval * self.reader.pace
            msg = (f"{what} for {STALL_INTERVALS} intervals ({window:.3g} s"
                   f"{'' if self.reader.pace == 1.0 else ' at the run clock pace'}): "
                   "the stream stalled")
            ctx.event(events.Error(message=msg))
            return "error", msg
        if error:
            msg, busy = classify_iperf_error(error, self.spec, self.receiver.alias)
            if busy:
                self.retry_port = self.spec.port + 1
                msg += f"; retrying on port {self.retry_port}"
            ctx.event(events.Error(message=msg))
            return "error", msg
        if rc != 0:
            msg = f"iperf3 ended with {'a signal' if rc is None else f'status {rc}'}"
            ctx.event(events.Error(message=msg))
            return "error", msg
        return "ok", ""

    # ---- ending -------------------------------------------------------------------------
    async def cleanup(self) -> None:
        """End every process and task this run started, whatever state it is in."""
        await asyncio.gather(self.samplers.stop_samples(), self.processes.cleanup(),
                             self.rr.cleanup())
        self.samplers.cancel()
        self.reader.cancel()

    async def stop(self) -> None:
        """End the run early (the user stopped): its RUN_END says "stopped"."""
        self.context.stopping = True
        await self.processes.end_client()

    async def interrupt(self, alias: str) -> None:
        """End the run because the link to `alias` was lost: its RUN_END says "incomplete"
        (what it measured is kept; the next run starts afresh, never stitched to it)."""
        self.context.interrupted.add(alias)
        self.context.stopping = True
        await self.processes.end_client()
