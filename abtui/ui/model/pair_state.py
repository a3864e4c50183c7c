"""One pair as its pane shows it: its series (sparkline history), latest figures, link states,
kernels and CPU, and the running numbers of its phase. Apart from abtui.ui.model.state (which folds
events into these) so the panes and widgets read a plain record; no Textual.
"""

from __future__ import annotations

import math
from collections import deque
from dataclasses import dataclass, field
from typing import Any

from abtui.core import events
from abtui.core.model import LinkState
from abtui.reports.throughput import Segment, configuration_rate

HISTORY = 120  # intervals kept per sparkline


@dataclass(slots=True)
class Running:
    """Count, mean, min and max of a stream of numbers (a phase's, a segment's)."""

    n: int = 0
    total: float = 0.0
    lo: float = math.inf
    hi: float = -math.inf

    def add(self, x: float) -> None:
        self.n += 1
        self.total += x
        self.lo = min(self.lo, x)
        self.hi = max(self.hi, x)

    @property
    def mean(self) -> float:
        return self.total / self.n if self.n else math.nan


@dataclass(slots=True)
class Binned:
    """A phase's request/response round trips (sockperf's, RR events' bins): ms -> count, and
    their nearest-rank percentiles (abtui.reports.latency's rule: None with too few)."""

    counts: dict[float, int] = field(default_factory=dict)
    n: int = 0

    def add(self, value: float, count: int) -> None:
        self.counts[value] = self.counts.get(value, 0) + count
        self.n += count

    def percentile(self, q: float) -> float | None:
        if not self.n or self.n < (1 if q <= 50 else math.ceil(round(100 / (100 - q), 6))):
            return None
        rank, seen = max(1, math.ceil(round(q / 100 * self.n, 9))), 0
        for value in sorted(self.counts):
            seen += self.counts[value]
            if seen >= rank:
                return value
        return None


@dataclass(slots=True)
class PairState:
    """One pair's pane: what its hosts have, its series, latest figures and link states."""

    label: str
    sender: str
    receiver: str
    config: dict[str, str]  # what the hosts have (read on connect, then each applied flip)
    phase_id: Any = None  # the engine's phase in force (None: a flip opened one, id not seen)
    original: dict[str, str] = field(default_factory=dict)  # as read on connect
    bps: deque[float] = field(default_factory=lambda: deque(maxlen=HISTORY))
    rtt: deque[float] = field(default_factory=lambda: deque(maxlen=HISTORY))
    markers: deque[bool] = field(default_factory=lambda: deque(maxlen=HISTORY))
    pending_marker: bool = False
    phase: Running = field(default_factory=Running)  # its intervals' rates (min, max)
    # the phase's stretches (one per run it spans): its figure is theirs, phase_rate
    phase_segments: list[Segment] = field(default_factory=list)
    rtt_phase: Running = field(default_factory=Running)
    # the phase's request/response round trips (sockperf), which come as each run ends
    rr_phase: Binned = field(default_factory=Binned)
    # the phase a flip just ended: its last ping replies may still come (gathered on the
    # host, a second at a time) once the new phase's numbers began
    left_phase: Any = None
    segment: Segment | None = None  # the current stretch, in its phase row
    links: dict[str, str] = field(default_factory=dict)  # host -> LinkState
    kernels: dict[str, str] = field(default_factory=dict)  # host -> release
    tunnel: str = "none"
    retransmits: int | None = None
    retransmits_total: int | None = None  # None until an interval reports its retransmits
    cwnd: int | None = None
    rx_bps: float | None = None  # --bidir: the latest receiver -> sender interval
    # UDP: the latest interval's datagrams lost (%) and jitter (ms); None for TCP
    loss_pct: float | None = None
    jitter_ms: float | None = None
    intervals: int = 0
    error: str = ""
    status: str = "idle"
    # host CPU, latest sample: "sender"/"receiver" -> (busy % of one core, softirq %);
    # hosts whose CPU figures are the whole machine's (namespace hosts)
    cpu: dict[str, tuple[float, float]] = field(default_factory=dict)
    cpu_shared: set[str] = field(default_factory=set)
    units: str = "bits"  # its rates in bits or bytes per second (the profile's report layout)

    @property
    def phase_rate(self) -> float | None:
        """The phase's throughput as every table defines it (abtui.reports.throughput: the
        bits of its counted intervals over their seconds, per run, averaged over its runs),
        not the plain mean of interval rates, which a short last interval skews; None before
        any counted time."""
        return configuration_rate(self.phase_segments)

    @property
    def link(self) -> str:
        """The worst link state of the pair's hosts (what the pane shows)."""
        states = [self.links.get(h, LinkState.CONNECTING) for h in (self.sender, self.receiver)]
        for s in (LinkState.FAILED, LinkState.LOST, LinkState.RECONNECTING, LinkState.CLOSED,
                  LinkState.CONNECTING):
            if s in states:
                return str(s)
        return str(LinkState.CONNECTED)

    def show(self, bps: float, d: events.IntervalMeasured) -> None:
        """One interval in the pair's own direction, as the pane shows it: its series, the
        latest figures and counters, the link back up (data flows)."""
        self.intervals += 1
        self.bps.append(bps)
        self.markers.append(self.pending_marker)
        self.pending_marker = False
        retr = d.retransmits
        self.retransmits = retr if isinstance(retr, int) else None
        if isinstance(retr, int):
            self.retransmits_total = (self.retransmits_total or 0) + retr
        cwnd = d.cwnd_bytes
        self.cwnd = cwnd if isinstance(cwnd, int) else None
        self.loss_pct, self.jitter_ms = d.loss()
        if self.link != LinkState.CONNECTED and self.links:
            # data flowing means the link is back, whatever the last LINK event said
            for h in self.links:
                self.links[h] = str(LinkState.CONNECTED)
