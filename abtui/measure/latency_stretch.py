"""What an alternation judges when it judges latency: a stretch's RTT percentile (`rtt p99`)
or mean (`rtt`), as its inverse (1000 / RTT in ms) so that, as with throughput, more is
better and the same blocks, boundary and family-wise rule apply (abtui.measure.alternate,
docs/sequential.md "Latency in the alternation").

A stretch's readings are its ping replies (each held for the ping interval, a lost one 0) or,
where the profile runs a request/response load, sockperf's round trips (abtui.measure.run.rr:
they come when each run ends, so such an alternation holds each value for one run). Its
percentile is the nearest-rank one of abtui.reports.latency (None with too few readings for
one: the stretch counts as one that measured nothing). A lost reply is the slowest of all.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence

from abtui.core.events import AnyEvent, EventKind, Ping, RequestResponse
from abtui.core.model import TestOptions

THROUGHPUT = "throughput"
RTT = "rtt"
STATS = ("p50", "p90", "p99", "p99.9")  # abtui.reports.latency.PERCENTILES
METRICS = (THROUGHPUT, RTT, *(f"{RTT} {s}" for s in STATS))

Reading = tuple[float, float]  # a value a second (1000 / RTT), the seconds it stands for
Source = Callable[[AnyEvent], Reading | list[Reading] | None]
Stat = Callable[[Sequence[float]], float | None]


def percentile_of(metric: str) -> float | None:
    """The percentile a metric judges (99.0 for `rtt p99`), None for a mean or throughput."""
    head, _, stat = metric.partition(" ")
    return float(stat[1:]) if head == RTT and stat in STATS else None


def needed(q: float) -> int:
    """The fewest readings whose q-th percentile is not simply the slowest one
    (abtui.reports.latency.needed)."""
    return 1 if q <= 50 else math.ceil(round(100.0 / (100.0 - q), 6))


def inverse_percentile(q: float) -> Stat:
    """A stretch's RTT q-th percentile (nearest rank) from its readings of 1000 / RTT, as
    1000 / that RTT; None with fewer than needed(q) readings."""

    def stat(values: Sequence[float]) -> float | None:
        n = len(values)
        if n < needed(q):
            return None
        rank = max(1, math.ceil(round(q / 100.0 * n, 9)))  # in the RTTs, slowest last
        return sorted(values)[n - rank]  # the inverses ascending: slowest first

    return stat


def ping_readings(interval_s: float) -> Source:
    """Each ping reply as 1000 / RTT (ms), held for the ping interval; a lost one 0."""

    def reading(event: AnyEvent) -> Reading | None:
        ping = event.payload if event.kind is EventKind.PING else None
        if not isinstance(ping, Ping):
            return None
        rtt = ping.rtt_ms
        return (1000.0 / rtt if rtt is not None and rtt > 0 else 0.0), interval_s

    return reading


def rr_readings(event: AnyEvent) -> list[Reading] | None:
    """A request/response interval's round trips (RR's bins), each as 1000 / RTT, the
    interval's seconds shared among them."""
    rr = event.payload if event.kind is EventKind.RR else None
    if not isinstance(rr, RequestResponse) or not isinstance(rr.bins, list) or not rr.n:
        return None
    each = max(rr.end - rr.start, 0.0) / rr.n
    out: list[Reading] = []
    for b in rr.bins:
        if isinstance(b, list) and len(b) == 2 and b[0] > 0 and b[1] > 0:
            out += [(1000.0 / float(b[0]), each)] * int(b[1])
    return out or None


def measure(test: TestOptions, metric: str) -> tuple[Source, Stat | None]:
    """What an alternation on `metric` reads from the events, and how a stretch's readings
    become its sample (None: their time-weighted mean, as throughput's)."""
    q = percentile_of(metric)
    source: Source = rr_readings if test.sockperf and q is not None else \
        ping_readings(test.ping_interval)
    return source, (inverse_percentile(q) if q is not None else None)
