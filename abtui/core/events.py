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

Payload classes are named for what happened (`IntervalMeasured`, `KnobChanged`,
`WatchSampled`), never after a `core.model` class: `model.Interval` is what a parser read,
`IntervalMeasured` the event that carries it.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import MISSING, FrozenInstanceError, dataclass, field, fields
from enum import StrEnum
from types import MappingProxyType
from typing import Any, ClassVar, Generic, Self, TypeVar, dataclass_transform

from abtui.core.builds import BOOT_METHODS
from abtui.core.model import interval_loss, interval_rate, now
from abtui.core.numbers import rate_unit


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
    RR = "rr"
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
    SWITCH = "switch"
    BISECT = "bisect"
    HOST_STATE = "host_state"
    LINK_BYTES = "link_bytes"
    COMPETING = "competing"
    PROFILE = "profile"
    COUNTERS = "counters"
    WHY = "why"
    SESSION_END = "session_end"


# A run's id: the engine's are strings; synthetic streams and older sessions number them.
RunId = str | int
# A field's metadata when the journal record leaves it out while it is None.
OPTIONAL = {"optional": True}
NO_EXTRA: Mapping[str, Any] = MappingProxyType({})
# Every payload is a frozen dataclass with slots, keyword-only; its __init__, equality, hash,
# repr and frozenness are Payload's own (the same as dataclass's, written once): the console
# imports this module before its first frame, and dataclass's code generation for them (an
# `exec` for each method of each class: 96 for `__init__`, `__setattr__` and `__delattr__`)
# was most of the import.
_T = TypeVar("_T")


@dataclass_transform(frozen_default=True, kw_only_default=True, field_specifiers=(field,))
def _payload_class(cls: type[_T]) -> type[_T]:
    return dataclass(init=False, slots=True, kw_only=True, repr=False, eq=False)(cls)


@_payload_class
class Payload:
    """One kind's `data`: typed for emitters and readers, the same dict in the journal."""

    KIND: ClassVar[EventKind]
    # set by _payload: (field name, left out while None) per field in record order, and
    # the field names
    _SPEC: ClassVar[tuple[tuple[str, bool], ...]] = ()
    _KNOWN: ClassVar[frozenset[str]] = frozenset()
    # set by _payload: (field name, its slot's setter) per field, to fill a payload read back
    _SETTERS: ClassVar[tuple[tuple[str, Callable[[object, object], None]], ...]] = ()
    # set by _payload: (field name, its slot's setter, default, default factory) per field,
    # for __init__ (MISSING where there is none)
    _INIT: ClassVar[tuple[tuple[str, Callable[[object, object], None], Any, Any], ...]] = ()

    extra: Mapping[str, Any] = field(default_factory=lambda: NO_EXTRA)

    def __init__(self, **values: Any) -> None:
        """The fields by keyword, as dataclass's `__init__` takes them (defaults and
        factories alike), set through their slots' descriptors."""
        for name, setter, default, factory in self._INIT:
            if name in values:
                setter(self, values.pop(name))
            elif default is not MISSING:
                setter(self, default)
            elif factory is not MISSING:
                setter(self, factory())
            else:
                raise TypeError(f"{self.__class__.__qualname__}.__init__() missing 1 required "
                                f"keyword-only argument: {name!r}")
        _set_extra(self, values.pop("extra") if "extra" in values else NO_EXTRA)
        if values:
            raise TypeError(f"{self.__class__.__qualname__}.__init__() got an unexpected "
                            f"keyword argument {next(iter(values))!r}")

    def __setattr__(self, name: str, value: object) -> None:
        raise FrozenInstanceError(f"cannot assign to field {name!r}")

    def __delattr__(self, name: str) -> None:
        raise FrozenInstanceError(f"cannot delete field {name!r}")

    def __getstate__(self) -> tuple[Any, ...]:
        return self._values()

    def __setstate__(self, state: tuple[Any, ...]) -> None:
        _set_extra(self, state[0])
        for (_, setter), value in zip(self._SETTERS, state[1:], strict=True):
            setter(self, value)

    def _values(self) -> tuple[Any, ...]:
        return (self.extra, *(getattr(self, name) for name, _ in self._SPEC))

    def __eq__(self, other: object) -> bool:
        if other.__class__ is not self.__class__:
            return NotImplemented
        return self._values() == other._values()

    def __hash__(self) -> int:
        return hash((self.__class__, self._values()))

    def __repr__(self) -> str:
        said = ", ".join(f"{name}={getattr(self, name)!r}"
                         for name in ("extra", *(name for name, _ in self._SPEC)))
        return f"{self.__class__.__qualname__}({said})"

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
    def from_data(cls, data: Mapping[str, Any]) -> Self:
        """The payload of a recorded `data` object, its values as recorded (a foreign or
        hand-edited record may hold anything: readers check what they use); a missing key
        reads as None, an unknown one goes to `extra`.

        Fields are set through their slots' descriptors (no `__init__`: a recorded value is
        kept even where it breaks a field's type, and no `exec`-generated code)."""
        payload = object.__new__(cls)
        get = data.get
        for name, setter in cls._SETTERS:
            setter(payload, get(name))
        _set_extra(payload, NO_EXTRA if data.keys() <= cls._KNOWN else MappingProxyType(
            {k: v for k, v in data.items() if k not in cls._KNOWN}))
        return payload


_set_extra: Callable[[object, object], None] = Payload.extra.__set__  # type: ignore[attr-defined]
PAYLOADS: dict[EventKind, type[Payload]] = {}
P = TypeVar("P", bound=type[Payload])
PT = TypeVar("PT", bound=Payload)


def _payload(kind: EventKind) -> Callable[[P], P]:
    def register(cls: P) -> P:
        cls.KIND = kind
        own = [f for f in fields(cls) if f.name != "extra"]
        cls._SPEC = tuple((f.name, bool(f.metadata.get("optional"))) for f in own)
        cls._KNOWN = frozenset(f.name for f in own)
        cls._SETTERS = tuple((f.name, getattr(cls, f.name).__set__) for f in own)
        cls._INIT = tuple((name, setter, f.default, f.default_factory)
                          for (name, setter), f in zip(cls._SETTERS, own, strict=True))
        PAYLOADS[kind] = cls
        return cls
    return register


@_payload(EventKind.SESSION_START)
@_payload_class
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
@_payload_class
class Facts(Payload):
    """A host's facts, asdict(HostFacts) (host set)."""

    facts: dict[str, Any]


@_payload(EventKind.LINK)
@_payload_class
class Link(Payload):
    """A host's link changed state (a LinkState value) (host set)."""

    state: str
    message: str


@_payload(EventKind.ORIGINAL)
@_payload_class
class Original(Payload):
    """A setting's value before abtui first touched it (host set)."""

    knob: str
    key: str
    value: str
    device: str | None
    kind: str


@_payload(EventKind.CONFIG)
@_payload_class
class Config(Payload):
    """Every knob's value as read from the hosts on connect: the pair's first configuration
    (pair set)."""

    config: dict[str, str]


@_payload(EventKind.KNOB)
@_payload_class
class KnobChanged(Payload):
    """A change applied on these pairs (labels) and hosts (aliases)."""

    knob: str
    value: str
    pairs: list[str]
    hosts: list[str]


@_payload(EventKind.KNOB_ERROR)
@_payload_class
class KnobError(Payload):
    """A change refused: nothing was changed."""

    knob: str
    value: str
    message: str


@_payload(EventKind.TUNNEL)
@_payload_class
class Tunnel(Payload):
    """The tunnel type in use and iperf3's new target (pair set)."""

    type: str
    target: str


@_payload(EventKind.RUN_START)
@_payload_class
class RunStart(Payload):
    """A run started (pair set): its configuration, the engine's phase, the sender's clock at
    release and its skew from the first sender's, asdict(TestOptions), target and port, and
    `argv`: the iperf3 client command exactly as it ran, as a reader would type it (the
    program as the profile names it, no `stdbuf`/shell wrapper); absent in sessions recorded
    before abtui kept it."""

    run: RunId
    config: dict[str, str]
    phase: int | None = field(default=None, metadata=OPTIONAL)
    host_clock: float | None
    skew_ms: float | None
    options: dict[str, Any]
    target: str | None = field(default=None, metadata=OPTIONAL)
    port: int | None = field(default=None, metadata=OPTIONAL)
    argv: list[str] | None = field(default=None, metadata=OPTIONAL)


# an interval's span on the controller's clock is the duration before it arrived, widened by
# this for delivery (phases and the alternation's stretches err towards leaving it out)
SLACK_S = 0.05


@_payload(EventKind.INTERVAL)
@_payload_class
class IntervalMeasured(Payload):
    """One iperf3 interval (pair set): model.Interval's fields and the phase it counts in;
    `straddles` when it began before a knob change and ended after (counted in no phase).
    `direction` for --bidir ("rx": receiver -> sender); UDP adds the receiving side's
    `jitter_ms`, `lost_packets` and `packets` (the datagrams due, lost ones included)."""

    run: RunId
    phase: int | None
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
        return interval_rate(self)

    def loss(self) -> tuple[float | None, float | None]:
        """model.interval_loss: UDP loss (%) and jitter (ms)."""
        return interval_loss(self)


@_payload(EventKind.PING)
@_payload_class
class Ping(Payload):
    """One ping reply (pair set); rtt_ms None when it timed out."""

    run: RunId
    phase: int | None
    seq: int | None
    rtt_ms: float | None


@_payload(EventKind.RR)
@_payload_class
class RequestResponse(Payload):
    """A request/response load's round trips (sockperf) in one interval of a run and one
    phase (pair set): `start`/`end` seconds since the run was released, the count, the mean
    and nearest-rank percentiles (ms; None with too few for one), and every round trip as
    [ms to 3 significant digits, count] bins, from which a phase's percentiles are read."""

    run: RunId
    phase: int | None
    start: float
    end: float
    n: int
    avg_ms: float | None
    p50_ms: float | None
    p90_ms: float | None
    p99_ms: float | None
    p999_ms: float | None
    max_ms: float | None
    bins: list[list[float]]


@_payload(EventKind.WATCH)
@_payload_class
class WatchSampled(Payload):
    """A watched sysctl's value during a run (pair and host set)."""

    run: RunId
    name: str
    value: float | str | None


@_payload(EventKind.CPU)
@_payload_class
class Cpu(Payload):
    """A host's CPU sample during a run (pair and host set): the ticks each state gained
    since the host's previous sample, in abtui.core.cpu.FIELDS order, over all its CPUs
    (`total`) and per CPU (`cpus`); `role` the side the host is on ("sender", "receiver");
    the phase it counts in (none when `straddles` a knob change)."""

    run: RunId
    role: str
    phase: int | None
    straddles: bool
    total: list[int]
    cpus: list[list[int]]


@_payload(EventKind.RUN_END)
@_payload_class
class RunEnd(Payload):
    """A run ended (pair set): status "ok", "error", "incomplete" or "stopped";
    asdict(IperfSummary) and asdict(PingSummary) or None; --bidir adds the receiver ->
    sender direction's summary."""

    run: RunId
    status: str
    summary: dict[str, Any] | None
    ping: dict[str, Any] | None
    message: str
    reverse_summary: dict[str, Any] | None = field(default=None, metadata=OPTIONAL)
    # the request/response load's own summary (sockperf's avg, percentiles, drops), if any
    rr: dict[str, Any] | None = field(default=None, metadata=OPTIONAL)


@_payload(EventKind.PHASE)
@_payload_class
class Phase(Payload):
    """A phase closed (pair set): its id, configuration and span."""

    phase: int | None
    config: dict[str, str]
    start: float | None
    end: float | None


@_payload(EventKind.PROGRESS)
@_payload_class
class Progress(Payload):
    """Plan mode: steps done of total, and the estimated seconds left."""

    done: int
    total: int
    eta_s: float | None


@_payload(EventKind.SKEW)
@_payload_class
class Skew(Payload):
    """A synchronized start: the spread of the senders' clocks, and each pair's clock."""

    skew_ms: float
    clocks: dict[str, float | None]


@_payload(EventKind.ERROR)
@_payload_class
class Error(Payload):
    """Something failed (pair and/or host may be set)."""

    message: str


@_payload(EventKind.MARK)
@_payload_class
class Mark(Payload):
    """A note on the timeline. An alternation's end mark carries its verdicts as rows
    (`verdicts`: one per pair and value compared, the keys of
    abtui.reports.alternation.COLUMNS), which the reports' alternation table reads; a
    bisection's step mark its row (`bisect`), which the reports' bisect table reads."""

    text: str
    verdicts: list[dict[str, Any]] | None = field(default=None, metadata=OPTIONAL)
    # a bisection's step (abtui.measure.bisect.search.Step.row), or its answer (`answer` set)
    bisect: dict[str, Any] | None = field(default=None, metadata=OPTIONAL)


@_payload(EventKind.RESTORE)
@_payload_class
class Restore(Payload):
    """A setting set back on exit (host set). `left`: the value found instead of the one
    abtui wrote, so it was left as it is (someone else set it since)."""

    knob: str
    value: str
    ok: bool
    message: str
    left: str | None = field(default=None, metadata=OPTIONAL)


@_payload(EventKind.SWITCH)
@_payload_class
class BuildSwitch(Payload):
    """A host switching to a build (a kernel by a boot, a module by a reload), host set:
    `stage` is `booting` (begun), `up` (back and verified: `build` is what the host reports,
    `seconds` how long it took) or `failed` (`message` says why; nothing is recorded under
    the build)."""

    knob: str
    value: str
    method: str
    stage: str
    build: str = ""
    seconds: float | None = field(default=None, metadata=OPTIONAL)
    message: str = ""

    @property
    def boots(self) -> bool:
        """The switch boots the host (a kernel), rather than reloading a module."""
        return self.method in BOOT_METHODS

    def line(self, host: str | None) -> str:
        """`lab-a-rcv: booting 6.1.0-57-amd64 (kexec)…`, `... up in 34 s on ...`."""
        who = f"{host}: " if host else ""
        verb = "booting" if self.boots else "reloading"
        took = f" in {self.seconds:.1f} s" if self.seconds is not None else ""
        if self.stage == "booting":
            return f"{who}{verb} {self.value} ({self.method})…"
        if self.stage == "up":
            return f"{who}{self.value} up{took}" + (f": {self.build}" if self.build else "")
        return f"{who}switch to {self.value} failed{took}: {self.message}"


@_payload(EventKind.DRIFT)
@_payload_class
class Drift(Payload):
    """A knob's value on a host other than its pair's configuration (host set): `value` what
    the host has, `expected` what abtui set or read before, `action` what abtui did about it.
    Found after a reconnect (`re-applied`, or `relabelled` with the reason in `message`), or
    by reading back what the session set (`since` set: someone else changed `key` between
    `since` and `until`, time.time(); the value is left as found, never overwritten, and what
    was measured between the two times belongs to no phase)."""

    knob: str
    value: str
    expected: str
    pairs: list[str]
    action: str
    message: str = ""
    # the setting, as the host names it (`net.ipv4.tcp_rmem`, `gro on eth0`)
    key: str | None = field(default=None, metadata=OPTIONAL)
    since: float | None = field(default=None, metadata=OPTIONAL)
    until: float | None = field(default=None, metadata=OPTIONAL)
    # True: `expected` is the host's own value abtui read (and named the phase by), not one
    # it wrote
    read: bool | None = field(default=None, metadata=OPTIONAL)

    def line(self, host: str | None) -> str:
        """The sentence the console log shows."""
        why = f" ({self.message})" if self.message else ""
        if self.since is not None:
            what = f"{self.knob} ({self.key})" if self.key and self.key != self.knob \
                else self.knob
            until = f" and {_clock(self.until)}" if self.until is not None else ""
            had = "read" if self.read else "set"
            return (f"{what} on {host} changed out of band to {self.value!r} (abtui had "
                    f"{had} {self.expected!r}), by someone else between {_clock(self.since)}"
                    f"{until}: {self.action}{why}")
        return (f"{self.knob} on {host} is {self.value} after reconnect, was set to "
                f"{self.expected}: {self.action}{why}")


def _clock(t: float | None) -> str:
    """A time.time() as the local clock reads it, to the second."""
    import time

    return time.strftime("%H:%M:%S", time.localtime(t)) if t is not None else "?"


@_payload(EventKind.BISECT)
@_payload_class
class BisectLook(Payload):
    """A bisection's step as it goes (abtui.measure.bisect.run): at its start and once a
    block, the candidate (`index` in the candidates) compared with the good one, the
    blocks so far of at most `max_blocks`, the Δ with its interval of the pair that would
    decide it (ends None while not bounded), and the call it would make now (`call`: good
    or bad; None while neither). The step's own call is its mark (Mark.bisect)."""

    number: int
    candidate: str
    index: int
    good: str
    blocks: int
    max_blocks: int
    call: str | None = field(default=None, metadata=OPTIONAL)
    pct: float | None = field(default=None, metadata=OPTIONAL)
    low: float | None = field(default=None, metadata=OPTIONAL)
    high: float | None = field(default=None, metadata=OPTIONAL)
    pair: str = ""


@_payload(EventKind.HOST_STATE)
@_payload_class
class HostStateRead(Payload):
    """What shapes a host's numbers besides the knobs (abtui.remote.host_state), read at the
    session's `moment` ("start": before abtui set anything; "end": after it set every knob
    back), host set: `device` the data device, `items` {item: value} (the data device named
    `@dev` in them), `unavailable` {what: why} for what the host could not say."""

    moment: str
    device: str
    items: dict[str, str]
    unavailable: dict[str, str]


@_payload(EventKind.LINK_BYTES)
@_payload_class
class LinkBytes(Payload):
    """The data device's counters on a run's sender (pair and host set), read on the run's
    beat (abtui.remote.traffic): `clock` the host's time (None where it has no sub-second
    clock: the event's time stands in)."""

    run: RunId
    device: str
    clock: float | None
    tx_bytes: int
    rx_bytes: int
    tx_packets: int
    rx_packets: int


@_payload(EventKind.COMPETING)
@_payload_class
class CompetingTraffic(Payload):
    """Traffic on a pair's data link beyond iperf3's own (abtui.measure.engine.traffic), pair
    and host set: over `start`..`end` (the controller's clock) the device carried `link_bps`
    (its per-packet headers allowed for) where iperf3 moved `iperf_bps`; `excess_bps` is the
    rest, not ours. `phase` the phase it falls in (None across a change)."""

    run: RunId
    phase: int | None
    device: str
    start: float
    end: float
    link_bps: float
    iperf_bps: float
    excess_bps: float

    def line(self, host: str | None) -> str:
        """`competing traffic: 310 Mbit/s not ours on hflA0 (lab-a-snd)`."""
        unit = rate_unit([self.excess_bps])
        where = f" on {self.device}" + (f" ({host})" if host else "")
        return (f"competing traffic: {self.excess_bps / unit.div:.0f} {unit.name} not "
                f"ours{where}")


@_payload(EventKind.PROFILE)
@_payload_class
class Profiled(Payload):
    """One window of a host's profile during a run (pair and host set): `perf record` of
    every CPU at `hz`, sampling `event` (cycles, or cpu-clock where the host has no PMU),
    folded into stacks (`stacks`: abtui.core.folded's packed text, thread;root;…;leaf COUNT)
    from `start` to `end` on the controller's clock; `shared`: the host shares its kernel
    with others (a namespace host: the profile is the whole machine's)."""

    run: RunId
    role: str
    start: float
    end: float
    event: str
    hz: int
    samples: int
    stacks: str
    shared: bool = False


@_payload(EventKind.COUNTERS)
@_payload_class
class CountersSampled(Payload):
    """A profiled host's counters at `at` (the controller's clock; pair and host set): the
    packed `counter value` lines of abtui.remote.counters (softnet, softirqs, nstat, kernel
    threads' CPU ticks), running totals the readers turn into rates."""

    run: RunId
    role: str
    at: float
    values: str
    shared: bool = False


@_payload(EventKind.WHY)
@_payload_class
class WhyFound(Payload):
    """An alternation's profiles judged at its end: per pair, host and value compared, each
    frame's share change with its interval over blocks (`rows`: the keys of
    abtui.reports.why.ROW_KEYS) and each side's merged stacks for the differential flame
    graph (`flames`: pair, host, value, base, and the packed stacks of each)."""

    rows: list[dict[str, Any]]
    flames: list[dict[str, Any]] = field(default_factory=list)
    # the counters' rates per value and their change in % with its interval
    # (abtui.reports.why.COUNTER_KEYS)
    counters: list[dict[str, Any]] | None = field(default=None, metadata=OPTIONAL)


@_payload(EventKind.SESSION_END)
@_payload_class
class SessionEnd(Payload):
    """The session ended, and why."""

    reason: str


_missing = [str(k) for k in EventKind if k not in PAYLOADS]
if _missing:  # pragma: no cover - a kind added without its payload class
    raise TypeError(f"event kinds without a payload class: {', '.join(_missing)}")


PayloadT = TypeVar("PayloadT", bound=Payload, covariant=True)


class Event(Generic[PayloadT]):
    """One thing that happened, stamped with the controller's wall clock: `Event[P]` carries
    a payload of class P (`Event.of(events.IntervalMeasured(...))` is an
    `Event[IntervalMeasured]`; an event read back from a journal is an `Event[Payload]`).

    The engine emits these; the session store journals them one JSON line each (`record()`:
    the payload's `data` as recorded); the console and the session read `payload`. Built
    from a payload (`of`) or from a journal's line (`from_json`), never from a bare dict.
    """

    __slots__ = ("_payload", "_record", "arrived", "host", "kind", "pair", "t")

    kind: EventKind
    t: float
    pair: str | None
    host: str | None
    # perf_counter() when the host's line that made this event arrived: lets the console time
    # an interval from the SSH channel to the screen (benches); never journaled
    arrived: float | None

    _record: dict[str, Any]  # the journal's `data` object
    _payload: Payload | None  # made from it on first read, for an event read back

    @classmethod
    def of(cls, payload: PT, t: float | None = None, pair: str | None = None,
           host: str | None = None, arrived: float | None = None) -> Event[PT]:
        """The event of a typed payload."""
        event: Event[PT] = object.__new__(Event)
        event.kind = payload.KIND
        event.t = now() if t is None else t
        event.pair = pair
        event.host = host
        event.arrived = arrived
        event._record = payload.to_data()
        event._payload = payload
        return event

    @property
    def payload(self) -> PayloadT:
        """The payload, typed (read from the record once)."""
        if self._payload is None:
            self._payload = PAYLOADS[self.kind].from_data(self._record)
        return self._payload  # type: ignore[return-value]  # PAYLOADS[kind] is PayloadT

    def recorded(self, key: str) -> bool:
        """Whether the record names `key` (a payload reads a missing key as None: this tells
        a journal older than a field from one that recorded None)."""
        return key in self._record

    def record(self) -> dict[str, Any]:
        """The journal's `data` object, a copy."""
        return dict(self._record)

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, Event):
            return NotImplemented
        return (self.kind, self.t, self.pair, self.host, self._record) == (
            other.kind, other.t, other.pair, other.host, other._record)

    __hash__ = None  # type: ignore[assignment]  # mutable, like the dataclass it was

    def __repr__(self) -> str:
        return (f"Event(kind={self.kind!r}, t={self.t!r}, pair={self.pair!r}, "
                f"host={self.host!r}, data={self._record!r})")

    def to_json(self) -> dict[str, Any]:
        out: dict[str, Any] = {"kind": str(self.kind), "t": self.t}
        if self.pair is not None:
            out["pair"] = self.pair
        if self.host is not None:
            out["host"] = self.host
        if self._record:
            out["data"] = self._record
        return out

    @classmethod
    def from_json(cls, obj: Mapping[str, Any]) -> Event[Payload]:
        """The event of a journal's line; its payload is made from its `data` on first
        read."""
        event: Event[Payload] = object.__new__(Event)
        event.kind = EventKind(obj["kind"])
        event.t = float(obj["t"])
        event.pair = obj.get("pair")
        event.host = obj.get("host")
        event.arrived = None
        event._record = dict(obj.get("data") or {})
        event._payload = None
        return event


# Any event, its payload read as its kind's class
AnyEvent = Event[Payload]
Handler = Callable[[Any, AnyEvent, Any], Any]


class EventReader:
    """The one dispatch from an event to its reader's handler: a subclass defines
    `on_<kind value>(self, event, payload)` for the kinds it reads (`on_interval(self,
    event: Event[IntervalMeasured], payload: IntervalMeasured)`, ...); `dispatch` calls it,
    or `on_other` for a kind it does not read."""

    _handlers: ClassVar[dict[EventKind, Handler]] = {}

    def __init_subclass__(cls, **kwargs: Any) -> None:
        super().__init_subclass__(**kwargs)
        cls._handlers = {k: getattr(cls, f"on_{k.value}") for k in EventKind
                         if callable(getattr(cls, f"on_{k.value}", None))}

    def dispatch(self, event: AnyEvent) -> Any:
        handler = self._handlers.get(event.kind)
        if handler is None:
            return self.on_other(event)
        return handler(self, event, event.payload)

    def on_other(self, event: AnyEvent) -> Any:
        """A kind this reader has no handler for."""
        return None
