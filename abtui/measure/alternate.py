"""Auto-alternation: one knob flipped between its values on a continuous run (or one plan-mode
run per stretch), in blocks whose order is drawn at random, each stretch a run-level sample,
and the live verdict of the sequential rule (abtui.reports.sequential).

The schedule: blocks drawn from a seeded generator. Two values: a block is four stretches,
each value twice, in one of the six balanced orders (AABB ABAB ABBA BAAB BABA BBAA); three
or more: a block is one permutation. Either way a block can place a compared value against
the base in six equally likely ways, so the randomisation allows a claim after three blocks
(twelve stretches) where blocks of AB or BA needed seven. A strict ABAB… schedule aliases
with anything periodic on the hosts (a timer loading the CPU every other stretch made an A/A
alternation "significant" 93 % of the time); with the order drawn per block, interference of
any period falls on each value by the draw. The seed is said, recorded in the session (a mark)
and given back with `abtui run --seed N` to replay the same order.

A stretch is what was measured between two boundaries of the schedule, timed the same way at
every boundary whatever the order (drive): its counted intervals (in the pair's direction,
not omitted, begun after it opened) make its value, bits ÷ seconds, as every segment
(abtui.reports.throughput). A stretch that moved nothing counts against its value
(Stretches); one cut short by a stop, or whose pair lost a host's link, is left out.

The design (`--design`): `blocks` sets one value on every pair at once, each pair judged on
its own (Holm over the pairs); `crossover` takes exactly two pairs and two values: the first
pair runs the drawn order and the second its mirror (the other value in every stretch), so at
every boundary both pairs switch together, each to another value (one call to the engine,
`set_values`: a kernel switch boots both pairs' hosts in parallel). One verdict is judged on
the mean of the two pairs' block log ratios (sequential.crossed): neither a pair's hardware
nor a disturbance shared in time (on one value of one pair and the other of the other at once)
is taken for the value.

`Stretches` and `Verdicts` are plain subscribers (the console uses them too); `drive` is the
headless loop that flips on a clock and stops by the rule, a time limit or the maximum.
"""

from __future__ import annotations

import asyncio
import contextlib
import math
import random
from collections.abc import Awaitable, Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Protocol

from abtui.core.configuration import UNKNOWN
from abtui.core.controller import Controller
from abtui.core.errors import AbtuiError, BadInput
from abtui.core.events import (
    AnyEvent,
    BuildSwitch,
    CompetingTraffic,
    Drift,
    EventKind,
    IntervalMeasured,
    Link,
    Ping,
    RunEnd,
)
from abtui.core.model import BUILD_KINDS, DEFAULT_MAX_RUNS, DEFAULT_MIN_EFFECT, LinkState, Profile
from abtui.measure.boots import boot_spread
from abtui.measure.latency_stretch import measure as latency_measure
from abtui.measure.latency_stretch import percentile_of
from abtui.measure.phases import SLACK_S
from abtui.measure.plan import PlanStep
from abtui.reports import deaths, stats
from abtui.reports.sequential import (
    BALANCED,
    DELTA_LABEL,
    FIRST_LOOK,
    Assessment,
    Contrasts,
    Family,
    assess,
    before_looks,
    contrasts,
    crossed,
)
from abtui.reports.throughput import Segment, counted


@dataclass(frozen=True, slots=True)
class Alternation:
    """What to alternate and when to stop."""

    knob: str
    values: tuple[str, ...]  # the first is the base
    every: float | None  # seconds a value is held; None: one plan-mode run per stretch
    max_runs: int = DEFAULT_MAX_RUNS  # stretches per value at most
    until_verdict: bool = False  # stop when every comparison is significant
    seed: int | None = None  # the schedule's seed; None: one is drawn
    # seconds dropped at every boundary after the host confirmed the value (changed or not),
    # before the next stretch's clock starts: a restarted run's set-up and ramp fall in it
    window: float = 0.0
    design: str = "blocks"  # DESIGNS: one value on every pair, or crossed over two pairs
    # what a stretch measures: throughput, or latency (abtui.measure.latency_stretch.METRICS)
    metric: str = "throughput"


# `--design`: every pair the same value at once (each judged alone), or two pairs crossed over
DESIGNS = ("blocks", "crossover")
CROSSOVER = "crossover"


def check_design(design: str, values: Sequence[str], pairs: Sequence[str]) -> None:
    """BadInput unless `design` can run these values on these pairs: a crossover takes two
    values on exactly two pairs."""
    if design not in DESIGNS:
        raise BadInput(f"--design {design}: not a design; expected one of {', '.join(DESIGNS)}")
    if design != CROSSOVER:
        return
    if len(values) != 2:
        raise BadInput(f"--design crossover: two values are crossed over two pairs, "
                       f"not {len(values)} ({', '.join(values)})")
    if len(pairs) != 2:
        raise BadInput(f"--design crossover: the knob's pairs must be exactly two, not "
                       f"{len(pairs)} ({', '.join(pairs) or 'none'})")


def parse_alternate(text: str, profile: Profile) -> tuple[str, tuple[str, ...]]:
    """`KNOB=V1,V2[,…]`, or `KNOB` alone for the profile's values of it."""
    name, sep, listed = text.partition("=")
    knobs = [k.name for k in profile.knobs]
    if name not in knobs:
        raise BadInput(f"--alternate {text}: the profile has no knob {name!r} "
                       f"(it has: {', '.join(knobs) or 'none'})")
    values = tuple(v.strip() for v in listed.split(",")) if sep else profile.knob(name).values
    if len(values) < 2 or any(not v for v in values) or len(set(values)) < len(values):
        raise BadInput(f"--alternate {text}: give two or more different values, "
                       f"KNOB=V1,V2 (the first is the base)")
    return name, tuple(values)




def per_value(values: Sequence[object]) -> int:
    """Stretches of each value in one block: two for two values, else one."""
    return 2 if len(values) == 2 else 1


def block_length(values: Sequence[object]) -> int:
    return per_value(values) * len(values)


def arrangements(values: Sequence[object]) -> int:
    """Equally likely ways a block can place one compared value against the base, whatever
    the other values do: six for two values (the balanced orders); two in a permutation (the
    two swapped or not, the others' places given: a third value may differ). The
    randomisation floor of a look (sequential.attainable)."""
    m = len(values)
    return len(BALANCED) if m == 2 else 2


def max_blocks(values: Sequence[object], max_runs: int) -> int:
    """The blocks `max_runs` stretches of each value make (at least two: the first look)."""
    return max(2, max_runs // per_value(values))


def schedule(values: Sequence[str], blocks: int, seed: int) -> tuple[str, ...]:
    """`blocks` blocks, each block's order drawn from `seed`: for two values one of the six
    balanced orders of four stretches, for more a permutation."""
    rng = random.Random(seed)
    out: list[str] = []
    for _ in range(blocks):
        if len(values) == 2:
            out += [values[k] for k in BALANCED[rng.randrange(len(BALANCED))]]
        else:
            block = list(values)
            rng.shuffle(block)
            out += block
    return tuple(out)


def mirror(order: Sequence[str], values: Sequence[str]) -> tuple[str, ...]:
    """Two values' order with the other value in every stretch (a crossover's second pair):
    a balanced order's mirror is another balanced order (AABB ↔ BBAA, ABAB ↔ BABA, ABBA ↔
    BAAB)."""
    a, b = values
    return tuple(b if v == a else a for v in order)


def pair_orders(design: str, order: Sequence[str], values: Sequence[str],
                pairs: Sequence[str]) -> dict[str, tuple[str, ...]]:
    """Each pair's schedule: the drawn `order` on every pair (blocks); a crossover's first
    pair the order, the second its mirror."""
    if design == CROSSOVER:
        first, second = pairs
        return {first: tuple(order), second: mirror(order, values)}
    return {p: tuple(order) for p in pairs}


def positions(order: Sequence[str], values: Sequence[str]) -> list[list[tuple[int, ...]]]:
    """Per complete block of the schedule, the indices of each value's stretches (in
    `values`' order): the stretches a block's log ratio compares."""
    size = block_length(values)
    out = []
    for b in range(len(order) // size):
        at: dict[str, list[int]] = {v: [] for v in values}
        for i in range(b * size, (b + 1) * size):
            at[order[i]].append(i)
        out.append([tuple(at[v]) for v in values])
    return out


def new_seed() -> int:
    return random.SystemRandom().randrange(2**31)


def order_line(knob: str, seed: int, values: Sequence[str], design: str = "blocks",
               pairs: Sequence[str] = ()) -> str:
    """The line (and session mark) that records the schedule's seed (and a crossover's
    pairs: which one ran the mirror)."""
    kind = "four stretches in one of the six balanced orders of two values" \
        if len(values) == 2 else "a random permutation"
    if design == CROSSOVER:
        first, second = pairs
        return f"alternation order: {knob} crossed over {first} and {second}: {first} in " \
               f"blocks of {kind}, {second} the mirror (the other value in every stretch), " \
               f"seed {seed} (replay: --seed {seed} --design crossover)"
    return f"alternation order: {knob} in blocks of {kind}, seed {seed} (replay: --seed {seed})"


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
    # throughput of the counted intervals, or (`inverse_rtt`) the ping replies
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


@dataclass(slots=True)
class Verdicts:
    """The live verdict of each value against the base on each pair (a crossover: on its two
    pairs as one, `A+B`, each pair in its own order: `orders`), from complete blocks
    (abtui.reports.sequential: the paired rule, Holm over the family); a comparison that
    turned significant keeps that verdict (the rule stopped for it there)."""

    stretches: Stretches
    order: tuple[str, ...]  # the schedule: max_blocks blocks of block_length stretches
    seed: int
    family: Family
    min_effect: float = DEFAULT_MIN_EFFECT
    design: str = "blocks"  # DESIGNS
    builds: bool = False  # a build knob: a boot per run of one value (the table says boots)
    decided: dict[tuple[str, str], Assessment] = field(default_factory=dict)
    _said: dict[tuple[str, str], int] = field(default_factory=dict)
    orders: dict[str, tuple[str, ...]] = field(default_factory=dict)  # pair -> its schedule

    def __post_init__(self) -> None:
        self.orders = pair_orders(self.design, self.order, self.stretches.values,
                                  self.stretches.pairs)

    def values_at(self, index: int) -> dict[str, str]:
        """Each pair's value in stretch `index` of the schedule."""
        return {p: order[index] for p, order in self.orders.items()}

    @property
    def units(self) -> list[tuple[str, tuple[str, ...]]]:
        """What is judged, with its pairs: each pair alone; a crossover's two pairs as one
        (named `A+B`)."""
        pairs = self.stretches.pairs
        if self.design == CROSSOVER:
            return [("+".join(pairs), tuple(pairs))]
        return [(p, (p,)) for p in pairs]

    def _pairs(self, unit: str) -> tuple[str, ...]:
        return dict(self.units)[unit]

    @property
    def keys(self) -> list[tuple[str, str]]:
        return [(u, v) for u, _ in self.units for v in self.stretches.values[1:]]

    @property
    def block(self) -> int:
        return block_length(self.stretches.values)

    def blocks(self) -> int:
        """Complete blocks so far."""
        return self.stretches.closed // self.block

    def _complete(self, pairs: Sequence[str]) -> list[int]:
        """The complete blocks whose every stretch has a sample on each of `pairs`."""
        size = self.block
        return [b for b in range(self.blocks())
                if all(i in self.stretches.taken[p] for p in pairs
                       for i in range(b * size, (b + 1) * size))]

    def ratios(self, unit: str, value: str) -> list[float]:
        """Per complete block with every stretch on the unit's pairs: the mean ln rate of
        `value`'s stretches less the base's (nan for a block with a stretch that moved
        nothing: deaths are judged apart, abtui.reports.deaths); a crossover's, the mean of
        its two pairs'."""
        got = self._contrast(unit, value)
        return [] if got is None else [float(x) for x in got.d]

    def _contrast(self, unit: str, value: str) -> Contrasts | None:
        """The complete blocks' log ratios of `value` against the base on the unit (None
        before any): a pair's own, or a crossover's from its two pairs' (crossed)."""
        pairs = self._pairs(unit)
        blocks = self._complete(pairs)
        if not blocks:
            return None
        k = self.stretches.values.index(value)
        rates, pos = [], []
        for pair in pairs:
            taken = self.stretches.taken[pair]
            rates.append([taken.get(i, math.nan) for i in range(self.stretches.closed)])
            at = positions(self.orders[pair], self.stretches.values)
            pos.append([[at[b][0], at[b][k]] for b in blocks])
        got = crossed(rates[0], rates[1], pos[0], pos[1]) if len(pairs) == 2 \
            else contrasts(rates[0], pos[0])
        return Contrasts(got.d[0], float(got.floor[0]), got.options[0],
                         None if got.tss is None else got.tss[0],
                         tuple(x[0] for x in got.dead), got.carry)

    def dead(self, unit: str, value: str) -> tuple[int, int]:
        """Stretches of `value` on the unit's pairs that moved nothing, and all its
        stretches."""
        got = [r for p in self._pairs(unit) for i, r in self.stretches.taken[p].items()
               if self.orders[p][i] == value]
        return sum(r <= 0 for r in got), len(got)

    def assess(self, key: tuple[str, str], rejected: int) -> Assessment:
        unit, value = key
        got = self._contrast(unit, value)
        dead = self.dead(unit, value)[0] + self.dead(unit, self.stretches.values[0])[0]
        early = before_looks([] if got is None else got.d, self.family.max_runs,
                             self.min_effect, dead)  # (no design made before the first look)
        if early is not None:
            return early
        assert got is not None  # (no blocks: before the first look)
        return assess(got.d, self.family.design(rejected), self.min_effect, got.floor, dead,
                      got.options, got.tss, got.dead, got.carry)

    def current(self) -> dict[tuple[str, str], Assessment]:
        """(pair, value) -> where it stands now; Holm: each significant comparison passes its
        α on to the others, which are judged again at the same look."""
        while True:
            out = {key: self.decided.get(key) or self.assess(key, len(self.decided))
                   for key in self.keys}
            new = {k: a for k, a in out.items() if a.significant and k not in self.decided}
            if not new:
                return out
            self.decided.update(new)

    @property
    def all_significant(self) -> bool:
        self.current()
        return all(k in self.decided for k in self.keys)

    @property
    def at_maximum(self) -> bool:
        return self.stretches.closed >= len(self.order)

    def new_lines(self) -> list[str]:
        """A line for each comparison with a new look (one more complete block); one that is
        decided keeps its look, so it is said once."""
        lines = []
        for key, got in self.current().items():
            if got.n >= FIRST_LOOK and self._said.get(key) != got.n:
                lines.append(self.line(key, got))
            self._said[key] = got.n
        return lines

    def line(self, key: tuple[str, str], got: Assessment) -> str:
        """One comparison's line; its blocks counted as the header counts them (a comparison
        on fewer says why), and the stretches of either value that moved nothing."""
        pair, value = key
        base = self.stretches.values[0]
        (k, n), (kb, _nb) = self.dead(pair, value), self.dead(pair, base)
        dead = [deaths.text(value, k, n, base, kb)] if k or kb else []
        pairs = self._pairs(pair)
        lost = sum(len(self.stretches.lost[p]) for p in pairs)
        empty = sum(len(self.stretches.empty[p]) for p in pairs)
        drifted = sum(len(self.stretches.drifted[p]) for p in pairs)
        # flagged, not left out: only those it counted (a sample taken) are what it stands on
        flagged = sum(len(self.stretches.competing[p] & set(self.stretches.taken[p]))
                      for p in pairs)
        counted = sum(len(self.stretches.taken[p]) for p in pairs)
        notes = [*dead, *([f"{lost} stretch{'es' if lost != 1 else ''} left out: a host's "
                           f"link was lost"] if lost else []),
                 *([f"{drifted} stretch{'es' if drifted != 1 else ''} left out: a setting "
                    "was changed out of band (drift)"] if drifted else []),
                 *([f"{empty} stretch{'es' if empty != 1 else ''} left out: no interval "
                    f"counted in {'them' if empty != 1 else 'it'}"] if empty else []),
                 *([f"⚠ competing traffic in {flagged} of {counted} stretches"] if flagged else [])]
        return f"{pair}: {self.stretches.knob}={value} vs {base}: " \
               f"{got.line(self.blocks(), (value, base))}" + \
               (f" [{'; '.join(notes)}]" if notes else "")

    def summary(self) -> list[str]:
        return [self.line(k, a) for k, a in self.current().items()]

    def table(self) -> list[dict[str, object]]:
        """The verdicts as rows (pair, values compared, Δgeo with its interval, verdict,
        blocks, seed, the design): for a report's table of the alternation. A build knob's
        rows add the boots of each value and the boot-to-boot spread beside the within-boot
        spread (abtui.measure.boots)."""
        rows: list[dict[str, object]] = []
        base = self.stretches.values[0]
        for (pair, value), got in self.current().items():
            d = got.delta
            verdict = "significant (deaths)" if got.by_deaths else "significant" \
                if got.significant else "no difference" if got.within else "undecided"
            row: dict[str, object] = {
                "pair": pair, "knob": self.stretches.knob, "value": value, "base": base,
                "delta": DELTA_LABEL, "pct": d.pct if d else None,
                "low": d.low if d else None, "high": d.high if d else None,
                "verdict": verdict, "blocks": got.n, "dead": self.dead(pair, value)[0],
                "seed": self.seed, "design": self.design}
            if self.builds:
                spread = boot_spread([(self.stretches.taken[p], self.orders[p],
                                       self.stretches.within.get(p, {}))
                                      for p in self._pairs(pair)], self.stretches.closed)
                row |= {"boots": spread.boots.get(value, 0),
                        "base_boots": spread.boots.get(base, 0),
                        "boot_sd": spread.between, "within_sd": spread.within}
            rows.append(row)
        return rows

    def family_line(self) -> str:
        """How the family's error is controlled (for the session's note)."""
        k = self.family.size
        return f"family-wise α {self.family.alpha:g} over {k} comparison" \
               f"{'s' if k != 1 else ''} (Holm: α/{k} each until one is significant)"


def change_window(profile: Profile, every: float) -> float:
    """The seconds an alternation drops at every boundary: the intervals iperf3 omits at a
    (re)start and two intervals more (a restarted run's set-up), at least one second, at
    most half of `every`."""
    test = profile.test
    return min(max(1.0, test.omit + 2 * test.interval), every / 2)


def inverse_rtt(interval_s: float) -> Callable[[AnyEvent], tuple[float, float] | None]:
    """A stretch's measure from ping replies: 1000 / RTT in ms, each reply held for the ping
    interval, so that less is worse as with throughput (-50 %: the RTT doubled) and a reply
    that timed out counts 0 for its interval."""

    def sample(event: AnyEvent) -> tuple[float, float] | None:
        ping = event.payload if event.kind is EventKind.PING else None
        if not isinstance(ping, Ping):
            return None
        rtt = ping.rtt_ms
        return (1000.0 / rtt if rtt is not None and rtt > 0 else 0.0), interval_s

    return sample


def verdicts_for(profile: Profile, alt: Alternation, stretch_s: float | None = None,
                 alpha: float | None = None, pairs: Sequence[str] | None = None,
                 metric: str | None = None, min_effect: float | None = None) -> Verdicts:
    """The verdicts of an alternation on the pairs its knob touches (`pairs`: only those of
    them); a stretch lasts `alt.every` seconds, or `stretch_s` (a plan run's length) when
    that is None. The order is drawn from `alt.seed` (a new seed when None). `alpha`: the
    family's α when it is a share of a larger one's (a bisection's step). `metric` (None:
    the alternation's): `throughput`, `rtt` (the stretches' inverse RTT from ping:
    `inverse_rtt`) or `rtt p99` (a percentile: abtui.measure.latency_stretch).
    `min_effect`: the smallest Δ that matters (None: the profile's)."""
    knob = profile.knob(alt.knob)
    chosen = [p for p in profile.pairs if (not knob.pairs or p.label in knob.pairs)
              and (pairs is None or p.label in pairs)]
    labels = tuple(p.label for p in chosen)
    check_design(alt.design, alt.values, labels)
    metric = metric or alt.metric
    stretches = Stretches(alt.knob, alt.values, labels,
                          min_seconds=(alt.every or stretch_s or 0.0) / 2,
                          hosts={p.label: (p.sender, p.receiver) for p in chosen},
                          source=inverse_rtt(profile.test.ping_interval) if metric == "rtt"
                          else counted)
    if percentile_of(metric) is not None:
        stretches.source, stretches.stat = latency_measure(profile.test, metric)
    seed = alt.seed if alt.seed is not None else new_seed()
    blocks = max_blocks(alt.values, alt.max_runs)
    units = 1 if alt.design == CROSSOVER else len(labels)
    family = Family(units * (len(alt.values) - 1), blocks,
                    alpha=stats.ALPHA if alpha is None else alpha,
                    arrangements=arrangements(alt.values))
    return Verdicts(stretches, schedule(alt.values, blocks, seed), seed, family,
                    profile.min_effect if min_effect is None else min_effect, alt.design,
                    knob.kind in BUILD_KINDS)


def prepare_looks(verdicts: Verdicts) -> asyncio.Future[None]:
    """Make the family's designs in a thread now (Family.prepare), so the first look, a
    block from now, finds them made instead of computing them on the event loop. Nothing
    waits for it; a failure here is the first look's to meet again."""
    future = asyncio.get_running_loop().run_in_executor(None, verdicts.family.prepare)
    future.add_done_callback(lambda f: f.cancelled() or f.exception())
    return future


def plan_steps(knob: str, order: Sequence[str], block: int) -> list[PlanStep]:
    """Per run in plan mode: one run per entry of the schedule (`block` values a block);
    every stretch after the first is set again, changed or not (`again`: its hosts clear
    what the last run left; a build knob's boot its build)."""
    return [PlanStep(i, {knob: value}, i // block + 1, again=i > 0)
            for i, value in enumerate(order)]


async def drive(set_values: Callable[[str, Mapping[str, str]], object], alt: Alternation,
                verdicts: Verdicts,
                say: Callable[[str], None], duration: float | None = None,
                stop: asyncio.Event | None = None,
                boundary: Callable[[], None] | None = None,
                done: Callable[[], str | None] | None = None,
                again: Callable[[str, Mapping[str, str]], object] | None = None,
                check: Callable[[], Awaitable[object]] | None = None) -> str:
    """Hold each value of the schedule `every` seconds. Every boundary is handled alike,
    whether the value changes or not, so that a stretch's timing never depends on the drawn
    order: the stretch in force closes; the verdicts that have a new look (a complete block)
    are said and `boundary` is called (the blocks counted change even when no verdict has a
    new look); then the next stretch is set up, every pair's value of the schedule in one
    call, awaited (the host confirms it; a flip that takes a boot delays the next stretch,
    never lengthens it): with `again` (the engine's `set_values(..., again=True)`: `anew`)
    at every boundary, changed value or kept, so every pair's runs restart alike and the
    hosts clear what the last stretch's connections left (a build knob's hosts boot the
    stretch's build: one boot per stretch); without it `set_values(knob, {pair: value})`
    only when a pair's value changes (a crossover's two pairs switch together, each to its
    own value). A boundary that keeps the value then pauses until it has lasted as long as
    one of the changes so far, drawn (seeded by the schedule's seed), so that the time
    between stretches has one distribution whatever the order (a periodic load's phase
    would otherwise follow the flips); `check` (the engine's read-back of every setting it
    set, `Engine.read_back`) is awaited before each stretch closes, so one in which someone
    else changed a setting is left out; `alt.window` seconds are dropped; then the next
    stretch opens, and counts only intervals that began after that (Stretches). The caller
    set the schedule's first value; stretch 0 opens after the window too (unless the caller
    began it). Returns why it stopped: `verdict`, `max-runs`, `time limit`, what `done`
    returned (asked at every boundary after the verdicts: a bisection's step call) or
    `stopped` (`stop` set: only ever between flips, so a flip under way always completes
    and the engine's phases and the hosts never disagree). A stretch in force when it
    returns is closed by the caller (`stretches.close()`), once the engine stopped."""
    assert alt.every is not None, "drive flips on a clock; plan mode runs plan_steps"
    prepare_looks(verdicts)
    loop = asyncio.get_running_loop()
    start = loop.time()
    stretches = verdicts.stretches
    stop = stop or asyncio.Event()
    flips: list[float] = []  # how long each change took
    pad = random.Random(verdicts.seed)
    i = stretches.index if stretches.index is not None else stretches.closed - 1
    if stretches.index is None:  # stretch i + 1 opens after the window, as at every boundary
        if await _stopped_within(stop, alt.window):
            return "stopped"
        i += 1
        stretches.begin(i, verdicts.values_at(i))
    while True:
        left = None if duration is None else duration - (loop.time() - start)
        if left is not None and left <= alt.every / 2:
            if left > 0 and await _stopped_within(stop, left):
                return "stopped"
            return "time limit"
        if await _stopped_within(stop, alt.every if left is None else min(alt.every, left)):
            return "stopped"
        if check is not None:  # settings read back: a stretch someone else changed is left out
            with contextlib.suppress(AbtuiError, OSError):
                await check()
        stretches.close(full=True)
        for line in verdicts.new_lines():
            say(line)
        if boundary is not None:
            boundary()
        if alt.until_verdict and verdicts.all_significant:
            return "verdict"
        if done is not None and (why := done()) is not None:
            return why
        if verdicts.at_maximum:
            return "max-runs"
        i += 1
        now = verdicts.values_at(i)
        changed = now != verdicts.values_at(i - 1)
        began = loop.time()
        flip = again if again is not None else set_values if changed else None
        if flip is not None:
            result = flip(alt.knob, now)
            if asyncio.iscoroutine(result):
                await result
        took = loop.time() - began
        # as long as a change: one of those so far, drawn; at every boundary when each
        # restarts the runs (`again`: a kept value's boundary takes a restart of its own, and
        # padding it alone to a drawn change made kept boundaries the longer ones: A/A false
        # claims 0.077 under a load of 2 stretches), else where the value is kept
        drawn = pad.choice(flips) if flips and (again is not None or not changed) else None
        if changed:
            flips.append(took)
        pause = max(0.0, drawn - took) if drawn is not None else 0.0
        if await _stopped_within(stop, pause + alt.window):
            return "stopped"
        stretches.begin(i, now)


class SetsValues(Protocol):
    """What sets a knob's values on pairs: the engine, the console's controller."""

    async def set_values(self, knob: str, values: Mapping[str, str],
                         again: bool = False) -> None: ...


def anew(engine: SetsValues) -> Callable[[str, Mapping[str, str]], object]:
    """What drive calls at every boundary: the engine's `set_values(..., again=True)` (a new
    stretch: every pair's runs restart and its hosts clear what the last ones left, the
    value changed or kept; a build's hosts boot it again: one boot per stretch)."""
    return lambda knob, values: engine.set_values(knob, values, again=True)


async def _stopped_within(stop: asyncio.Event, seconds: float) -> bool:
    """Wait `seconds`, or less when `stop` is set meanwhile; whether it was."""
    with contextlib.suppress(TimeoutError):
        await asyncio.wait_for(stop.wait(), seconds)
    return stop.is_set()


def stopped_line(why: str, verdicts: Verdicts, seconds: float) -> str:
    blocks = verdicts.blocks()
    what = {"verdict": "every comparison significant",
            "max-runs": f"the maximum of {verdicts.family.max_runs} blocks reached",
            "time limit": "time limit"}.get(why, why)
    return f"alternation ended ({what}) after {blocks} block{'s' if blocks != 1 else ''} " \
           f"({verdicts.stretches.closed} stretches), {seconds:.0f} s"


def ended_lines(why: str, verdicts: Verdicts, seconds: float) -> list[str]:
    """What an ended alternation says and records in the session (joined, as one mark):
    why and when it stopped, the verdict of each comparison, how the error is controlled.
    Headless and in the console alike, so a session read later tells how each one ended."""
    return [stopped_line(why, verdicts, seconds), *verdicts.summary(), verdicts.family_line()]


# the console's alternation: how long each value is held, and the min_effect key's choices
CONSOLE_EVERY_S = 5.0
# how long a stop waits for a flip under way before it says the alternation ended anyway
# (each remote command of a flip is bounded, 10 s, but a flip chains several: a stop key must
# not wait on them unseen); the flip still completes, in the background, and nothing follows it
STOP_WAIT_S = 8.0
MIN_EFFECTS = (0.5, 1.0, 2.0, 5.0, 10.0)


def next_min_effect(current: float) -> float:
    """The min_effect key's next choice after `current` (round the list)."""
    return next((m for m in MIN_EFFECTS if m > current), MIN_EFFECTS[0])


def console_alternation(profile: Profile, knob: str | None, config: Mapping[str, str],
                        every: float = CONSOLE_EVERY_S) -> Alternation:
    """What the console alternates: `knob` (the last one flipped; else the plan's first knob,
    else the profile's first), between its values, the one in force first (the base)."""
    names = [k.name for k in profile.knobs]
    if not names:
        raise BadInput("the profile has no knob to alternate")
    if knob not in names:
        knob = next((m for m in profile.plan.matrix if m in names), names[0])
    values = list(profile.knob(knob).values)
    now = config.get(knob)
    if now in values:
        values.remove(now)
        values.insert(0, now)
    elif now is not None:
        values.insert(0, now)
    if len(values) < 2:
        raise BadInput(f"knob {knob} has one value: nothing to alternate")
    return Alternation(knob, tuple(values), every, DEFAULT_MAX_RUNS, until_verdict=True,
                       window=change_window(profile, every))


class LiveAlternation:
    """An alternation the console starts and stops on its controller (measuring continuously):
    the same flips, rule and verdicts as `abtui run --alternate`, in a task. `notify` is called
    when the verdicts have a new look and when the alternation ends."""

    def __init__(self, controller: Controller, alt: Alternation, min_effect: float,
                 notify: Callable[[], None] = lambda: None,
                 before: Mapping[str, str] | None = None) -> None:
        self.controller = controller
        self.alt = alt
        # draws the order's seed
        self.verdicts = verdicts_for(controller.profile, alt, min_effect=min_effect)
        self.notify = notify
        self.why: str | None = None  # why it ended; None while it runs
        # the knob's value on each pair before it started, set back when it ends (None: the
        # base value, on every pair it flips); what was set back, for the line that says so
        self.before = dict(before) if before is not None else None
        self.set_back: list[str] = []
        self.held: str | None = None  # the value it set last
        self.flipping: str | None = None  # the value being set now, while a flip is under way
        self.stuck: str | None = None  # what a bounded stop found still under way
        self._keep = False  # stop(restore=False): the knob is left as it is
        self._task: asyncio.Task[Any] | None = None
        self._began = 0.0  # the loop's time when the first value was set
        self._stop = asyncio.Event()
        self._active = False
        self._starting = False  # start() is setting the first value
        controller.subscribe(self._on_event)

    def _on_event(self, event: AnyEvent) -> None:
        if self._active:
            self.verdicts.stretches(event)

    @property
    def running(self) -> bool:
        """From the moment `start` is called until the alternation ended: while the first
        value is still being set (a tunnel takes seconds) it is running too, so a second
        ctrl+a then stops it rather than starting another one beside it."""
        if self._task is not None:
            return not self._task.done()
        return self._starting

    async def start(self) -> None:
        """The schedule's first value set (a refusal raises KnobRefused), then flips on a
        clock. A `stop` while the first value is being set ends it as soon as that is set."""
        self._active = self._starting = True
        try:
            # stretch 0 opens in drive, after the window
            await self._flip(self.alt.knob, self.verdicts.values_at(0))
            self._began = asyncio.get_running_loop().time()
            await self.controller.mark(order_line(self.alt.knob, self.verdicts.seed,
                                                  self.alt.values))
            self._task = asyncio.get_running_loop().create_task(self._run())
        except BaseException:
            self._active = False
            raise
        finally:
            self._starting = False

    async def _flip(self, knob: str, values: Mapping[str, str]) -> None:
        """The schedule's values set: the console alternates in blocks (one value on every
        pair the knob touches)."""
        (value,) = set(values.values())
        self.flipping = value
        try:
            await self.controller.set_knob(knob, value)
        finally:
            self.flipping = None
        self.held = value

    async def _anew(self, knob: str, values: Mapping[str, str]) -> None:
        """A boundary: the schedule's values set as a new stretch (every pair's runs
        restart, changed or kept: the engine's `again`)."""
        (value,) = set(values.values())
        self.flipping = value
        try:
            await self.controller.set_values(knob, values, again=True)
        finally:
            self.flipping = None
        self.held = value

    async def _run(self) -> None:
        try:
            # the panel is redrawn once per boundary (`boundary`), its new lines with it
            why = await drive(self._flip, self.alt, self.verdicts, lambda _line: None,
                              stop=self._stop, boundary=self.notify, again=self._anew,
                              check=getattr(self.controller, "read_back", None))
        except Exception as exc:  # a refused flip: it cannot go on
            why = f"error: {exc}"
        self.why = why if self.stuck is None else f"{why}; {self.stuck} (then set)"
        self.verdicts.stretches.close()
        self._active = False
        self.notify()  # ended, said at once: setting the knob back takes a flip (seconds)
        elapsed = asyncio.get_running_loop().time() - self._began
        await self.controller.mark("; ".join(ended_lines(self.why, self.verdicts, elapsed)),
                                   verdicts=self.verdicts.table())
        if not self._keep:
            await self._restore()
            self.notify()

    async def _restore(self) -> None:
        """However it ended (the rule, the maximum, the key), the knob goes back to what each
        pair had before it started: an alternation is a measurement, not a change of the
        hosts' setting. A value that could not be set back is said in `why`."""
        if self.held is None:
            return  # it never set a value
        by_value: dict[str, list[str]] = {}
        for pair, value in (self.before or {}).items():
            if value != UNKNOWN:
                by_value.setdefault(value, []).append(pair)
        wanted: list[tuple[str, list[str] | None]] = [*by_value.items()] \
            if self.before is not None else [(self.alt.values[0], None)]  # the base, all
        for value, pairs in wanted:
            if value == self.held:
                continue
            try:
                await self.controller.set_knob(self.alt.knob, value, pairs)
            except Exception as exc:  # the hosts keep the last value: said, never raised
                self.why = f"{self.why}; {self.alt.knob} not set back to {value}: {exc}"
            else:
                self.set_back.append(value)

    async def stop(self, restore: bool = True, wait: float | None = None) -> None:
        """Stop flipping; the verdicts so far remain, and the knob goes back to its value
        from before (`restore`; not when a flip by hand or leaving follows). A flip under
        way is let finish, never cancelled: cancelled halfway, the hosts could have the new
        value while the engine's phase never learnt it, and every later interval would be
        counted nowhere. The wait for it is bounded (`wait` seconds): a flip still under way
        then is said in `why` and `stuck` (the alternation has ended: no flip follows it; it
        completes, and the knob is set back, in the background); None: STOP_WAIT_S."""
        wait = STOP_WAIT_S if wait is None else wait
        self._keep = not restore
        self._stop.set()
        task = self._task
        if task is not None and not task.done():
            await asyncio.wait([task], timeout=wait)  # never cancels the task
            if not task.done():
                what = f"{self.alt.knob}={self.flipping}" if self.flipping is not None \
                    else self.alt.knob
                self.stuck = f"setting {what} still under way after {wait:g} s"
                self.why = f"stopped; {self.stuck}"  # ended: said at once
                self.notify()
        self._active = False

    def stopped_line(self, how: str = "") -> str:
        """The log's line once `stop` returned (`how`: e.g. ": flipped by hand"): the values
        set back, and a flip still under way, said the same way whatever stopped it."""
        back = f"; {self.alt.knob} back to {', '.join(self.set_back)}" if self.set_back else ""
        stuck = f"; {self.stuck} (it completes; the alternation flips nothing after it)" \
            if self.stuck else ""
        return f"alternation of {self.alt.knob} stopped{how}{back}{stuck}"

    def set_min_effect(self, pct: float) -> None:
        self.verdicts.min_effect = pct
        self.notify()

    def lines(self) -> list[str]:
        """The header and one line per pair and compared value, as the console shows them."""
        state = f"ended: {self.why}" if self.why is not None else \
            "running" if self._task is not None else \
            "starting" if self._starting else "ended: not started"
        head = (f"alternating {self.alt.knob} every {self.alt.every or 0:g} s "
                f"({self.verdicts.blocks()}/{self.verdicts.family.max_runs} blocks, seed "
                f"{self.verdicts.seed}, min effect {self.verdicts.min_effect:g}%), {state}")
        return [head, *self.verdicts.summary()]
