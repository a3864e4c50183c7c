"""What a run is given (RunSpec, its RunOwner, its RunParsers) and the context its parts share.

A run (abtui.measure.run.pair.PairRun) is composed of three parts, each an object of its own:
its remote processes (procs.RunProcesses), its samplers beside iperf3 (sampling:
ping, watches, host CPU) and its interval reader (reader.IntervalReader). Each owns its
own state; they share only this RunContext: the spec, the two links, the owner the run
reports to, and what the run was told (stop, a link lost, retired).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Protocol

from abtui.core import events
from abtui.core.events import AnyEvent, Event
from abtui.core.model import LinkState, Pair, TestOptions, Watch
from abtui.remote.link import HostLink
from abtui.remote.streams import RemoteProcess

if TYPE_CHECKING:  # types only: the objects are handed in by their owner
    from abtui.measure.ports import ParserFactory, PingParserFactory


@dataclass(frozen=True, slots=True)
class ProfileSpec:
    """A host's profile during a run: its loop (abtui.remote.profiling), its rate, and
    whether the host shares its machine's kernel (the profile is the machine's)."""

    command: str
    hz: int
    shared: bool = False
    counters: str | None = None  # the host's counters loop (abtui.remote.counters), if any


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
    # host alias -> its profile during the run (TestOptions.profile_hz; none: not profiled)
    profile_commands: dict[str, ProfileSpec] = field(default_factory=dict)
    # the engine's count of restarting changes on the pair when this run was prepared
    settings: int = 0
    # the sender's data-link counters command for a device (None: found from the target),
    # read on the run's beat (abtui.measure.run.traffic); None: not read
    counters_for: Callable[[str | None], str] | None = None
    # a request/response load (sockperf, TestOptions.sockperf) beside iperf3: both hosts have it
    rr: bool = False


class RunOwner(Protocol):
    """What a run tells whoever runs it (the engine's run scheduler,
    abtui.measure.engine.runs.RunScheduler, the runs' owner): every member is called, none
    optional."""

    def emit(self, event: AnyEvent) -> None: ...

    def phase_for(self, label: str, received: float, duration: float,
                  settings: int) -> tuple[int, bool]:
        """The phase of what arrived at `received` (time.time()) spanning `duration` s, and
        whether it straddles a change, for a run prepared at the pair's settings count
        `settings` (abtui.measure.phase_book.PhaseBook.phase_for)."""
        ...

    def raw_line(self, run_id: str, line: str) -> None:
        """Every raw line of iperf3's output as received (the server's under run id +
        SERVER_SUFFIX)."""
        ...

    def started(self, host: str, pgid: int, what: str) -> None:
        """A process group the run started on `host` (the undo journal)."""
        ...

    def ended(self, host: str, pgid: int) -> None: ...

    def orphaned(self, link: HostLink, pgid: int) -> None:
        """A process left on a host whose link dropped: to be ended once the link is back."""
        ...


@dataclass(frozen=True, slots=True)
class RunParsers:
    """The parsers a run reads iperf3's (and ping's) output with; no ping parser: no ping."""

    iperf: ParserFactory
    ping: PingParserFactory | None = None


class RunContext:
    """What one run's parts share: given, and what the run was told; see the module docstring."""

    def __init__(self, spec: RunSpec, sender: HostLink, receiver: HostLink, owner: RunOwner,
                 parsers: RunParsers) -> None:
        self.spec = spec
        self.sender = sender
        self.receiver = receiver
        self.owner = owner
        self.parsers = parsers
        self.stopping = False  # told to stop (the user, or a link lost)
        self.interrupted: set[str] = set()  # hosts whose link was lost during the run
        # set when a change this run cannot follow (a restarting knob) began: what it measures
        # after that belongs to no phase, its successor measures the new configuration
        self.retired_at: float | None = None

    @property
    def label(self) -> str:
        return self.spec.pair.label

    def event(self, payload: events.Payload, host: str | None = None,
              t: float | None = None) -> None:
        """An event of the pair's, dated now or at `t` (time.time()) when it happened."""
        self.owner.emit(Event.of(payload, t=t, pair=self.label, host=host))

    def phase(self, received: float, duration: float) -> tuple[int, bool]:
        return self.owner.phase_for(self.label, received, duration, self.spec.settings)

    async def start_process(self, link: HostLink, command: str,
                            what: str) -> RemoteProcess[HostLink]:
        """A long command of the run's started on `link`, its process group written down: the
        one place a run's parts start a process on a host."""
        proc = await link.stream(command)  # (in the group it reports: HostLink.stream)
        if proc.pgid is not None:
            self.owner.started(link.alias, proc.pgid, what)
        return proc

    async def end_process(self, proc: RemoteProcess[HostLink]) -> None:
        """A long command of the run's ended for certain (or, its link down, left to be ended
        once the link is back), its process group struck off."""
        if proc.link.state is not LinkState.CONNECTED and proc.pgid is not None:
            self.owner.orphaned(proc.link, proc.pgid)  # ended once the link is back
            await proc.terminate()
            return
        await proc.terminate()
        if proc.pgid is not None:
            self.owner.ended(proc.link.alias, proc.pgid)
