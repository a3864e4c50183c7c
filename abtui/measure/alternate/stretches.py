"""The alternation's stretches: each pair's stretch values by schedule index, taken from the
engine's events (throughput, or a latency measure: abtui.measure.latency_stretch)."""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from abtui.core.events import (
    SLACK_S,
    AnyEvent,
    BuildSwitch,
    CompetingTraffic,
    Drift,
    EventKind,
    IntervalMeasured,
    Link,
    RunEnd,
)
from abtui.core.model import LinkState
from abtui.reports.throughput import Segment, counted


@dataclass(slots=True)
class Stretches:
    """Each pair's stretch values by schedule index, from the engine's intervals: `begin`
    opens a stretch (closing the one in force), `close` ends it. Only intervals that began
    at or after the stretch opened count in it (on the controller's clock, as its events
    tell it: a stretch opens at the latest event's time), so a stretch is timed the same way
    at every boundary, whether the value changed or not.

    A stretch held its full time (`close(full=True)`: a boundary of the schedule) counts its
    bits over at least `min_seconds`; one that moved nothing (its intervals carried nothing, or
    none came because the pair's run failed, RUN_END "error", and has carried nothing since)
    counts at rate 0: evidence about its value, counted per value and judged on its own
    (abtui.reports.deaths), never missing data. A full stretch in which no interval counted
    while the run was not failing (one too short for an interval that began and ended in it, or
    one delivered late) is left out and said (`empty`); so is one during which a host of the
    pair lost its link (`hosts`) other than by a boot into the stretch's build (a plan-mode
    stretch opens before its switch), or failed to switch to it, and one a stop cut short before
    it counted `min_seconds`: missing data not of the value's doing. A stretch that overlaps the
    time in which someone else changed a setting of the pair's hosts (a DRIFT read back: between
    its `since` and `until`) is left out too (`drifted`), even once closed: it ran under a value
    nobody can name; after a drift of the alternated knob itself, every later stretch of the
    pair is."""

    knob: str
    values: tuple[str, ...]
    pairs: tuple[str, ...]
    min_seconds: float
    hosts: Mapping[str, tuple[str, ...]] = field(default_factory=dict)  # pair -> its hosts
    samples: dict[str, dict[str, list[float]]] = field(default_factory=dict)
    taken: dict[str, dict[int, float]] = field(default_factory=dict)
    lost: dict[str, set[int]] = field(default_factory=dict)  # pair -> link lost: left out
    empty: dict[str, set[int]] = field(default_factory=dict)  # pair -> nothing counted
    # pair -> stretches a setting changed out of band in (a DRIFT read back): left out
    drifted: dict[str, set[int]] = field(default_factory=dict)
    # pair -> stretches a flagged span of competing traffic overlaps: kept, and flagged
    competing: dict[str, set[int]] = field(default_factory=dict)
    spans: dict[int, tuple[float, float]] = field(default_factory=dict)  # closed: open, close
    _value_at: dict[tuple[str, int], str] = field(default_factory=dict)  # (pair, i) -> value
    # what a stretch measures: an event's (value a second, seconds) when it counts; the
    # throughput of the counted intervals, or (latency_stretch.ping_readings) the ping replies
    source: Callable[[AnyEvent], Any] = counted
    # a stretch's sample from its readings' values (a latency percentile:
    # abtui.measure.latency_stretch), instead of their time-weighted mean; None: the mean
    stat: Callable[[Sequence[float]], float | None] | None = None
    _vals: dict[str, list[float]] = field(default_factory=dict)  # pair -> readings (stat)
    closed: int = 0  # stretches closed so far (the schedule's first `closed` entries)
    index: int | None = None  # the stretch in force
    held: dict[str, str] = field(default_factory=dict)  # pair -> its value in that stretch
    opened: float = -math.inf  # when the stretch in force opened (the events' clock)
    latest: float = -math.inf  # the latest event's time
    _open: dict[str, Segment] = field(default_factory=dict)
    _logs: dict[str, list[float]] = field(default_factory=dict)  # ln rates in the stretch
    # pair -> stretch index -> (df, sum of squares) of its ln rates about their mean: the
    # spread within a stretch (a build knob's: within a boot)
    within: dict[str, dict[int, tuple[int, float]]] = field(default_factory=dict)
    _down: set[str] = field(default_factory=set)  # pairs whose link dropped in this stretch
    _failed: set[str] = field(default_factory=set)  # pairs whose run failed, no data since
    _booting: set[str] = field(default_factory=set)  # hosts switching to another build
    # pairs whose alternated knob someone else set: no stretch of theirs holds its value since
    _taken_over: set[str] = field(default_factory=set)

    def __post_init__(self) -> None:
        self.samples = {p: {v: [] for v in self.values} for p in self.pairs}
        self.taken = {p: {} for p in self.pairs}
        self.lost = {p: set() for p in self.pairs}
        self.empty = {p: set() for p in self.pairs}
        self.drifted = {p: set() for p in self.pairs}
        self.competing = {p: set() for p in self.pairs}

    def begin(self, index: int, value: str | Mapping[str, str]) -> None:
        """Stretch `index` (holding `value` on every pair, or each pair's value: a
        crossover's) starts now; the one in force ends at its full time (a boundary)."""
        self.close(full=True)
        self.held = dict.fromkeys(self.pairs, value) if isinstance(value, str) else dict(value)
        self.index, self.opened = index, self.latest

    def close(self, full: bool = False) -> None:
        """The stretch in force ends: held its full time (`full`, a boundary) or cut short
        (a stop); a sample on each pair that has one (the class says which)."""
        if self.index is None:
            return
        for pair in self.pairs:
            seg = self._open.get(pair, Segment())
            value = self.held.get(pair)
            if pair in self._taken_over:
                self.drifted[pair].add(self.index)
            if self.index in self.drifted[pair]:
                continue  # a setting changed out of band in it: left out (drift)
            if pair in self._down or value is None or value not in self.samples[pair]:
                self.lost[pair].add(self.index)
                continue
            if not full and (seg.seconds < self.min_seconds or not seg.seconds):
                continue  # a stop cut it short: no sample
            if not seg.seconds and pair not in self._failed:
                self.empty[pair].add(self.index)  # nothing counted, the run not failing
                continue
            over = max(seg.seconds, self.min_seconds) if full else seg.seconds
            rate = seg.bits / over if over > 0 else 0.0  # full and nothing counted: dead
            if self.stat is not None and seg.seconds:
                got = self.stat(self._vals.get(pair, []))
                if got is None:  # too few readings for the percentile: nothing measured
                    self.empty[pair].add(self.index)
                    continue
                rate = got
            self.samples[pair][value].append(rate)
            self.taken[pair][self.index] = rate
            self._value_at[(pair, self.index)] = value
            logs = self._logs.get(pair, [])
            if len(logs) > 1:
                mean = sum(logs) / len(logs)
                self.within.setdefault(pair, {})[self.index] = (
                    len(logs) - 1, sum((x - mean) ** 2 for x in logs))
        self.closed = max(self.closed, self.index + 1)
        self.spans[self.index] = (self.opened, self.latest)
        self._open.clear()
        self._logs.clear()
        self._vals.clear()
        self._down.clear()
        self.index = None
        self.held = {}

    def _drift(self, drift: Drift, t: float) -> None:
        """Someone else changed a setting of these pairs' hosts between `since` and `until`:
        every stretch that overlaps that time is left out, the one in force and those
        closed already (their samples withdrawn); and when it is the alternated knob, every
        later stretch of those pairs too (abtui no longer sets it: what they run is not the
        schedule's value)."""
        since = drift.since if drift.since is not None else t
        until = drift.until if drift.until is not None else t
        for pair in (str(p) for p in drift.pairs):
            if pair not in self.samples:
                continue
            if drift.knob == self.knob:  # the value is someone else's from now on
                self._taken_over.add(pair)
            hit = [i for i, (a, b) in self.spans.items() if a < until and b > since]
            if self.index is not None and self.opened < until:
                hit.append(self.index)
            for i in hit:
                self.drifted[pair].add(i)
                rate = self.taken[pair].pop(i, None)
                value = self._value_at.pop((pair, i), None)
                if rate is not None and value is not None and rate in self.samples[pair][value]:
                    self.samples[pair][value].remove(rate)
                self.within.get(pair, {}).pop(i, None)
                self.lost[pair].discard(i)
                self.empty[pair].discard(i)

    def _competing(self, pair: str, span: CompetingTraffic) -> None:
        """Traffic not ours on the pair's data link over the span: the stretches it overlaps
        keep their samples (what it costs is the pair's to judge) and are counted as flagged,
        so that a verdict standing on them says so."""
        if pair not in self.competing:
            return
        hit = {i for i, (a, b) in self.spans.items() if a < span.end and b > span.start}
        if self.index is not None and self.opened < span.end:
            hit.add(self.index)
        self.competing[pair].update(hit)

    def _add(self, pair: str, got: tuple[float, float | None]) -> None:
        """A counted reading (a value a second, its seconds) into the stretch in force."""
        self._open.setdefault(pair, Segment()).add(*got)
        if self.stat is not None:
            self._vals.setdefault(pair, []).append(got[0])
        if got[0] > 0 and got[1] is not None:
            self._logs.setdefault(pair, []).append(math.log(got[0]))

    def __call__(self, event: AnyEvent) -> None:
        self.latest = max(self.latest, event.t)
        switch = event.payload
        if isinstance(switch, BuildSwitch):  # a boot's link loss is the switch, not a fault
            host = event.host or ""
            (self._booting.add if switch.stage == "booting" else self._booting.discard)(host)
            if switch.stage == "failed" and self.index is not None:  # not the value's build
                self._down.update(p for p, hs in self.hosts.items() if host in hs)
            return
        if isinstance(switch, Drift) and switch.since is not None:
            self._drift(switch, event.t)
            return
        if isinstance(switch, CompetingTraffic):  # flagged late (its neighbour span): any
            self._competing(str(event.pair), switch)  # stretch it overlaps, closed or not
            return
        if self.index is None:
            return
        if event.kind is EventKind.LINK:
            link = event.payload
            if isinstance(link, Link) and event.host not in self._booting and link.state in (
                    LinkState.LOST, LinkState.FAILED, LinkState.RECONNECTING):
                self._down.update(p for p, hs in self.hosts.items() if event.host in hs)
            return
        pair = event.pair
        if pair not in self.samples:
            return
        if event.kind is EventKind.RUN_END:
            end = event.payload
            if isinstance(end, RunEnd) and end.status == "error":
                self._failed.add(pair)
            return
        if self.source is not counted:  # another measure than throughput: its events
            sample = self.source(event)  # a reading, or (a request/response interval) several
            readings = sample if isinstance(sample, list) else [sample] if sample else []
            if readings and event.t - sum(r[1] for r in readings) - SLACK_S >= self.opened:
                for reading in readings:
                    self._add(pair, reading)
            return
        interval = event.payload if event.kind is EventKind.INTERVAL else None
        if isinstance(interval, IntervalMeasured) and (interval.bits_per_second or 0) > 0:
            self._failed.discard(pair)
        if isinstance(interval, IntervalMeasured) and not interval.straddles:
            got = counted(event)
            if got is not None and event.t - got[1] - SLACK_S >= self.opened:
                self._add(pair, got)
