"""What happened, as typed records: the event kinds, one frozen payload class per kind, the
`Event` envelope the engine emits and the journal writes, and the one dispatch every reader
(the console's state, the recorded session) uses.

A payload's fields are its kind's `data` keys in the journal (docs/session-format.md), in the
order they are written. A field with OPTIONAL metadata is left out of the record while None; any
key a record carries that its class does not name is kept in `extra`, so a record read and
written again is the same record.

Adding a kind is a change here only: a member of EventKind, a payload class registered with
`@_payload(EventKind.X)` (import fails while a kind has none), and, in each reader that cares,
an `on_<kind value>(event, payload)` method.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, field, fields
from enum import StrEnum
from types import MappingProxyType
from typing import Any, ClassVar, TypeVar

from abtui.core.model import interval_loss, interval_rate, now


class EventKind(StrEnum):
    """What happened; each kind's `data` is its payload class below."""

    SESSION_START = "session_start"
    FACTS = "facts"
    LINK = "link"
    ORIGINAL = "original"
    CONFIG = "config"
    KNOB = "knob"
    KNOB_ERROR = "knob_error"
    TUNNEL = "tunnel"
    RUN_START = "run_start"
    INTERVAL = "interval"
    PING = "ping"
    WATCH = "watch"
    CPU = "cpu"
    RUN_END = "run_end"
    PHASE = "phase"
    PROGRESS = "progress"
    SKEW = "skew"
    ERROR = "error"
    MARK = "mark"
    RESTORE = "restore"
    DRIFT = "drift"
    SESSION_END = "session_end"


# A field's metadata when the journal record leaves it out while it is None.
OPTIONAL = {"optional": True}
NO_EXTRA: Mapping[str, Any] = MappingProxyType({})


@dataclass(frozen=True, slots=True, kw_only=True)
class Payload:
    """One kind's `data`: typed for emitters and readers, the same dict in the journal."""

    KIND: ClassVar[EventKind]
    # set by _payload: (field name, left out while None) per field in record order, and
    # the field names
    _SPEC: ClassVar[tuple[tuple[str, bool], ...]] = ()
    _KNOWN: ClassVar[frozenset[str]] = frozenset()
    # set by _payload: fills a new payload's fields from a record's `data`
    _fill: ClassVar[Callable[[Any, Mapping[str, Any]], None]]

    extra: Mapping[str, Any] = field(default_factory=lambda: NO_EXTRA)

    def to_data(self) -> dict[str, Any]:
        """The journal's `data` object for this payload."""
        out = {}
        for name, optional in self._SPEC:
            value = getattr(self, name)
            if value is not None or not optional:
                out[name] = value
        out.update(self.extra)
        return out

    @classmethod
    def from_data(cls, data: Mapping[str, Any]) -> Any:
        """The payload of a recorded `data` object, its values as recorded (a foreign or
        hand-edited record may hold anything: readers check what they use); a missing key
        reads as None, an unknown one goes to `extra`."""
        payload = object.__new__(cls)
        cls._fill(payload, data)
        _set_extra(payload, NO_EXTRA if data.keys() <= cls._KNOWN else MappingProxyType(
            {k: v for k, v in data.items() if k not in cls._KNOWN}))
        return payload


_set_extra: Callable[[Any, Any], None] = Payload.extra.__set__  # type: ignore[attr-defined,misc]
PAYLOADS: dict[EventKind, type[Payload]] = {}
P = TypeVar("P", bound=type[Payload])


def _filler(cls: type[Payload], names: list[str]) -> Callable[[Any, Mapping[str, Any]], None]:
    """One function setting each slot from `data` (a loop costs twice as much, and every
    recorded event a session loads goes through it)."""
    setters = {f"_set_{name}": getattr(cls, name).__set__ for name in names}
    body = "".join(f"    _set_{name}(payload, get({name!r}))\n" for name in names)
    code = f"def fill(payload, data):\n    get = data.get\n{body}"
    scope: dict[str, Any] = {}
    exec(code, setters, scope)  # the code is made of the class's field names only
    fill: Callable[[Any, Mapping[str, Any]], None] = scope["fill"]
    return fill


def _payload(kind: EventKind) -> Callable[[P], P]:
    def register(cls: P) -> P:
        cls.KIND = kind
        own = [f for f in fields(cls) if f.name != "extra"]
        cls._SPEC = tuple((f.name, bool(f.metadata.get("optional"))) for f in own)
        cls._KNOWN = frozenset(f.name for f in own)
        cls._fill = staticmethod(_filler(cls, [f.name for f in own]))  # type: ignore[assignment]
        PAYLOADS[kind] = cls
        return cls
    return register


@_payload(EventKind.SESSION_START)
@dataclass(frozen=True, slots=True, kw_only=True)
class SessionStart(Payload):
    """The profile the session used. `pairs` lets reports name each pair's hosts (without it
    they read the profile copy); `imported` is set by `abtui import`, `translations` by
    `abtui run --lab` (what the lab ran instead of what the profile names)."""

    profile_text: str
    profile_path: str
    abtui_version: str
    # [{"label", "sender", "receiver", "target"}]
    pairs: list[dict[str, str]] | None = field(default=None, metadata=OPTIONAL)
    # [{"subject", "original", "lab", "why"}]
    translations: list[dict[str, Any]] | None = field(default=None, metadata=OPTIONAL)
    # [{"pair", "config", "source"}]
    imported: list[dict[str, Any]] | None = field(default=None, metadata=OPTIONAL)


@_payload(EventKind.FACTS)
@dataclass(frozen=True, slots=True, kw_only=True)
class Facts(Payload):
    """A host's facts, asdict(HostFacts) (host set)."""

    facts: dict[str, Any]


@_payload(EventKind.LINK)
@dataclass(frozen=True, slots=True, kw_only=True)
class Link(Payload):
    """A host's link changed state (a LinkState value) (host set)."""

    state: str
    message: str


@_payload(EventKind.ORIGINAL)
@dataclass(frozen=True, slots=True, kw_only=True)
class Original(Payload):
    """A setting's value before abtui first touched it (host set)."""

    knob: str
    key: str
    value: str
    device: str | None
    kind: str


@_payload(EventKind.CONFIG)
@dataclass(frozen=True, slots=True, kw_only=True)
class Config(Payload):
    """Every knob's value as read from the hosts on connect: the pair's first configuration
    (pair set)."""

    config: dict[str, str]


@_payload(EventKind.KNOB)
@dataclass(frozen=True, slots=True, kw_only=True)
class Knob(Payload):
    """A change applied on these pairs (labels) and hosts (aliases)."""

    knob: str
    value: str
    pairs: list[str]
    hosts: list[str]


@_payload(EventKind.KNOB_ERROR)
@dataclass(frozen=True, slots=True, kw_only=True)
class KnobError(Payload):
    """A change refused: nothing was changed."""

    knob: str
    value: str
    message: str


@_payload(EventKind.TUNNEL)
@dataclass(frozen=True, slots=True, kw_only=True)
class Tunnel(Payload):
    """The tunnel type in use and iperf3's new target (pair set)."""

    type: str
    target: str


@_payload(EventKind.RUN_START)
@dataclass(frozen=True, slots=True, kw_only=True)
class RunStart(Payload):
    """A run started (pair set): its configuration, the engine's phase, the sender's clock at
    release and its skew from the first sender's, asdict(TestOptions), target and port, and
    `argv`: the iperf3 client command exactly as it ran, as a reader would type it (the
    program as the profile names it, no `stdbuf`/shell wrapper); absent in sessions recorded
    before abtui kept it."""

    run: Any
    config: dict[str, str]
    phase: int | None = field(default=None, metadata=OPTIONAL)
    host_clock: float | None
    skew_ms: float | None
    options: dict[str, Any]
    target: str | None = field(default=None, metadata=OPTIONAL)
    port: int | None = field(default=None, metadata=OPTIONAL)
    argv: list[str] | None = field(default=None, metadata=OPTIONAL)


@_payload(EventKind.INTERVAL)
@dataclass(frozen=True, slots=True, kw_only=True)
class Interval(Payload):
    """One iperf3 interval (pair set): model.Interval's fields and the phase it counts in;
    `straddles` when it began before a knob change and ended after (counted in no phase).
    `direction` for --bidir ("rx": receiver -> sender); UDP adds the receiving side's
    `jitter_ms`, `lost_packets` and `packets` (the datagrams due, lost ones included)."""

    run: Any
    phase: Any
    start: float
    end: float
    bytes: int
    bits_per_second: float
    retransmits: int | None
    cwnd_bytes: int | None
    omitted: bool
    straddles: bool
    jitter_ms: float | None = field(default=None, metadata=OPTIONAL)
    lost_packets: int | None = field(default=None, metadata=OPTIONAL)
    packets: int | None = field(default=None, metadata=OPTIONAL)
    direction: str | None = field(default=None, metadata=OPTIONAL)

    def rate(self) -> tuple[float, bool] | None:
        """model.interval_rate: bits per second and whether it is --bidir's way back."""
        return interval_rate({"bits_per_second": self.bits_per_second,
                              "omitted": self.omitted, "direction": self.direction})

    def loss(self) -> tuple[float | None, float | None]:
        """model.interval_loss: UDP loss (%) and jitter (ms)."""
        return interval_loss({"lost_packets": self.lost_packets, "packets": self.packets,
                              "jitter_ms": self.jitter_ms})


@_payload(EventKind.PING)
@dataclass(frozen=True, slots=True, kw_only=True)
class Ping(Payload):
    """One ping reply (pair set); rtt_ms None when it timed out."""

    run: Any
    phase: Any
    seq: int | None
    rtt_ms: float | None


@_payload(EventKind.WATCH)
@dataclass(frozen=True, slots=True, kw_only=True)
class Watch(Payload):
    """A watched sysctl's value during a run (pair and host set)."""

    run: Any
    name: str
    value: float | str | None


@_payload(EventKind.CPU)
@dataclass(frozen=True, slots=True, kw_only=True)
class Cpu(Payload):
    """A host's CPU sample during a run (pair and host set): the ticks each state gained
    since the host's previous sample, in abtui.core.cpu.FIELDS order, over all its CPUs
    (`total`) and per CPU (`cpus`); `role` the side the host is on ("sender", "receiver");
    the phase it counts in (none when `straddles` a knob change)."""

    run: Any
    role: str
    phase: Any
    straddles: bool
    total: list[int]
    cpus: list[list[int]]


@_payload(EventKind.RUN_END)
@dataclass(frozen=True, slots=True, kw_only=True)
class RunEnd(Payload):
    """A run ended (pair set): status "ok", "error", "incomplete" or "stopped";
    asdict(IperfSummary) and asdict(PingSummary) or None; --bidir adds the receiver ->
    sender direction's summary."""

    run: Any
    status: str
    summary: dict[str, Any] | None
    ping: dict[str, Any] | None
    message: str
    reverse_summary: dict[str, Any] | None = field(default=None, metadata=OPTIONAL)


@_payload(EventKind.PHASE)
@dataclass(frozen=True, slots=True, kw_only=True)
class Phase(Payload):
    """A phase closed (pair set): its id, configuration and span."""

    phase: Any
    config: dict[str, str]
    start: float | None
    end: float | None


@_payload(EventKind.PROGRESS)
@dataclass(frozen=True, slots=True, kw_only=True)
class Progress(Payload):
    """Plan mode: steps done of total, and the estimated seconds left."""

    done: int
    total: int
    eta_s: float | None


@_payload(EventKind.SKEW)
@dataclass(frozen=True, slots=True, kw_only=True)
class Skew(Payload):
    """A synchronized start: the spread of the senders' clocks, and each pair's clock."""

    skew_ms: float
    clocks: dict[str, float | None]


@_payload(EventKind.ERROR)
@dataclass(frozen=True, slots=True, kw_only=True)
class Error(Payload):
    """Something failed (pair and/or host may be set)."""

    message: str


@_payload(EventKind.MARK)
@dataclass(frozen=True, slots=True, kw_only=True)
class Mark(Payload):
    """A note on the timeline."""

    text: str


@_payload(EventKind.RESTORE)
@dataclass(frozen=True, slots=True, kw_only=True)
class Restore(Payload):
    """A setting set back on exit (host set)."""

    knob: str
    value: str
    ok: bool
    message: str


@_payload(EventKind.DRIFT)
@dataclass(frozen=True, slots=True, kw_only=True)
class Drift(Payload):
    """A host reconnected with a knob's value other than its pair's configuration (host
    set): `value` what the host has, `expected` what abtui set or read before, `action`
    what abtui did about it (`re-applied`, or `relabelled` with the reason in `message`)."""

    knob: str
    value: str
    expected: str
    pairs: list[str]
    action: str
    message: str = ""

    def line(self, host: str | None) -> str:
        """The sentence the console log shows."""
        why = f" ({self.message})" if self.message else ""
        return (f"{self.knob} on {host} is {self.value} after reconnect, was set to "
                f"{self.expected}: {self.action}{why}")


@_payload(EventKind.SESSION_END)
@dataclass(frozen=True, slots=True, kw_only=True)
class SessionEnd(Payload):
    """The session ended, and why."""

    reason: str


_missing = [str(k) for k in EventKind if k not in PAYLOADS]
if _missing:  # pragma: no cover - a kind added without its payload class
    raise TypeError(f"event kinds without a payload class: {', '.join(_missing)}")


@dataclass(slots=True)
class Event:
    """One thing that happened, stamped with the controller's wall clock.

    The engine emits these (`Event.of(payload, ...)`); the session store journals them one
    JSON line each (`data` as recorded); the console and the session read `payload`.
    """

    kind: EventKind
    t: float = field(default_factory=now)
    pair: str | None = None
    host: str | None = None
    data: dict[str, Any] = field(default_factory=dict)
    # perf_counter() when the host's line that made this event arrived: lets the console time
    # an interval from the SSH channel to the screen (benches); never journaled
    arrived: float | None = field(default=None, compare=False, repr=False)
    _payload: Payload | None = field(default=None, init=False, compare=False, repr=False)

    @classmethod
    def of(cls, payload: Payload, t: float | None = None, pair: str | None = None,
           host: str | None = None, arrived: float | None = None) -> Event:
        """The event of a typed payload."""
        event = cls(payload.KIND, now() if t is None else t, pair, host, payload.to_data(),
                    arrived)
        event._payload = payload
        return event

    @property
    def payload(self) -> Any:
        """`data` as its kind's payload class (read once)."""
        if self._payload is None:
            self._payload = PAYLOADS[self.kind].from_data(self.data)
        return self._payload

    def to_json(self) -> dict[str, Any]:
        out: dict[str, Any] = {"kind": str(self.kind), "t": self.t}
        if self.pair is not None:
            out["pair"] = self.pair
        if self.host is not None:
            out["host"] = self.host
        if self.data:
            out["data"] = self.data
        return out

    @classmethod
    def from_json(cls, obj: dict[str, Any]) -> Event:
        return cls(kind=EventKind(obj["kind"]), t=float(obj["t"]), pair=obj.get("pair"),
                   host=obj.get("host"), data=dict(obj.get("data") or {}))


Handler = Callable[[Any, Event, Any], Any]


class EventReader:
    """The one dispatch from an event to its reader's handler: a subclass defines
    `on_<kind value>(self, event, payload)` for the kinds it reads (`on_interval`,
    `on_run_start`, ...); `dispatch` calls it, or `on_other` for a kind it does not read."""

    _handlers: ClassVar[dict[EventKind, Handler]] = {}

    def __init_subclass__(cls, **kwargs: Any) -> None:
        super().__init_subclass__(**kwargs)
        cls._handlers = {k: getattr(cls, f"on_{k.value}") for k in EventKind
                         if callable(getattr(cls, f"on_{k.value}", None))}

    def dispatch(self, event: Event) -> Any:
        handler = self._handlers.get(event.kind)
        if handler is None:
            return self.on_other(event)
        return handler(self, event, event.payload)

    def on_other(self, event: Event) -> Any:
        """A kind this reader has no handler for."""
        return None
