"""One run: iperf3 (and ping, and watches) on one pair under one configuration.

A run is prepared (server listening on a free port, client and ping started but armed), then
released by the engine together with the other pairs', then streamed: every interval iperf3
prints becomes an INTERVAL event, every ping reply a PING event, every watch sample a WATCH
event, and the run ends with RUN_END. Whatever happens, every process it started is ended.

Which side's intervals: TCP takes the client's lines (iperf3's convention: the sender's, the
receiver's with -R). UDP takes the receiving side's, because a UDP sender prints the rate it
offered, not what arrived: the server's lines when the client sends (forward, and --bidir's
forward direction), the client's own with -R (and --bidir's way back). See `measured`.
"""

from __future__ import annotations

import asyncio
import contextlib
import fnmatch
import shlex
import time
from collections import deque
from collections.abc import Callable
from dataclasses import asdict, dataclass, field
from typing import Any

from abtui.core import events
from abtui.core.errors import RemoteError, RunFailed
from abtui.core.events import Event
from abtui.core.model import (
    Interval,
    IperfSummary,
    LinkState,
    Pair,
    PingReply,
    PingSummary,
    TestOptions,
    Watch,
)
from abtui.measure.seams import (
    Emit,
    ParserFactory,
    PingParserFactory,
    iperf_error_of,
    iperf_summary_of,
    ping_summary_of,
)
from abtui.parse.cputimes import parse_cpu_times, since
from abtui.remote.iperf_cmd import (
    ARMED_MARK,
    armed,
    client_argv,
    parse_clock,
    ping_argv,
    plain,
    sample_command,
    server_argv,
)
from abtui.remote.link import HostLink, RemoteProcess

PORT_TRIES = 8
SERVER_START_TIMEOUT = 5.0
# Time allowed for the connection set-up before the first interval is due.
CONNECT_ALLOWANCE = 3.0
STALL_INTERVALS = 3
# How long the server may take, once the client is done, to print its last intervals and exit.
SERVER_END_TIMEOUT = 3.0
# How long a stopped run waits for its client's output to end (a link that hangs may never
# close the channel); then cleanup ends what is left.
STOP_WAIT_S = 5.0
# An interval shorter than this share of the interval setting is the stub a server prints as
# the test ends (`2.00-2.00 sec`): its rate is no measurement of its own.
STUB_FRACTION = 0.1
# Host CPU is sampled at the run's interval, never more often than this.
CPU_MIN_PERIOD = 1.0
# The raw sink's run key for the server's lines: "<run id>/server".
SERVER_SUFFIX = "/server"

PhaseFor = Callable[[str, float, float], tuple[int, bool]]


@dataclass(slots=True)
class RunSpec:
    run_id: str
    pair: Pair
    options: TestOptions
    target: str
    seconds: int
    port: int
    config: dict[str, str] = field(default_factory=dict)
    json_stream: bool = False
    program: str = "iperf3"
    bash: bool = False  # the sender has bash: a fork-free clock at release
    # the sender has stdbuf: iperf3 3.12's --forceflush leaves [SUM] lines in stdio's buffer
    stdbuf: bool = False
    # the receiver has stdbuf (its server's lines are read for UDP)
    receiver_stdbuf: bool = False
    watches: list[Watch] = field(default_factory=list)
    # host alias -> the command that prints its CPU time counters (TestOptions.host_cpu):
    # sampled every max(interval, CPU_MIN_PERIOD) s during the run
    cpu_commands: dict[str, str] = field(default_factory=dict)
    # the engine's count of restarting changes on the pair when this run was prepared
    settings: int = 0


@dataclass(slots=True)
class RunHooks:
    emit: Emit
    parser_factory: ParserFactory
    phase_for: PhaseFor
    ping_parser_factory: PingParserFactory | None = None
    # every raw line of iperf3's client output, as received: (run id, line); the server's
    # lines, when the run reads them (UDP sent by the client, -R in text mode), under run id
    # + SERVER_SUFFIX
    raw_sink: Callable[[str, str], None] | None = None
    # a process left on a host whose link dropped: ended once the link is back
    orphan: Callable[[HostLink, int], None] | None = None
    # process groups started and ended, for the undo journal: (host, pgid, what)
    started: Callable[[str, int, str], None] | None = None
    ended: Callable[[str, int], None] | None = None


def measured(interval: Interval, opts: TestOptions) -> bool:
    """Whether an interval iperf3 printed (on either side) is a measurement of the pair: UDP
    intervals only from the receiving side (those carry jitter and loss; the sending side's
    are the rate offered), and no end-of-test stub (see STUB_FRACTION)."""
    if opts.udp and interval.jitter_ms is None:
        return False
    return interval.end - interval.start >= STUB_FRACTION * opts.interval


def reads_server(opts: TestOptions) -> bool:
    """UDP the client sends (forward, --bidir): what arrived is in the server's lines."""
    return opts.udp and not opts.reverse


def reads_server_cpu(opts: TestOptions, json_stream: bool) -> bool:
    """-R in text mode: the client prints no `CPU Utilization:` line when it receives, the
    server (the sender, run with -V) prints the sender's."""
    return opts.reverse and not json_stream


def fill_cpu(summary: IperfSummary | None, other: IperfSummary | None) -> None:
    """Take the CPU figures `summary` lacks from the other side's log."""
    if summary is None or other is None:
        return
    summary.sender_cpu = summary.sender_cpu or other.sender_cpu
    summary.receiver_cpu = summary.receiver_cpu or other.receiver_cpu


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


class _Lines:
    """A streamed process's stdout drained into a queue by a task of its own.

    Waiting on the queue with a timeout never disturbs the SSH channel's reader."""

    def __init__(self, proc: RemoteProcess) -> None:
        self.proc = proc
        self.queue: asyncio.Queue[str | None] = asyncio.Queue()
        self._arrivals: deque[float] = deque()  # perf_counter() of each queued line
        self.arrived: float | None = None  # ... of the line `get` returned last
        # False once nobody reads the lines any more (a listening server's reports): they are
        # still drained, so the channel never blocks, but not queued, so memory stays flat
        self.keep = True
        self.task = asyncio.get_running_loop().create_task(self._pump())

    async def _pump(self) -> None:
        try:
            async for line in self.proc.lines():
                if self.keep:
                    self._arrivals.append(time.perf_counter())
                    self.queue.put_nowait(line)
        finally:
            self._arrivals.append(time.perf_counter())
            self.queue.put_nowait(None)

    async def get(self, timeout: float | None) -> str | None:
        line = await asyncio.wait_for(self.queue.get(), timeout)
        self.arrived = self._arrivals.popleft()
        return line


class PairRun:
    """iperf3 server, client, ping and watches for one pair; see the module docstring."""

    def __init__(self, spec: RunSpec, sender: HostLink, receiver: HostLink,
                 hooks: RunHooks) -> None:
        self.spec = spec
        self.sender = sender
        self.receiver = receiver
        self.hooks = hooks
        self.host_clock: float | None = None
        self.status = "error"
        self.message = ""
        self.retry_port: int | None = None
        # the iperf3 client command as armed, without the stdbuf or shell around it (RUN_START
        # records it: the report's "Test options" print what ran, not a rebuild)
        self.client_argv: list[str] = []
        # a count, not a list: a long run's intervals live in the session file, not here
        self.interval_count = 0
        # set when a change this run cannot follow (a restarting knob) began: what it measures
        # after that belongs to no phase, its successor measures the new configuration
        self.retired_at: float | None = None
        self._interrupted: set[str] = set()  # hosts whose link was lost during the run
        self._server: RemoteProcess | None = None
        self._server_lines: _Lines | None = None
        self._server_task: asyncio.Task[None] | None = None
        self._server_parser: Any = None
        self._client: RemoteProcess | None = None
        self._client_lines: _Lines | None = None
        self._ping: RemoteProcess | None = None
        self._ping_task: asyncio.Task[Any] | None = None
        self._watch_tasks: list[asyncio.Task[None]] = []
        self._idle_replies: list[PingReply] = []
        self._idle_summary: PingSummary | None = None
        self._stopping = False
        self._stalled = False
        self._empty_streak = 0  # intervals in a row that carried no data
        self.finished = asyncio.Event()  # set once the run is over (RUN_END is out)

    @property
    def label(self) -> str:
        return self.spec.pair.label

    def _event(self, payload: events.Payload, host: str | None = None) -> None:
        self.hooks.emit(Event.of(payload, pair=self.label, host=host))

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
            proc = await self._stream(self.receiver, plain(argv) + " 2>&1", "iperf3 server")
            lines = _Lines(proc)
            outcome = await self._server_outcome(lines, keep)
            if outcome is None:
                self._server, self._server_lines, self.spec.port = proc, lines, port
                return
            await self._end(proc)
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
        self._client = await self._stream(self.sender, armed(argv, self.spec.bash) + " 2>&1",
                                          "iperf3 client")
        self._client_lines = _Lines(self._client)
        await self._await_armed(self._client_lines)

    async def _arm_ping(self) -> None:
        opts = self.spec.options
        if not opts.ping or self.hooks.ping_parser_factory is None:
            return
        if opts.ping_count > 0:  # on the idle link, before iperf3 starts
            await self._idle_ping()
        else:
            self._ping = await self._stream(self.sender, armed(ping_argv(opts, self.spec.target)),
                                            "ping")

    async def _idle_ping(self) -> None:
        assert self.hooks.ping_parser_factory is not None
        opts = self.spec.options
        argv = ping_argv(opts, self.spec.target)
        argv[1:1] = ["-c", str(opts.ping_count)]
        proc = await self._stream(self.sender, plain(argv), "ping")
        parser = self.hooks.ping_parser_factory()
        try:
            async for line in proc.lines():
                self._idle_replies.extend(parser.feed(line))
            await proc.wait(timeout=5.0)
        finally:
            await self._end(proc)
        self._idle_summary = ping_summary_of(parser.finish())

    async def _await_armed(self, lines: _Lines) -> None:
        try:
            line = await lines.get(SERVER_START_TIMEOUT)
        except TimeoutError:
            line = None
        if line != ARMED_MARK:
            raise RunFailed(f"{self.sender.alias}: the iperf3 client could not be started: "
                            f"{line or self._client.stderr if self._client else ''}")

    @staticmethod
    async def _server_outcome(lines: _Lines, keep: bool = False) -> str | None:
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
            if "server listening on" in line.lower():
                lines.keep = keep  # unless kept, what it prints from now on is not read
                return None
            if line.strip("- "):
                said.append(line.strip())

    # ---- releasing ----------------------------------------------------------------------
    def release(self) -> None:
        """Let the armed client go: called for every pair in one loop iteration."""
        if self._client is not None:
            with contextlib.suppress(Exception):
                self._client.write("\n")

    def release_ping(self) -> None:
        if self._ping is not None:
            with contextlib.suppress(Exception):
                self._ping.write("\n")

    async def read_clock(self, timeout: float = 5.0) -> float | None:
        """The host's clock at release, printed by the armed command before exec."""
        assert self._client_lines is not None
        try:
            line = await self._client_lines.get(timeout)
        except TimeoutError:
            return None
        if line is None:
            self._client_lines.queue.put_nowait(None)
            return None
        self.host_clock = parse_clock(line)
        if self.host_clock is None:  # not a clock: keep the line for the parser
            self._client_lines.queue.put_nowait(line)
        return self.host_clock

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

    async def _end_client(self) -> None:
        if self._client is not None:
            await self._client.terminate()

    # ---- ping and watches ---------------------------------------------------------------
    async def _ping_loop(self) -> Any:
        assert self._ping is not None and self.hooks.ping_parser_factory is not None
        parser = self.hooks.ping_parser_factory()
        async for line in self._ping.lines():
            if line == ARMED_MARK or parse_clock(line) is not None:
                continue
            for reply in parser.feed(line):
                phase, _ = self.hooks.phase_for(self.label, time.time(), 0.0)
                self._event(events.Ping(run=self.spec.run_id, phase=phase, seq=reply.seq,
                                        rtt_ms=reply.rtt_ms))
        return parser.finish()

    async def _finish_ping(self) -> Any:
        if self._ping is None or self._ping_task is None:
            return self._idle_summary
        if self._ping.pgid is not None and self.sender.state is LinkState.CONNECTED:
            # INT makes ping print its summary; read it before the channel closes
            with contextlib.suppress(RemoteError):
                await self.sender.run(f"kill -INT -{int(self._ping.pgid)} 2>/dev/null; true")
        try:
            result = await asyncio.wait_for(self._ping_task, 3.0)
        except (TimeoutError, Exception):
            return None
        return ping_summary_of(result)

    def _start_watches(self) -> None:
        loop = asyncio.get_running_loop()
        for watch in self.spec.watches:
            link = self.sender if watch.role.value == "sender" else self.receiver
            self._watch_tasks.append(loop.create_task(self._watch_loop(watch, link)))

    async def _watch_loop(self, watch: Watch, link: HostLink) -> None:
        """Sample a watch every `interval` s; a sysctl with `*` is one series per match."""
        complained = False
        names: list[str] | None = None
        while True:
            await asyncio.sleep(watch.interval)
            try:
                if watch.sysctl and "*" in watch.sysctl:
                    if names is None:
                        names = await self._sysctl_names(link, watch.sysctl)
                    if not names:
                        raise RemoteError(link.alias, f"no sysctl matches {watch.sysctl}")
                    out = await link.check(f"sysctl -n {shlex.join(names)}",
                                           timeout=max(2.0, watch.interval))
                    samples = list(zip((f"{watch.name}:{n}" for n in names),
                                       out.splitlines(), strict=False))
                else:
                    out = await link.check(sample_command(watch.sysctl, watch.command),
                                           timeout=max(2.0, watch.interval))
                    samples = [(watch.name, out.strip())]
            except RemoteError as exc:
                if not complained:
                    self._event(events.Error(message=f"watch {watch.name}: {exc.reason}"),
                                host=link.alias)
                    complained = True
                continue
            for name, text in samples:
                self._event(events.Watch(run=self.spec.run_id, name=name,
                                         value=_number(text.strip())), host=link.alias)

    def _start_cpu(self) -> None:
        loop = asyncio.get_running_loop()
        period = max(self.spec.options.interval, CPU_MIN_PERIOD)
        links = {link.alias: link for link in (self.sender, self.receiver)}
        for alias, link in links.items():
            command = self.spec.cpu_commands.get(alias)
            if command:
                self._watch_tasks.append(loop.create_task(self._cpu_loop(link, command,
                                                                         period)))

    async def _cpu_loop(self, link: HostLink, command: str, period: float) -> None:
        """The host's CPU time every `period` s, one round trip each: a CPU event with what
        each state gained since the previous sample (the first one is only the base)."""
        before = None
        complained = False
        due = time.monotonic()
        role = "sender" if link is self.sender else "receiver"
        while True:
            try:
                now = parse_cpu_times(await link.check(command, timeout=max(2.0, period)))
                if now is None:
                    raise RemoteError(link.alias, "its CPU time counters were not readable")
            except RemoteError as exc:
                if not complained:
                    self._event(events.Error(message=f"host CPU: {exc.reason}"),
                                host=link.alias)
                    complained = True
                before = None
            else:
                got = since(before, now) if before is not None else None
                if got is not None:
                    phase, straddles = self.hooks.phase_for(self.label, time.time(), period)
                    self._event(events.Cpu(run=self.spec.run_id, role=role, phase=phase,
                                           straddles=straddles, total=got[0], cpus=got[1]),
                                host=link.alias)
                before = now
            # on a fixed beat; a sample that took longer than a period (a slow link) is not
            # made up for with a burst
            due = max(due + period, time.monotonic())
            await asyncio.sleep(due - time.monotonic())

    @staticmethod
    async def _sysctl_names(link: HostLink, pattern: str) -> list[str]:
        listed = await link.check("sysctl -aN 2>/dev/null || sysctl -N -a 2>/dev/null; true")
        return sorted(n for n in listed.split() if fnmatch.fnmatchcase(n, pattern))

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

    async def cleanup(self) -> None:
        """End every process and task this run started, whatever state it is in."""
        for task in self._watch_tasks:
            task.cancel()
        procs = [p for p in (self._client, self._ping, self._server) if p is not None]
        await asyncio.gather(*(self._end(p) for p in procs), return_exceptions=True)
        for lines in (self._client_lines, self._server_lines):
            if lines is not None:
                lines.task.cancel()
        for reader in (self._ping_task, self._server_task):
            if reader is not None and not reader.done():
                reader.cancel()

    async def _stream(self, link: HostLink, command: str, what: str) -> RemoteProcess:
        proc = await link.stream(command)
        if proc.pgid is not None and self.hooks.started is not None:
            self.hooks.started(link.alias, proc.pgid, what)
        return proc

    async def _end(self, proc: RemoteProcess) -> None:
        if proc.link.state is not LinkState.CONNECTED and proc.pgid is not None:
            if self.hooks.orphan is not None:  # ended once the link is back
                self.hooks.orphan(proc.link, proc.pgid)
            await proc.terminate()
            return
        await proc.terminate()
        if proc.pgid is not None and self.hooks.ended is not None:
            self.hooks.ended(proc.link.alias, proc.pgid)


def _number(text: str) -> float | str:
    try:
        return float(text)
    except ValueError:
        return text
