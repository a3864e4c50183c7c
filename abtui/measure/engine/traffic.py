"""No flow but ours, watched while measuring: each data link's byte counters (LINK_BYTES,
read on a run's sender, abtui.measure.run.traffic) set against iperf3's own bytes over the
same span; traffic on the link beyond iperf3's by more than a few percent is a COMPETING
event ("competing traffic: 310 Mbit/s not ours") naming the span, its phase and the rate.

The rule (`judge_span`), per span of WINDOW reading periods (2 s at a 1 s interval,
sliding by one reading) of one host's device:
  link = 8 × (Δ tx bytes + Δ rx bytes − Δ packets × HEADER_BYTES) ÷ the host's seconds
  ours = iperf3's rate over the span (every pair whose sender or receiver is that host, both
         directions of --bidir: each interval weighted by its overlap with the span, over
         the time the intervals cover), plus its retransmitted segments at
         RETRANSMIT_BYTES each
  flagged when link − ours > max(FRACTION × ours, FLOOR_BPS) in this span and in the one
  before or after it on the same link (a span alone is not)
The per-packet allowance takes the headers iperf3 does not count (Ethernet, IP, TCP with
timestamps, a VLAN tag: ≤ 90 bytes) and the other direction's ACKs (all header) out of the
counters; a span iperf3 covers less than COVERAGE of (a run starting or ending) is not
judged. Intervals and readings are placed on the controller's clock (when each arrived);
the link's rate is over the host's own clock where it has one.

Why two spans: an interval that reaches the controller late (a busy controller, a burst on
the link's SSH channel) is placed partly in the next span, so one span reads more than ours
and the next less, by the rate's change between seconds: at 5–10 Gbit/s swinging 30 % a
second on a loaded 2-core machine, one span of 6 % beyond ours was seen with no other flow.
That error changes sign from one span to the next; another flow's bytes do not, so a flow
of two seconds or more is flagged in every span it fills, and a lone span is not.

A span's phase is the one its intervals share, unless a change of the pair began within the
span (a PHASE event's end) or an interval straddles one: then it has none. Late intervals
are why the change's own time counts: one that came just before the change, placed up to it,
can be all a span has, while another flow that began after the change is in its bytes (seen
once on the lab at load 15: the phase before the flow flagged at 24 Mbit/s).
"""

from __future__ import annotations

import asyncio
import contextlib
from collections import deque
from collections.abc import Sequence
from dataclasses import dataclass

from abtui.core import events
from abtui.core.events import AnyEvent, Event, EventKind
from abtui.core.model import Pair
from abtui.measure.ports import Emit

HEADER_BYTES = 90
RETRANSMIT_BYTES = 1514
FRACTION = 0.05
FLOOR_BPS = 1e6
COVERAGE = 0.9
KEEP_S = 10.0  # intervals and readings older than this are dropped
# a span runs over this many reading periods (sliding by one): a reply late by some ms makes
# one period long and the next short, and those errors cancel within a span
WINDOW = 2


@dataclass(frozen=True, slots=True)
class Reading:
    t: float  # the controller's clock when it came
    clock: float  # the host's (t where it has none)
    device: str
    bytes: int  # tx + rx
    packets: int  # tx + rx
    run: events.RunId


@dataclass(frozen=True, slots=True)
class Iv:
    pair: str
    end: float  # the controller's clock when it came
    seconds: float
    bps: float
    retransmits: int
    phase: int | None
    straddles: bool
    forward: bool  # the pair's own direction (not --bidir's way back)


@dataclass(frozen=True, slots=True)
class Verdict:
    """A judged span: the link's rate less headers, iperf3's, and what is beyond it."""

    link_bps: float
    iperf_bps: float
    excess_bps: float
    flagged: bool


def judge_span(delta_bytes: int, delta_packets: int, seconds: float, iperf_bps: float,
               retransmit_bps: float = 0.0) -> Verdict | None:
    """The rule (module docstring); None when the span cannot be judged (no time, counters
    that went back: a device reset)."""
    if seconds <= 0 or delta_bytes < 0 or delta_packets < 0:
        return None
    link = 8 * (delta_bytes - delta_packets * HEADER_BYTES) / seconds
    excess = link - iperf_bps - retransmit_bps
    return Verdict(link, iperf_bps, excess, excess > max(FRACTION * iperf_bps, FLOOR_BPS))


def overlap(a0: float, a1: float, b0: float, b1: float) -> float:
    return max(0.0, min(a1, b1) - max(a0, b0))


def _rates(ivs: Sequence[Iv], covered: Sequence[float]) -> tuple[float, float]:
    """iperf3's rate and its retransmissions' over a span: per pair and direction, its
    intervals' rates weighted by their overlap with the span, over the time they cover (a
    gap at a run's end or start, the last partial interval iperf3 never prints, is taken at
    the same rate: an idle gap makes ours larger, never a flag), summed."""
    groups: dict[tuple[str, bool], list[float]] = {}
    for iv, c in zip(ivs, covered, strict=True):
        if c > 0:
            g = groups.setdefault((iv.pair, iv.forward), [0.0, 0.0, 0.0])
            g[0] += iv.bps * c
            g[1] += 8 * RETRANSMIT_BYTES * iv.retransmits / iv.seconds * c
            g[2] += c
    return (sum(g[0] / g[2] for g in groups.values()),
            sum(g[1] / g[2] for g in groups.values()))


class TrafficJudge:
    """Fed every event (a bus subscriber); emits COMPETING for a flagged span, once the
    intervals that cover it have come."""

    def __init__(self, pairs: Sequence[Pair], emit: Emit) -> None:
        self._emit = emit
        self._hosts = {p.label: {p.sender, p.receiver} for p in pairs}
        self._senders = {p.label: p.sender for p in pairs}
        self._intervals: dict[str, deque[Iv]] = {}  # pair -> its recent intervals
        # (host, device) -> its last reading, and spans waiting for their intervals
        self._last: dict[tuple[str, str], deque[Reading]] = {}
        self._pending: list[tuple[str, Reading, Reading]] = []
        # (host, device) -> whether its last judged span was flagged, and its events not
        # emitted yet (a flagged span waits for its neighbour: the module docstring)
        self._before: dict[tuple[str, str], tuple[bool, list[AnyEvent]]] = {}
        self.judged = 0  # spans judged (tests, benches)
        # pair -> when its recent changes began (a PHASE event's `end`): a span across one
        # has no phase, whatever the intervals placed in it say (they are placed by when
        # they came: one late enough lies past the change it ran before)
        self._changes: dict[str, deque[float]] = {}

    def feed(self, event: AnyEvent) -> None:
        if event.kind is EventKind.INTERVAL and event.pair is not None:
            p = event.payload
            assert isinstance(p, events.IntervalMeasured)
            with contextlib.suppress(TypeError, ValueError):
                seconds = float(p.end) - float(p.start)
                if seconds > 0 and not p.omitted:
                    self._intervals.setdefault(event.pair, deque()).append(Iv(
                        event.pair, event.t, seconds, float(p.bits_per_second),
                        int(p.retransmits or 0), p.phase, bool(p.straddles),
                        p.direction != "rx"))
                    self._judge_pending(event.t)
        elif event.kind is EventKind.PHASE and event.pair is not None:
            phase = event.payload
            if isinstance(phase, events.Phase) and isinstance(phase.end, int | float):
                self._changes.setdefault(event.pair, deque(maxlen=8)).append(float(phase.end))
        elif event.kind is EventKind.LINK_BYTES and event.host is not None:
            p = event.payload
            assert isinstance(p, events.LinkBytes)
            reading = Reading(event.t, event.t if p.clock is None else float(p.clock),
                              str(p.device), int(p.tx_bytes) + int(p.rx_bytes),
                              int(p.tx_packets) + int(p.rx_packets), p.run)
            key = (event.host, reading.device)
            kept = self._last.setdefault(key, deque(maxlen=WINDOW))
            if len(kept) == WINDOW:
                self._pending.append((event.host, kept[0], reading))
            kept.append(reading)

    def _judge_pending(self, now: float) -> None:
        """Spans whose end an interval has passed are judged; too old ones dropped."""
        waiting = []
        for host, a, b in self._pending:
            if self._covered_until(host) >= b.t:
                self._judge(host, a, b)
            elif now - b.t < KEEP_S:
                waiting.append((host, a, b))
        self._pending = waiting
        for ivs in self._intervals.values():
            while ivs and now - ivs[0].end > KEEP_S:
                ivs.popleft()

    def _covered_until(self, host: str) -> float:
        """How far the intervals of the pairs whose sender is `host` have come."""
        ends = [ivs[-1].end for pair, ivs in self._intervals.items()
                if ivs and self._senders.get(pair) == host]
        return min(ends, default=0.0)

    def _judge(self, host: str, a: Reading, b: Reading) -> None:
        pairs = [p for p, hosts in self._hosts.items() if host in hosts]
        ivs = [iv for p in pairs for iv in self._intervals.get(p, ())]
        span = b.t - a.t
        if span <= 0:
            return
        covered = [overlap(iv.end - iv.seconds, iv.end, a.t, b.t) for iv in ivs]
        own = [c for c, iv in zip(covered, ivs, strict=True) if iv.forward
               and iv.pair == self._sampled_pair(host, pairs)]
        if sum(own) < COVERAGE * span:
            return
        iperf, retrans = _rates(ivs, covered)
        verdict = judge_span(b.bytes - a.bytes, b.packets - a.packets, b.clock - a.clock,
                             iperf, retrans)
        if verdict is None:
            return
        self.judged += 1
        key = (host, b.device)
        flagged_before, waiting = self._before.get(key, (False, []))
        if not verdict.flagged:
            self._before[key] = (False, [])
            return
        mine_events: list[AnyEvent] = []
        for pair in pairs:
            if self._senders.get(pair) != host:
                continue
            mine = [iv for iv, c in zip(ivs, covered, strict=True) if c > 0 and iv.pair == pair]
            phases = {iv.phase for iv in mine}
            across = any(a.t < x < b.t for x in self._changes.get(pair, ()))
            phase = phases.pop() if len(phases) == 1 and not across and not any(
                iv.straddles for iv in mine) else None
            payload = events.CompetingTraffic(
                run=b.run, phase=phase, device=b.device, start=a.t, end=b.t,
                link_bps=round(verdict.link_bps), iperf_bps=round(verdict.iperf_bps),
                excess_bps=round(verdict.excess_bps))
            mine_events.append(Event.of(payload, t=b.t, pair=pair, host=host))
        if flagged_before:  # this span and the one before it: both said
            for event in [*waiting, *mine_events]:
                self._later(event)
            mine_events = []
        self._before[key] = (True, mine_events)

    def _sampled_pair(self, host: str, pairs: list[str]) -> str:
        """The pair whose sender is `host` (the one whose runs read its counters)."""
        return next((p for p in pairs if self._senders.get(p) == host), pairs[0])

    def _later(self, event: AnyEvent) -> None:
        """Emitted after the event being delivered has reached every subscriber."""
        try:
            asyncio.get_running_loop().call_soon(self._emit, event)
        except RuntimeError:
            self._emit(event)
