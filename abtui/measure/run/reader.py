"""A run's interval reader: iperf3's output turned into INTERVAL events as it arrives.

The client's lines are always read; the server's too when they measure the pair (UDP the
client sends, see run.sides) or carry the sender's CPU line (-R in text mode). The reader
owns both parsers and tells a stalled stream (no interval, or no data moved, for
STALL_INTERVALS intervals) from one that ended. A part of a run (abtui.measure.run.pair.PairRun).
"""

from __future__ import annotations

import asyncio
import time
from typing import TYPE_CHECKING

from abtui.core import events
from abtui.core.events import Event
from abtui.core.model import Interval
from abtui.parse.iperf3.sides import measured, reads_server
from abtui.remote.lines import OutputLines

if TYPE_CHECKING:  # types only: the objects are handed in by their owner
    from abtui.measure.ports import IperfOutcome, IperfParser
    from abtui.measure.run.context import RunContext

# Time allowed for the connection set-up before the first interval is due.
CONNECT_ALLOWANCE = 3.0
STALL_INTERVALS = 3
# The most wall-clock seconds one second of a run's own clock may take before its stall window
# stops widening: a guest on an instruction-counted clock (abtui.core.clock) counts its
# intervals in guest seconds, which run slower than the machine's under load.
MAX_PACE = 10.0
# How long the server may take, once the client is done, to print its last intervals and exit.
SERVER_END_TIMEOUT = 3.0
# How long a stopped run waits for its client's output to end (a link that hangs may never
# close the channel); then cleanup ends what is left.
STOP_WAIT_S = 5.0
# The raw sink's run key for the server's lines: "<run id>/server".
SERVER_SUFFIX = "/server"


class IntervalReader:
    """The client's (and server's) iperf3 lines of one run read; see the module docstring."""

    def __init__(self, ctx: RunContext) -> None:
        self.ctx = ctx
        # a count, not a list: a long run's intervals live in the session file, not here
        self.count = 0
        self.stalled = False
        self.empty_streak = 0  # intervals in a row that carried no data
        # wall-clock seconds per second of the run's own clock so far (1 on a host whose
        # clock is the machine's; more on a guest on an instruction-counted clock): the stall
        # window is STALL_INTERVALS of the run's intervals, at the pace they really come
        self.pace = 1.0
        # (monotonic, the run's clock) where the pace is counted from: the client's start at
        # 0 s, again at the first interval after iperf3 restarts its clock (after `-O`)
        self._since: tuple[float, float] | None = None
        self._last_end = 0.0
        self._client_parser = ctx.parsers.iperf("json-stream" if ctx.spec.json_stream
                                                else "text")
        self._server_parser: IperfParser | None = None
        self._server_task: asyncio.Task[None] | None = None

    def follow_server(self, lines: OutputLines | None) -> None:
        """Read the server's lines too, when they are kept (see run.sides)."""
        if lines is not None and lines.keep:
            self._server_task = asyncio.get_running_loop().create_task(self._server_loop(lines))

    async def read_client(self, lines: OutputLines) -> bool:
        """The client's lines until its output ends, the stream stalls (`stalled`) or, once
        told to stop, STOP_WAIT_S pass; True in that last case (the client must be ended)."""
        opts = self.ctx.spec.options
        stall_s = STALL_INTERVALS * opts.interval
        self._since = (time.monotonic(), 0.0)
        deadline = time.monotonic() + stall_s + opts.omit + CONNECT_ALLOWANCE
        stop_wait = False  # stopped, and now waiting (bounded) for the client's output to end
        while True:
            try:
                line = await lines.get(max(0.0, deadline - time.monotonic()))
            except TimeoutError:
                if self.ctx.stopping and not stop_wait:
                    stop_wait = True  # (never spin on a deadline already passed)
                    deadline = time.monotonic() + STOP_WAIT_S
                    continue
                if self.ctx.stopping:
                    return True
                self.stalled = True
                return False
            if line is None:
                return False
            self.ctx.owner.raw_line(self.ctx.spec.run_id, line)
            got = self._client_parser.feed(line)
            for interval in got:
                self._take(interval, lines.arrived)
            if got:
                deadline = time.monotonic() + stall_s * self._paced(max(i.end for i in got))
            if self.empty_streak >= STALL_INTERVALS and not self.ctx.stopping:
                self.stalled = True
                return False

    def _paced(self, end: float) -> float:
        """The pace after an interval that ended at `end` s of the run's own clock arrived:
        the wall-clock seconds since the client started (or iperf3 restarted its clock) over
        the run's seconds since then, at least 1, at most MAX_PACE."""
        now = time.monotonic()
        if self._since is None or end < self._last_end:  # iperf3 restarted its clock
            self._since = (now, end)
        elif end > self._since[1]:
            ratio = (now - self._since[0]) / (end - self._since[1])
            self.pace = min(MAX_PACE, max(1.0, ratio))
        self._last_end = end
        return self.pace

    async def finish(self) -> IperfOutcome:
        """Once the client is done: the server's last intervals awaited (bounded), the client's
        parser's outcome."""
        if self._server_task is not None:
            await asyncio.wait({self._server_task}, timeout=SERVER_END_TIMEOUT)
            self._server_task.cancel()
        return self._client_parser.finish()

    def server_outcome(self) -> IperfOutcome | None:
        """The server's parser's outcome, when its lines were read (for the CPU line it has)."""
        if self._server_parser is None:
            return None
        return self._server_parser.finish()

    def cancel(self) -> None:
        if self._server_task is not None and not self._server_task.done():
            self._server_task.cancel()

    def _take(self, interval: Interval, arrived: float | None) -> None:
        """An interval iperf3 printed (its line came at `arrived`, perf_counter): an event
        when it measures the pair (see `measured`)."""
        if not measured(interval, self.ctx.spec.options):
            return
        self.count += 1
        received = time.time()
        phase, straddles = self.ctx.phase(received, interval.end - interval.start)
        if self.ctx.retired_at is not None and received > self.ctx.retired_at:
            straddles = True
        payload = events.IntervalMeasured(
            run=self.ctx.spec.run_id, phase=phase, **interval.to_json(), straddles=straddles,
            jitter_ms=interval.jitter_ms, lost_packets=interval.lost_packets,
            packets=interval.packets, direction=interval.direction)
        # the event straight onto the engine's bus (RunOwner.emit: no relay on the way)
        self.ctx.owner.emit(Event.of(payload, pair=self.ctx.label, arrived=arrived))
        # iperf3 goes on printing empty intervals when no data moves (a link down)
        empty = interval.bytes == 0 and not interval.omitted
        self.empty_streak = self.empty_streak + 1 if empty else 0

    async def _server_loop(self, lines: OutputLines) -> None:
        """The server's lines (UDP the client sends): what arrived, interval by interval."""
        # the server is always run in text mode; its intervals count for UDP the client
        # sends, its CPU line for -R (reads_server_cpu)
        parser = self._server_parser = self.ctx.parsers.iperf("text")
        take = reads_server(self.ctx.spec.options)
        while (line := await lines.get(None)) is not None:
            self.ctx.owner.raw_line(self.ctx.spec.run_id + SERVER_SUFFIX, line)
            for interval in parser.feed(line):
                if take:
                    self._take(interval, lines.arrived)

