"""A run's remote processes: iperf3's server started on a free port, its client and ping
armed, all released together, and every one of them ended whatever happens.

A part of a run (abtui.measure.run.pair.PairRun), owning its processes: the one place that starts
a run's processes on a host and ends them, so the one that tells the undo journal of each and
leaves orphans (a process on a host whose link dropped) to be ended once the link is back.
"""

from __future__ import annotations

import asyncio
import contextlib
import time
from typing import TYPE_CHECKING

from abtui.core.errors import RemoteError, RunFailed
from abtui.core.model import PingReply, PingSummary
from abtui.parse.iperf3.sides import reads_server, reads_server_cpu
from abtui.remote.iperf_cmd import (
    ARMED_MARK,
    SERVER_LISTENING,
    armed,
    armed_command,
    client_argv,
    gathered,
    gathers,
    parse_clock,
    ping_argv,
    plain,
    server_argv,
    server_command,
)
from abtui.remote.lines import OutputLines
from abtui.remote.link import HostLink
from abtui.remote.streams import RemoteProcess

if TYPE_CHECKING:  # types only: the objects are handed in by their owner
    from abtui.measure.run.context import RunContext

PORT_TRIES = 8
SERVER_START_TIMEOUT = 5.0


class RunProcesses:
    """Preparing, releasing and ending a run's processes; see the module docstring."""

    def __init__(self, ctx: RunContext) -> None:
        self.ctx = ctx
        self.spec = ctx.spec
        self.sender = ctx.sender
        self.receiver = ctx.receiver
        # the iperf3 client command as armed, without the stdbuf or shell around it (RUN_START
        # records it: the report's "Test options" print what ran, not a rebuild)
        self.client_argv: list[str] = []
        self.host_clock: float | None = None  # the sender's clock at release
        self.server: RemoteProcess[HostLink] | None = None
        self.server_lines: OutputLines | None = None
        self.client: RemoteProcess[HostLink] | None = None
        self.client_lines: OutputLines | None = None
        self.ping: RemoteProcess[HostLink] | None = None  # armed, for the whole run
        self.ping_gathered = False  # its lines gathered on the host (iperf_cmd.gathered)
        # with a ping count: replies on the idle link before iperf3 starts, and their summary
        self.idle_replies: list[PingReply] = []
        self.idle_summary: PingSummary | None = None

    # ---- preparing ----------------------------------------------------------------------
    async def prepare(self) -> None:
        """Server listening, client and ping armed; raises RunFailed with one clear line."""
        try:
            await asyncio.gather(self._arm_iperf3(), self._arm_ping())
        except (RemoteError, RunFailed):  # the engine reports either by its message
            await self.cleanup()
            raise

    async def _start_server(self) -> None:
        port = self.spec.port
        keep = reads_server(self.spec.options) or reads_server_cpu(self.spec.options,
                                                                   self.spec.json_stream)
        for _ in range(PORT_TRIES):
            argv = server_argv(port, self.spec.program)
            if keep and self.spec.receiver_stdbuf:
                argv = ["stdbuf", "-oL", *argv]
            # what it prints once it listens is not read unless kept: dropped on the host
            proc = await self.ctx.start_process(
                self.receiver, server_command(argv, drain=not keep), "iperf3 server")
            lines = OutputLines(proc)
            outcome = await self._server_outcome(lines, keep)
            if outcome is None:
                self.server, self.server_lines, self.spec.port = proc, lines, port
                return
            await self.ctx.end_process(proc)
            if "address already in use" not in outcome.lower():
                raise RunFailed(f"{self.receiver.alias}: the iperf3 server did not start: "
                                f"{outcome}")
            port += 1
        raise RunFailed(f"{self.receiver.alias}: no free port for the iperf3 server in "
                        f"{self.spec.port}-{port - 1}")

    async def _arm_iperf3(self) -> None:
        await self._start_server()
        argv = client_argv(self.spec.options, self.spec.target, self.spec.port,
                           self.spec.seconds, self.spec.json_stream, self.spec.program)
        self.client_argv = list(argv)
        if self.spec.stdbuf:
            argv = ["stdbuf", "-oL", *argv]
        self.client = await self.ctx.start_process(
            self.sender, armed(argv, self.spec.bash) + " 2>&1", "iperf3 client")
        self.client_lines = OutputLines(self.client)
        await self._await_armed(self.client_lines)

    async def _arm_ping(self) -> None:
        opts = self.spec.options
        if not opts.ping or self.ctx.parsers.ping is None:
            return
        if opts.ping_count > 0:  # on the idle link, before iperf3 starts
            await self._idle_ping()
        else:
            argv = ping_argv(opts, self.spec.target)
            self.ping_gathered = gathers(opts.ping_interval, self.spec.bash)
            command = armed_command(gathered(argv), bash=True) if self.ping_gathered \
                else armed(argv)
            self.ping = await self.ctx.start_process(self.sender, command, "ping")

    async def _idle_ping(self) -> None:
        assert self.ctx.parsers.ping is not None
        opts = self.spec.options
        argv = ping_argv(opts, self.spec.target)
        argv[1:1] = ["-c", str(opts.ping_count)]
        proc = await self.ctx.start_process(self.sender, plain(argv), "ping")
        parser = self.ctx.parsers.ping()
        try:
            async for line in proc.lines():
                self.idle_replies.extend(parser.feed(line))
            await proc.wait(timeout=5.0)
        finally:
            await self.ctx.end_process(proc)
        self.idle_summary = parser.finish().summary

    async def _await_armed(self, lines: OutputLines) -> None:
        try:
            line = await lines.get(SERVER_START_TIMEOUT)
        except TimeoutError:
            line = None
        if line != ARMED_MARK:
            raise RunFailed(f"{self.sender.alias}: the iperf3 client could not be started: "
                            f"{line or self.client.stderr if self.client else ''}")

    @staticmethod
    async def _server_outcome(lines: OutputLines, keep: bool = False) -> str | None:
        """None when the server listens, else what it said before it gave up; with `keep`
        what it prints next stays queued for the run to read."""
        said: list[str] = []
        deadline = time.monotonic() + SERVER_START_TIMEOUT
        while True:
            try:
                line = await lines.get(max(0.0, deadline - time.monotonic()))
            except TimeoutError:
                return "it did not report listening in time"
            if line is None:
                errors = [x for x in said if x.startswith("iperf3: error - ")]
                return (errors or said or ["it exited without a word"])[0].removeprefix(
                    "iperf3: error - ")
            if SERVER_LISTENING.lower() in line.lower():
                lines.keep = keep  # unless kept, what it prints from now on is not read
                return None
            if line.strip("- "):
                said.append(line.strip())

    # ---- releasing ----------------------------------------------------------------------
    def client_sock(self) -> object | None:
        """The socket the release goes out on (abtui.remote.cork.corked holds it)."""
        return self.client.link.sock if self.client is not None else None

    def release(self) -> None:
        """Let the armed client go: called for every pair in one loop iteration."""
        if self.client is not None:
            with contextlib.suppress(Exception):
                self.client.write("\n")

    def release_ping(self) -> None:
        if self.ping is not None:
            with contextlib.suppress(Exception):
                self.ping.write("\n")

    async def read_clock(self, timeout: float = 5.0) -> float | None:
        """The host's clock at release, printed by the armed command before exec."""
        assert self.client_lines is not None
        try:
            line = await self.client_lines.get(timeout)
        except TimeoutError:
            return None
        self.host_clock = parse_clock(line) if line is not None else None
        if self.host_clock is None:  # not a clock (or the end): kept for the reader
            self.client_lines.unget()
        return self.host_clock

    async def end_client(self) -> None:
        """End iperf3's client (a stop, a stall): its output ends, the run goes on to judge."""
        if self.client is not None:
            await self.client.terminate()

    # ---- ending -------------------------------------------------------------------------
    async def client_status(self, timeout: float = 5.0) -> int | None:
        """iperf3's client's exit status once it ended (None: a signal, or no client)."""
        return await self.client.wait(timeout=timeout) if self.client else None

    async def cleanup(self) -> None:
        """End every process this run started, and their readers, whatever state it is in."""
        procs = [p for p in (self.client, self.ping, self.server) if p is not None]
        await asyncio.gather(*(self.ctx.end_process(p) for p in procs),
                             return_exceptions=True)
        for lines in (self.client_lines, self.server_lines):
            if lines is not None:
                lines.task.cancel()
