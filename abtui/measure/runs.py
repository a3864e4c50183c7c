"""One run: iperf3 (and ping, and watches) on one pair under one configuration.

A run is prepared (server listening on a free port, client and ping started but armed), then
released by the engine together with the other pairs', then streamed: every interval iperf3
prints becomes an INTERVAL event, every ping reply a PING event, every watch sample a WATCH
event, and the run ends with RUN_END. Whatever happens, every process it started is ended.

PairRun is this module's streaming and judging (how a run ends: ok, stopped, incomplete,
error) over its parts: the processes (run_procs), the samplers (run_sampling), the state they
share (run_base); which side's lines count is run_sides'.
"""

from __future__ import annotations

import asyncio
import time
from dataclasses import asdict

from abtui.core import events
from abtui.core.events import Event
from abtui.core.model import Interval, LinkState
from abtui.measure.run_base import RunSpec
from abtui.measure.run_procs import RunProcesses
from abtui.measure.run_sampling import RunSampling
from abtui.measure.run_sides import fill_cpu, measured, reads_server
from abtui.measure.seams import iperf_error_of, iperf_summary_of

# Time allowed for the connection set-up before the first interval is due.
CONNECT_ALLOWANCE = 3.0
STALL_INTERVALS = 3
# How long the server may take, once the client is done, to print its last intervals and exit.
SERVER_END_TIMEOUT = 3.0
# How long a stopped run waits for its client's output to end (a link that hangs may never
# close the channel); then cleanup ends what is left.
STOP_WAIT_S = 5.0
# The raw sink's run key for the server's lines: "<run id>/server".
SERVER_SUFFIX = "/server"


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


class PairRun(RunProcesses, RunSampling):
    """iperf3 server, client, ping and watches for one pair; see the module docstring."""

    # ---- streaming ----------------------------------------------------------------------
    async def stream(self) -> str:
        """Intervals until iperf3 ends; returns the status put in RUN_END."""
        try:
            return await self._stream_lines()
        finally:
            self.finished.set()

    async def _stream_lines(self) -> str:
        assert self._client_lines is not None
        parser = self.hooks.parser_factory("json-stream" if self.spec.json_stream else "text")
        if self._ping is not None:
            self._ping_task = asyncio.get_running_loop().create_task(self._ping_loop())
        if self._server_lines is not None and self._server_lines.keep:
            self._server_task = asyncio.get_running_loop().create_task(self._server_loop())
        for reply in self._idle_replies:
            self._event(events.Ping(run=self.spec.run_id, phase=self.hooks.phase_for(
                self.label, time.time(), 0.0)[0], seq=reply.seq, rtt_ms=reply.rtt_ms))
        self._start_watches()
        self._start_cpu()
        opts = self.spec.options
        stall_s = STALL_INTERVALS * opts.interval
        deadline = time.monotonic() + stall_s + opts.omit + CONNECT_ALLOWANCE
        stop_wait = False  # stopped, and now waiting (bounded) for the client's output to end
        gave_up = False
        try:
            while True:
                try:
                    line = await self._client_lines.get(max(0.0, deadline - time.monotonic()))
                except TimeoutError:
                    if self._stopping and not stop_wait:
                        stop_wait = True  # (never spin on a deadline already passed)
                        deadline = time.monotonic() + STOP_WAIT_S
                        continue
                    if self._stopping:
                        gave_up = True
                        break
                    self._stalled = True
                    break
                if line is None:
                    break
                if self.hooks.raw_sink is not None:
                    self.hooks.raw_sink(self.spec.run_id, line)
                got = parser.feed(line)
                for interval in got:
                    self._take(interval, self._client_lines.arrived)
                if got:
                    deadline = time.monotonic() + stall_s
                if self._empty_streak >= STALL_INTERVALS and not self._stopping:
                    self._stalled = True
                    break
        finally:
            if self._stalled or gave_up:
                await self._end_client()
            rc = await self._client.wait(timeout=5.0) if self._client else None
        await self._finish_server()
        result = parser.finish()
        self.status, self.message = self._judge(rc, iperf_error_of(result))
        ping = await self._finish_ping()
        await self.cleanup()
        summary = iperf_summary_of(result)
        if self._server_parser is not None:
            fill_cpu(summary, iperf_summary_of(self._server_parser.finish()))
        reverse = iperf_summary_of(result, reverse=True) if self.status != "error" else None
        self._event(events.RunEnd(
            run=self.spec.run_id, status=self.status,
            summary=asdict(summary) if summary and self.status != "error" else None,
            ping=asdict(ping) if ping else None, message=self.message,
            reverse_summary=asdict(reverse) if reverse else None))
        return self.status

    def _take(self, interval: Interval, arrived: float | None) -> None:
        """An interval iperf3 printed (its line came at `arrived`, perf_counter): an event
        when it measures the pair (see `measured`)."""
        if not measured(interval, self.spec.options):
            return
        self._emit_interval(interval, arrived)
        # iperf3 goes on printing empty intervals when no data moves (a link down)
        empty = interval.bytes == 0 and not interval.omitted
        self._empty_streak = self._empty_streak + 1 if empty else 0

    async def _server_loop(self) -> None:
        """The server's lines (UDP the client sends): what arrived, interval by interval."""
        assert self._server_lines is not None
        # the server is always run in text mode; its intervals count for UDP the client
        # sends, its CPU line for -R (reads_server_cpu)
        parser = self._server_parser = self.hooks.parser_factory("text")
        take = reads_server(self.spec.options)
        while (line := await self._server_lines.get(None)) is not None:
            if self.hooks.raw_sink is not None:
                self.hooks.raw_sink(self.spec.run_id + SERVER_SUFFIX, line)
            for interval in parser.feed(line):
                if take:
                    self._take(interval, self._server_lines.arrived)

    async def _finish_server(self) -> None:
        """Let the server print its last intervals (it exits after its one test); a server
        that does not (a link lost, a stall) is given up on and ended by cleanup."""
        if self._server_task is None:
            return
        await asyncio.wait({self._server_task}, timeout=SERVER_END_TIMEOUT)
        self._server_task.cancel()

    def _emit_interval(self, interval: Interval, arrived: float | None = None) -> None:
        self.interval_count += 1
        received = time.time()
        phase, straddles = self.hooks.phase_for(self.label, received,
                                                interval.end - interval.start)
        if self.retired_at is not None and received > self.retired_at:
            straddles = True
        payload = events.Interval(
            run=self.spec.run_id, phase=phase, **interval.to_json(), straddles=straddles,
            jitter_ms=interval.jitter_ms, lost_packets=interval.lost_packets,
            packets=interval.packets, direction=interval.direction)
        self.hooks.emit(Event.of(payload, pair=self.label, arrived=arrived))

    def _judge(self, rc: int | None, error: str | None) -> tuple[str, str]:
        lost = [link.alias for link in (self.sender, self.receiver)
                if link.state is not LinkState.CONNECTED or link.alias in self._interrupted]
        n = self.interval_count
        if self._stopping and not self._interrupted:
            return "stopped", ""
        if lost:
            return "incomplete", (f"link to {', '.join(lost)} lost mid-run; {n} interval(s) "
                                  "received are kept")
        if self._stalled:
            what = "no data moved" if self._empty_streak else "no interval from iperf3"
            msg = (f"{what} for {STALL_INTERVALS} intervals "
                   f"({STALL_INTERVALS * self.spec.options.interval:g} s): the stream stalled")
            self._event(events.Error(message=msg))
            return "error", msg
        if error:
            msg, busy = classify_iperf_error(error, self.spec, self.receiver.alias)
            if busy:
                self.retry_port = self.spec.port + 1
                msg += f"; retrying on port {self.retry_port}"
            self._event(events.Error(message=msg))
            return "error", msg
        if rc != 0:
            msg = f"iperf3 ended with {'a signal' if rc is None else f'status {rc}'}"
            self._event(events.Error(message=msg))
            return "error", msg
        return "ok", ""

    # ---- ending -------------------------------------------------------------------------
    async def stop(self) -> None:
        """End the run early (the user stopped): its RUN_END says "stopped"."""
        self._stopping = True
        await self._end_client()

    async def interrupt(self, alias: str) -> None:
        """End the run because the link to `alias` was lost: its RUN_END says "incomplete"
        (what it measured is kept; the next run starts afresh, never stitched to it)."""
        self._interrupted.add(alias)
        self._stopping = True
        await self._end_client()
