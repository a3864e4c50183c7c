"""Plain data shared by every layer: hosts, pairs, knobs, intervals, summaries (events: events.py).

No behaviour beyond small conveniences, and no imports from the rest of abtui, so any layer
(parsers, engine, store, stats, reports, UI) can use these without pulling the others in.
Units: bits per second and bytes as plain numbers, times in seconds, RTTs in milliseconds.
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field
from enum import StrEnum
from typing import Any, Protocol

from abtui.core.builds import Build


class Role(StrEnum):
    SENDER = "sender"
    RECEIVER = "receiver"


class Scope(StrEnum):
    """Which hosts of the chosen pairs a knob applies to."""

    SENDER = "sender"
    RECEIVER = "receiver"
    BOTH = "both"

    @property
    def roles(self) -> tuple[Role, ...]:
        """The roles in a pair this scope touches, sender first."""
        if self is Scope.SENDER:
            return (Role.SENDER,)
        if self is Scope.RECEIVER:
            return (Role.RECEIVER,)
        return (Role.SENDER, Role.RECEIVER)


class KnobKind(StrEnum):
    SYSCTL = "sysctl"
    ETHTOOL_FEATURE = "ethtool-feature"
    ETHTOOL_COALESCE = "ethtool-coalesce"
    MTU = "mtu"
    TUNNEL = "tunnel"
    IPERF3 = "iperf3"
    NETEM = "netem"  # Linux tc qdisc netem on the data device: delay, loss, rate
    KERNEL = "kernel"  # the kernel a host runs: a switch takes a boot (core/builds.py)
    MODULE = "module"  # a module's build or parameters: a switch reloads it


# the kinds whose values are builds, each reached by a boot or a reload (Knob.builds)
BUILD_KINDS = (KnobKind.KERNEL, KnobKind.MODULE)
# the kinds whose change always restarts the affected pairs' runs, whatever the profile says:
# the target, the iperf3 command or the host itself changes
ALWAYS_RESTART_KINDS = (KnobKind.TUNNEL, KnobKind.IPERF3, *BUILD_KINDS)
# the kinds that act on open connections (per packet: offloads, interrupt moderation, the
# qdisc), so a change may be measured on the run that is going on (Knob.restarts); every
# other kind (a sysctl, the MTU: read when a connection opens) restarts the runs by default
LIVE_KINDS = (KnobKind.ETHTOOL_FEATURE, KnobKind.ETHTOOL_COALESCE, KnobKind.NETEM)


class TunnelType(StrEnum):
    NONE = "none"
    WIREGUARD = "wireguard"
    IPSEC = "ipsec"
    VXLAN = "vxlan"
    GRE = "gre"


class LinkState(StrEnum):
    CONNECTING = "connecting"
    CONNECTED = "connected"
    FAILED = "failed"  # never connected: the first connect failed (the message says why)
    LOST = "lost"  # was connected, then dropped
    RECONNECTING = "reconnecting"
    CLOSED = "closed"


# [report] min_effect when the profile gives none: percent
DEFAULT_MIN_EFFECT = 1.0
# an alternation's stretches per value at most, without --max-runs (abtui.reports.sequential)
DEFAULT_MAX_RUNS = 20


class IntervalRate(Protocol):
    """What the throughput rule reads of an interval (`events.IntervalMeasured` has it)."""

    @property
    def bits_per_second(self) -> float: ...
    @property
    def omitted(self) -> bool: ...
    @property
    def direction(self) -> str | None: ...


class DatagramCounts(Protocol):
    """What the UDP loss rule reads of an interval (`events.IntervalMeasured` has it)."""

    @property
    def lost_packets(self) -> int | None: ...
    @property
    def packets(self) -> int | None: ...
    @property
    def jitter_ms(self) -> float | None: ...


def interval_rate(interval: IntervalRate) -> tuple[float, bool] | None:
    """An INTERVAL event's bits per second, and whether it is --bidir's way back (receiver
    -> sender, kept apart from the pair's own throughput); None when it counts in no
    throughput (omitted, or no rate: a recorded value is checked, not trusted).
    abtui.reports.stats reads its columns by the same rule."""
    bps: object = interval.bits_per_second
    if not isinstance(bps, int | float) or interval.omitted:
        return None
    return float(bps), interval.direction == "rx"


def interval_loss(interval: DatagramCounts) -> tuple[float | None, float | None]:
    """A UDP INTERVAL event's loss (percent of the datagrams due, lost / total as iperf3
    prints them) and jitter (ms), each None where the interval has none (TCP, no datagram
    due)."""
    lost: object = interval.lost_packets
    total: object = interval.packets
    jitter: object = interval.jitter_ms
    loss = (100.0 * lost / total if isinstance(lost, int) and isinstance(total, int)
            and total > 0 else None)
    return loss, float(jitter) if isinstance(jitter, int | float) else None


def tunnel_refusal(said: str) -> str | None:
    """Why a host cannot make a tunnel type, from what it said of it (`HostFacts.tunnels`:
    "yes", "kernel", "userspace", "module" or "no: why"); None when it can."""
    return said.removeprefix("no").lstrip(": ") if said.startswith("no") else None


@dataclass(frozen=True, slots=True)
class Pair:
    """Sender host, receiver host and the data-plane address the sender targets."""

    label: str
    sender: str
    receiver: str
    target: str
    sender_device: str | None = None
    receiver_device: str | None = None
    # per-pair overrides of test options (same keys as TestOptions)
    overrides: dict[str, Any] = field(default_factory=dict)

    def host(self, role: Role) -> str:
        return self.sender if role is Role.SENDER else self.receiver

    def device(self, role: Role) -> str | None:
        return self.sender_device if role is Role.SENDER else self.receiver_device


@dataclass(frozen=True, slots=True)
class Knob:
    """A named setting with its values and where it applies.

    `key` is the sysctl name, the ethtool feature or coalescing parameter, or the iperf3 option;
    `device` overrides the pair's data device for ethtool/mtu knobs; `pairs` empty means all.
    """

    name: str
    kind: KnobKind
    values: tuple[str, ...]
    key: str = ""
    device: str | None = None
    scope: Scope = Scope.BOTH
    pairs: tuple[str, ...] = ()
    binding: str | None = None
    # per-OS alternative keys, e.g. {"freebsd": "dev.ix.2.enable_aim"}
    os_keys: dict[str, str] = field(default_factory=dict)
    # per-OS alternative kinds, e.g. {"linux": KnobKind.ETHTOOL_COALESCE}
    os_kinds: dict[str, KnobKind] = field(default_factory=dict)
    # per-OS value translation: {"linux": {"0": "off", "1": "on", "2": "on"}}
    os_values: dict[str, dict[str, str]] = field(default_factory=dict)
    # the value to set when a session starts (None: leave the host's own value)
    initial: str | None = None
    # what the profile says of open connections (None: not said, the kind's default, see
    # `restarts`): `live = true` the setting acts on open traffic; `restart = true` only new
    # connections see it (`restart = false` is `live = true`, as it always meant)
    restart: bool | None = None
    live: bool | None = None
    # kernel and module knobs: each value's build, how a host reaches it (core/builds.py)
    builds: dict[str, Build] = field(default_factory=dict)

    @property
    def restarts(self) -> bool:
        """Whether a change of this knob restarts the affected pairs' runs, so that no phase
        counts traffic of a connection opened under another value. A knob acts live only
        when the profile says so (`live = true`, or `restart = false`) or when its kind and
        every per-OS kind act on open traffic (LIVE_KINDS); tunnels, iperf3 options and
        builds always restart."""
        if self.kind in ALWAYS_RESTART_KINDS:
            return True
        if self.live is not None:
            return not self.live
        if self.restart is not None:
            return self.restart
        return not all(k in LIVE_KINDS for k in (self.kind, *self.os_kinds.values()))

    def for_os(self, os_name: str) -> tuple[KnobKind, str]:
        """The kind and key this knob has on a host running `os_name` ("linux", "freebsd")."""
        os_name = os_name.lower()
        return self.os_kinds.get(os_name, self.kind), self.os_keys.get(os_name, self.key)

    def value_for_os(self, os_name: str, value: str) -> str:
        """`value` as written on a host running `os_name` (translated when the profile says)."""
        return self.os_values.get(os_name.lower(), {}).get(value, value)


DEFAULT_IPERF3 = "iperf3"


@dataclass(slots=True)
class TestOptions:
    """iperf3 and ping options for runs; `duration` 0 means continuous."""

    duration: float = 10.0
    interval: float = 1.0
    parallel: int = 1
    reverse: bool = False
    bidir: bool = False
    udp: bool = False
    bitrate: str | None = None
    omit: int = 0
    congestion: str | None = None
    bind: str | None = None
    port: int = 5201
    ping: bool = True
    ping_interval: float = 0.2
    # > 0: `ping -c N` on the idle link before iperf3 starts; 0: ping alongside iperf3
    ping_count: int = 0
    # a request/response load beside iperf3 (sockperf "ping-pong" or "under-load"; None: none)
    # at this many messages a second, over TCP or UDP
    sockperf: str | None = None
    sockperf_mps: int = 1000
    sockperf_tcp: bool = True
    # sample each host's CPU time during runs (a CPU event per host and sample)
    host_cpu: bool = True
    # `perf record` of every CPU of each profiled host at this rate (Hz); 0: no profile
    profile_hz: int = 0
    extra_args: tuple[str, ...] = ()
    # the iperf3 program on the hosts: a name looked up in PATH, or an absolute path
    iperf3: str = DEFAULT_IPERF3


@dataclass(frozen=True, slots=True)
class Watch:
    """A sysctl or command sampled on a host during a run, recorded as a series."""

    name: str
    role: Role
    # may hold `*` wildcards: every sysctl name the host lists that matches is its own series
    sysctl: str | None = None
    command: str | None = None
    interval: float = 1.0
    pairs: tuple[str, ...] = ()


@dataclass(slots=True)
class Plan:
    """A matrix of knob values (× directions × tunnel types), repeated and optionally shuffled."""

    matrix: tuple[str, ...] = ()
    repetitions: int = 1
    shuffle: bool = True
    pause: float = 2.0
    seed: int | None = None
    # "tx" (sender → receiver), "rx" (iperf3 -R), "bidir": the matrix's "direction" dimension
    directions: tuple[str, ...] = ()


@dataclass(slots=True)
class Profile:
    """A testbed and a plan, as loaded from TOML (see abtui.profile)."""

    name: str
    pairs: list[Pair]
    knobs: list[Knob] = field(default_factory=list)
    test: TestOptions = field(default_factory=TestOptions)
    watches: list[Watch] = field(default_factory=list)
    plan: Plan = field(default_factory=Plan)
    tunnels: tuple[str, ...] = ("none",)
    base_pair: str | None = None
    ssh_config: str | None = None
    known_hosts: str | None = None
    accept_new_host_keys: bool = False
    sudo: bool = False
    source_path: str | None = None
    source_text: str | None = None
    description: str = ""
    # [report] min_effect: the smallest change in percent worth resolving (live verdict)
    min_effect: float = DEFAULT_MIN_EFFECT
    # [report] layout: the procedure table the report opens with (abtui.reports.procedure);
    # its unit is the console's too (abtui.core.numbers.layout_units)
    layout: str | None = None

    def pair(self, label: str) -> Pair:
        for p in self.pairs:
            if p.label == label:
                return p
        raise KeyError(label)

    def knob(self, name: str) -> Knob:
        for k in self.knobs:
            if k.name == name:
                return k
        raise KeyError(name)


@dataclass(slots=True)
class HostFacts:
    """What a host told us about itself on connect."""

    alias: str
    os: str = ""
    hostname: str = ""
    kernel_release: str = ""
    kernel_version: str = ""
    cpu_model: str = ""
    cpu_count: int | None = None
    # the CPUs' maximum (else current) frequency, MHz: cycles per byte in the reports
    cpu_mhz: float | None = None
    # "own": the host's CPU figures are its own; "shared": a network namespace whose
    # /proc/stat is the whole machine's (abtui.core.cpu); "": cannot tell
    cpu_scope: str = ""
    iperf3_version: str = ""
    ping_version: str = ""
    nic_driver: str = ""
    nic_firmware: str = ""
    link_speed: str = ""
    # whose clock the host's figures are on (abtui.core.clock): "" its own, "icount:N" a
    # guest's instruction-counted time
    clock: str = ""
    # tunnel type -> "yes" | "kernel" | "userspace" | "module" | "no: why" (tunnel_refusal
    # reads it); empty when not asked (the profile uses no tunnel) or the host could not say
    tunnels: dict[str, str] = field(default_factory=dict)


@dataclass(slots=True)
class Interval:
    """One iperf3 interval: the aggregate of all streams (the [SUM] line when several)."""

    start: float
    end: float
    bytes: int
    bits_per_second: float
    retransmits: int | None = None
    cwnd_bytes: int | None = None
    omitted: bool = False
    # UDP
    jitter_ms: float | None = None
    lost_packets: int | None = None
    packets: int | None = None
    # which direction for --bidir ("tx"/"rx"), None otherwise
    direction: str | None = None

    def to_json(self) -> dict[str, Any]:
        return {
            "start": self.start,
            "end": self.end,
            "bytes": self.bytes,
            "bits_per_second": self.bits_per_second,
            "retransmits": self.retransmits,
            "cwnd_bytes": self.cwnd_bytes,
            "omitted": self.omitted,
        }


@dataclass(slots=True)
class CpuUtil:
    """iperf3's own CPU utilization of one side over its test (its `CPU Utilization:` line,
    `cpu_utilization_percent` in JSON): percent of one core, user + system = total."""

    total: float
    user: float
    system: float


@dataclass(slots=True)
class IperfSummary:
    """iperf3's end-of-test sender/receiver lines, and each side's CPU as iperf3 measured it
    (None when iperf3 did not print it: no -V, a side it never heard from)."""

    protocol: str = "tcp"
    sender_bits_per_second: float | None = None
    receiver_bits_per_second: float | None = None
    sender_bytes: int | None = None
    receiver_bytes: int | None = None
    retransmits: int | None = None
    jitter_ms: float | None = None
    lost_percent: float | None = None
    duration: float | None = None
    # the data's sender and receiver (--bidir: the client and the server)
    sender_cpu: CpuUtil | None = None
    receiver_cpu: CpuUtil | None = None


@dataclass(slots=True)
class PingReply:
    """One ping reply: its sequence number, round trip (None: lost) and time stamp."""

    seq: int
    rtt_ms: float | None
    timestamp: float | None = None


@dataclass(slots=True)
class PingSummary:
    """Ping's closing summary: sent, received, loss and round-trip statistics."""

    sent: int | None = None
    received: int | None = None
    loss_percent: float | None = None
    rtt_min_ms: float | None = None
    rtt_avg_ms: float | None = None
    rtt_max_ms: float | None = None
    rtt_stddev_ms: float | None = None


def now() -> float:
    """Wall-clock time used to stamp events (seconds since the epoch)."""
    return time.time()
