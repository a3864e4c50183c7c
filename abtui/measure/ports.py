"""What the engine needs from the parsers, the knob layer and the session store.

The engine depends on these small protocols, not on the modules that implement them, so each
side can be built and tested on its own; the `default_*` functions are the one place that binds
them to the real modules (abtui.parse, abtui.sessions.writer); the knob layer's applier on real
hosts is abtui.hosts.applier.HostKnobs, handed in by the engine.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Literal, Protocol

from abtui.core.errors import KnobRefused
from abtui.core.events import AnyEvent
from abtui.core.model import Interval, IperfSummary, Knob, Pair, PingReply, PingSummary, Profile

if TYPE_CHECKING:  # (the console imports this module before its first frame: no SSH layer)
    from abtui.sessions.writer import SessionWriter

OutputFormat = Literal["text", "json-stream"]
Emit = Callable[[AnyEvent], None]


class IperfOutcome(Protocol):
    """What an iperf3 parser finishes with (abtui.parse.Iperf3Result)."""

    @property
    def summary(self) -> IperfSummary | None: ...

    @property
    def reverse_summary(self) -> IperfSummary | None:
        """--bidir's other direction."""
        ...

    @property
    def error(self) -> str | None:
        """iperf3's own message when the test failed."""
        ...


class PingOutcome(Protocol):
    """What a ping parser finishes with (abtui.parse.PingResult)."""

    @property
    def summary(self) -> PingSummary | None: ...


class IperfParser(Protocol):
    """Incremental iperf3 client-output parser: lines in, finished intervals out."""

    def feed(self, line: str) -> list[Interval]: ...

    def finish(self) -> IperfOutcome: ...


class PingParser(Protocol):
    def feed(self, line: str) -> list[PingReply]: ...

    def finish(self) -> PingOutcome: ...


ParserFactory = Callable[[OutputFormat], IperfParser]
PingParserFactory = Callable[[], PingParser]


class KnobApplier(Protocol):
    """Applies knob values on the hosts of some pairs, all or nothing, and restores them.

    `apply` raises abtui.core.errors.KnobRefused (nothing changed anywhere) and returns, for a
    tunnel knob, each affected pair's new iperf3 target ({} for other knobs). Originals are
    recorded (ORIGINAL events) before the first change; `restore` puts every one back (RESTORE).
    The engine reads values through `current` (on connect, and again after a reconnect) and
    checks tunnels it made through `tunnel_intact`.
    """

    async def apply(self, knob: Knob, value: str, pairs: Sequence[Pair],
                    again: bool = False) -> Mapping[str, str]:
        """`again`: a build knob's hosts boot the build even when they run it already."""
        ...

    async def current(self, knob: Knob, pairs: Sequence[Pair]) -> dict[str, dict[str, str]]:
        """Each pair's value of a host knob now, per role ({} when it cannot be read)."""
        ...

    async def tunnel_intact(self, label: str, host: str) -> bool | None:
        """The pair's tunnel ends on `host` still there (None: no tunnel made there)."""
        ...

    async def restore(self) -> list[str]:
        """Set everything back; one line per failure (empty: all set back)."""
        ...


def iperf_summary_of(result: IperfOutcome, reverse: bool = False) -> IperfSummary | None:
    """The end-of-test summary (with `reverse`, --bidir's other direction), None when iperf3
    did not get to print one."""
    summary = result.reverse_summary if reverse else result.summary
    if summary is None:
        return None
    if summary.sender_bits_per_second is None and summary.receiver_bits_per_second is None:
        return None
    return summary


def iperf_error_of(result: IperfOutcome) -> str | None:
    return result.error or None


def default_parser_factory() -> ParserFactory:
    """iperf3 parsers from abtui.parse (text for ≤ 3.16, --json-stream for 3.17+)."""
    from abtui.parse import Iperf3JsonParser, Iperf3TextParser

    def make(fmt: OutputFormat) -> IperfParser:
        # live: each interval goes on as an event, none is kept here (a long run's memory)
        if fmt == "json-stream":
            return Iperf3JsonParser(keep_intervals=False)
        return Iperf3TextParser(keep_intervals=False)

    return make


def default_ping_parser_factory() -> PingParserFactory:
    from abtui.parse import PingParser

    return PingParser


class NoKnobs:
    """The applier when none is given: every change is refused with the reason."""

    def __init__(self, reason: str = "knob changes are not available (abtui.hosts.knobs missing)"):
        self.reason = reason

    async def apply(self, knob: Knob, value: str, pairs: Sequence[Pair],
                    again: bool = False) -> Mapping[str, str]:
        raise KnobRefused(self.reason)

    async def current(self, knob: Knob, pairs: Sequence[Pair]) -> dict[str, dict[str, str]]:
        return {}  # nothing can be read: no pair's configuration claims a value

    async def tunnel_intact(self, label: str, host: str) -> bool | None:
        return None

    async def restore(self) -> list[str]:
        return []


def open_session_writer(path: Path, profile: Profile, compact: bool) -> SessionWriter:
    """The session file of a headless run (abtui.sessions.writer: a header, then an event a
    line)."""
    from abtui.sessions.writer import SessionWriter

    return SessionWriter(path, profile=profile.name, pairs=[p.label for p in profile.pairs],
                         compact=compact)
