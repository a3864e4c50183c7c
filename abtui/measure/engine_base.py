"""The engine's state and its event fan-out: what every part of the engine shares.

The engine (abtui.measure.engine.Engine) is one class built in layers, each a module with one
job, each using only the layers below it:
engine_base (state, events) <- engine_knobs (knob values read and changed, phases opened)
<- engine_hosts (connecting, host tools, link state, orphans) <- engine_verify (a reconnected
host read again) <- engine_runs (runs prepared, released together, streamed) <- engine
(continuous mode, the plan, stop and shutdown).
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from abtui.core.controller import Mode
from abtui.core.events import Event, EventKind
from abtui.core.model import Pair, Profile, TestOptions
from abtui.hosts.restore import Orphans
from abtui.hosts.undo import UndoJournal
from abtui.measure.bus import EventBus, Subscription
from abtui.measure.phases import PairPhases
from abtui.measure.runs import PairRun
from abtui.measure.seams import (
    Emit,
    KnobApplier,
    NoKnobs,
    ParserFactory,
    PingParserFactory,
    default_parser_factory,
    default_ping_parser_factory,
)
from abtui.remote.dialect import Dialect
from abtui.remote.iperf_cmd import options_for
from abtui.remote.link import HostLink

# Builds the knob layer once links exist: (links by alias, emit) -> applier.
KnobApplierFactory = Callable[[Mapping[str, HostLink], Emit], KnobApplier]


@dataclass(slots=True)
class Unverified:
    """A host whose link dropped at `since` and is not read again yet (engine_verify)."""

    since: float
    boot_id: str | None = None  # the host's boot before the link dropped
    done: asyncio.Event = field(default_factory=asyncio.Event)
    checking: bool = False


class EngineBase:
    """The engine's state, events and test options; see the module docstring."""

    def __init__(self, profile: Profile, *, parser_factory: ParserFactory | None = None,
                 ping_parser_factory: PingParserFactory | None = None,
                 knob_applier: KnobApplierFactory | None = None,
                 session_path: Path | None = None,
                 chunk_seconds: int | None = None,
                 raw_sink: Callable[[str, str], None] | None = None,
                 journal: UndoJournal | None = None, use_journal: bool = True,
                 start_data: Mapping[str, Any] | None = None) -> None:
        self.profile = profile
        # more SESSION_START data, e.g. the lab mapping's pairs and translations
        self.start_data = dict(start_data or {})
        self.session_path = session_path
        self.parser_factory = parser_factory or default_parser_factory()
        self.live_options: dict[str, dict[str, Any]] = {p.label: {} for p in profile.pairs}
        self.ping_parser_factory = ping_parser_factory
        if ping_parser_factory is None and any(self._options(p).ping for p in profile.pairs):
            self.ping_parser_factory = default_ping_parser_factory()
        self._applier_factory = knob_applier
        self.applier: KnobApplier = NoKnobs()
        self.chunk_seconds = chunk_seconds
        self.raw_sink = raw_sink
        self.links: dict[str, HostLink] = {}
        self.dialects: dict[str, Dialect] = {}
        # originals, tunnels and process groups, for `abtui recover` after a crash
        self.journal = journal
        self._use_journal = use_journal
        # (host, iperf3 program) -> its version, None when it is not there
        self.iperf_versions: dict[tuple[str, str], tuple[int, int] | None] = {}
        self.has_bash: dict[str, bool] = {}
        self.has_stdbuf: dict[str, bool] = {}
        self.phases = {p.label: PairPhases(p.label) for p in profile.pairs}
        self.targets = {p.label: p.target for p in profile.pairs}
        self.skews: list[float] = []
        self.failed_runs = 0
        self.bus = EventBus()
        self._runs: dict[str, PairRun] = {}
        # per pair, how many times a setting only new connections see began or ended
        # changing: a run prepared before the last such moment is stale (see _fresh)
        self._settings: dict[str, int] = {p.label: 0 for p in profile.pairs}
        self._tasks: set[asyncio.Task[Any]] = set()
        # processes left on hosts whose link dropped, ended when the link is back
        self.orphans = Orphans()
        self._run_counter = 0
        self._stopping = False
        self._stopped = asyncio.Event()
        self._mode: Mode | None = None
        # hosts whose link dropped, until their knobs are read again (engine_verify); per
        # pair, the knobs abtui wrote (what a reconnected host gets back); changes one at a time
        self._unverified: dict[str, Unverified] = {}
        self._applied: dict[str, set[str]] = {}
        self._changing = asyncio.Lock()
        self._started = False

    # ---- events -------------------------------------------------------------------------
    def subscribe(self, callback: Callable[[Event], None]) -> Subscription:
        """Every event from now on, until the returned handle is closed."""
        return self.bus.subscribe(callback)

    def emit(self, event: Event) -> None:
        if event.kind is EventKind.RUN_END and event.data.get("status") in ("error",
                                                                            "incomplete"):
            self.failed_runs += 1
        self.bus.emit(event)

    def _spawn(self, coro: Any) -> asyncio.Task[Any]:
        task = asyncio.get_running_loop().create_task(coro)
        self._tasks.add(task)
        task.add_done_callback(self._tasks.discard)
        return task

    def _options(self, pair: Pair) -> TestOptions:
        return options_for(self.profile.test, pair, self.live_options.get(pair.label))

