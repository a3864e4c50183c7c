"""What a run is given (RunSpec, RunHooks) and the state its parts share (RunBase).

A run (abtui.measure.runs.PairRun) is built from three parts, each in a module of its own: its
remote processes (run_procs), what it samples beside iperf3 (run_sampling: ping, watches, host
CPU) and the streaming of iperf3's intervals (runs). They share one state, set up here, so
each part reads and ends what the others started.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from abtui.core import events
from abtui.core.events import Event
from abtui.core.model import Pair, PingReply, PingSummary, TestOptions, Watch
from abtui.measure.run_lines import OutputLines
from abtui.measure.seams import Emit, ParserFactory, PingParserFactory
from abtui.remote.link import HostLink
from abtui.remote.streams import RemoteProcess

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


class RunBase:
    """The state of one pair's run, shared by its parts; see the module docstring."""

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
        self._server_lines: OutputLines | None = None
        self._server_task: asyncio.Task[None] | None = None
        self._server_parser: Any = None
        self._client: RemoteProcess | None = None
        self._client_lines: OutputLines | None = None
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

