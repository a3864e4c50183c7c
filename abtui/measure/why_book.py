"""The profiles of an alternation, stretch by stretch: a subscriber beside the verdicts that
places every profile window (a PROFILE event) in the stretch in force when it began, exactly
as the stretches place intervals (a window that began before its stretch opened, or whose
pair holds no value, is left out), and judges them with abtui.reports.why at any time: live
for the console's panel, and once at the end, recorded as a WHY event the reports copy.

Only stretches the verdict counted are used (a stretch left out of the verdict is left out
here too), with the verdict's pairing: per block, a value's stretches against the base's; a
stretch that got no window (every boundary restarts the runs, and a loaded host may spend a
short stretch starting perf) is left out of its block, and a block needs both sides.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Protocol

from abtui.core import events
from abtui.core.events import AnyEvent
from abtui.core.folded import Stacks, merge, merged, pack, unpack
from abtui.core.model import Profile
from abtui.reports import why

Key = tuple[str, str]  # (pair, host)


def profiled(profile: Profile) -> bool:
    """Profiling is asked for: the profile's [test] profile_hz, or a pair's."""
    return bool(profile.test.profile_hz) or any(p.overrides.get("profile_hz")
                                                for p in profile.pairs)


class VerdictState(Protocol):
    """What the book is made from (abtui.measure.alternate.verdicts.Verdicts)."""

    @property
    def stretches(self) -> Any: ...

    @property
    def orders(self) -> dict[str, tuple[str, ...]]: ...

    @property
    def block(self) -> int: ...


def why_book(verdicts: VerdictState) -> WhyBook:
    """The book beside an alternation's verdicts (subscribe it after their stretches)."""
    return WhyBook(verdicts.stretches, verdicts.orders, tuple(verdicts.stretches.values),
                   verdicts.block)


class StretchState(Protocol):
    """What the book reads of the alternation's stretches (abtui.measure.alternate)."""

    index: int | None
    held: dict[str, str]
    opened: float
    taken: dict[str, dict[int, float]]
    spans: dict[int, tuple[float, float]]  # closed stretches: when each opened and closed


@dataclass(slots=True)
class WhyBook:
    """See the module docstring. `orders`: each pair's schedule (its values by stretch);
    `values`: the base first; `block`: stretches per block."""

    stretches: StretchState
    orders: Mapping[str, Sequence[str]]
    values: tuple[str, ...]
    block: int
    # (pair, host) -> stretch index -> its merged stacks
    stacks: dict[Key, dict[int, Stacks]] = field(default_factory=dict)
    machine: dict[Key, bool] = field(default_factory=dict)  # the host's profile is a machine's
    windows: int = 0  # windows placed in a stretch
    # (pair, host) -> stretch index -> its first and last counters sample (time, values)
    samples: dict[Key, dict[int, list[tuple[float, dict[str, int]]]]] = field(
        default_factory=dict)

    def __call__(self, event: AnyEvent) -> None:
        if isinstance(event.payload, events.CountersSampled):
            self._counters(event, event.payload)
            return
        window = event.payload
        if not isinstance(window, events.Profiled) or event.pair is None or event.host is None:
            return
        index = self._stretch_of(event.pair, window.start)
        if index is None:
            return
        key = (event.pair, event.host)
        merge(self.stacks.setdefault(key, {}).setdefault(index, {}), unpack(window.stacks))
        self.machine[key] = bool(window.shared)
        self.windows += 1

    def _stretch_of(self, pair: str, start: object) -> int | None:
        """The stretch a window that began at `start` counts in: the one in force, or (a host
        folds its profile once its run is over: abtui.measure.run.profiler) a closed one whose
        span holds it; None when it began before a stretch opened (it may hold the other
        value's samples) or outside every stretch."""
        if not isinstance(start, int | float):
            return None
        st = self.stretches
        if st.index is not None and pair in st.held and start >= st.opened:
            return st.index
        if pair not in self.orders:
            return None
        return next((i for i, (opened, closed) in st.spans.items()
                     if opened <= start <= closed), None)

    def _counters(self, event: AnyEvent, sample: events.CountersSampled) -> None:
        index = self.stretches.index
        if index is None or event.pair not in self.stretches.held or event.host is None:
            return
        if not isinstance(sample.at, int | float) or sample.at < self.stretches.opened:
            return
        values = unpack(sample.values)
        if not values:
            return
        key = (event.pair, event.host)
        kept = self.samples.setdefault(key, {}).setdefault(index, [])
        if len(kept) < 2:
            kept.append((float(sample.at), values))
        else:
            kept[1] = (float(sample.at), values)  # the first and the latest
        self.machine.setdefault(key, bool(sample.shared))

    def rates(self, key: Key, index: int) -> dict[str, float] | None:
        """A stretch's counters a second, from its first and last samples."""
        kept = self.samples.get(key, {}).get(index, [])
        if len(kept) < 2 or kept[1][0] <= kept[0][0]:
            return None
        (t0, first), (t1, last) = kept
        rates = {n: (last[n] - first.get(n, 0)) / (t1 - t0) for n in last if n in first}
        return rates | why.ratios(rates)

    def counter_comparisons(self) -> list[tuple[Key, str, list[why.RateBlock]]]:
        """Per (pair, host) and value: each complete block's stretches' rates."""
        out = []
        base = self.values[0]
        for key in sorted(self.samples):
            order = self.orders.get(key[0], ())
            taken = self.stretches.taken.get(key[0], {})
            for value in self.values[1:]:
                blocks: list[why.RateBlock] = []
                for b in range(len(order) // self.block):
                    rates = {i: self.rates(key, i) for i in range(b * self.block,
                                                                  (b + 1) * self.block)
                             if order[i] in (base, value) and i in taken}
                    kept = [(order[i] == value, r) for i, r in rates.items() if r is not None]
                    if {v for v, _ in kept} == {True, False}:
                        blocks.append(kept)
                if blocks:
                    out.append((key, value, blocks))
        return out

    def counter_rows(self) -> list[dict[str, Any]]:
        out: list[dict[str, Any]] = []
        for (pair, host), value, blocks in self.counter_comparisons():
            out.extend(why.counter_rows(pair, host, value, self.values[0],
                                        why.compare_counters(blocks),
                                        self.machine.get((pair, host), False)))
        return out

    def comparisons(self) -> list[tuple[Key, str, list[why.Block]]]:
        """Per (pair, host) and value compared: each complete block's stretches of the base
        and of the value, each flagged (of the value, its stacks)."""
        out = []
        base = self.values[0]
        for key, by_index in sorted(self.stacks.items()):
            pair = key[0]
            order = self.orders.get(pair, ())
            taken = self.stretches.taken.get(pair, {})
            for value in self.values[1:]:
                blocks: list[why.Block] = []
                for b in range(len(order) // self.block):
                    # a stretch the verdict left out, or without a window (its restart's
                    # set-up took it), is left out here; a block needs both sides
                    span = [i for i in range(b * self.block, (b + 1) * self.block)
                            if order[i] in (base, value) and i in taken and by_index.get(i)]
                    sides = {order[i] == value for i in span}
                    if sides == {True, False}:
                        blocks.append([(order[i] == value, by_index[i]) for i in span])
                if blocks:
                    out.append((key, value, blocks))
        return out

    def rows(self) -> list[dict[str, Any]]:
        """Every comparison's rows (abtui.reports.why.ROW_KEYS)."""
        out: list[dict[str, Any]] = []
        for (pair, host), value, blocks in self.comparisons():
            out.extend(why.rows(pair, host, value, self.values[0], why.compare(blocks),
                                self.machine.get((pair, host), False)))
        return out

    def found(self) -> events.WhyFound:
        """The end's record: the rows, and each comparison's two sides merged over its blocks
        for the differential flame graph."""
        flames = [{"pair": pair, "host": host, "value": value, "base": self.values[0],
                   "base_stacks": pack(merged(st for b in blocks for v, st in b if not v)),
                   "stacks": pack(merged(st for b in blocks for v, st in b if v))}
                  for (pair, host), value, blocks in self.comparisons()]
        return events.WhyFound(rows=self.rows(), flames=flames,
                               counters=self.counter_rows() or None)

    def lines(self, limit: int = 5) -> list[str]:
        """The top movers, a line each, for the log and stderr."""
        out = []
        rows = self.rows()
        for key in sorted({(r["pair"], r["host"], r["value"]) for r in rows}):
            mine = [r for r in rows if (r["pair"], r["host"], r["value"]) == key]
            moved = [r for r in why.top(mine, limit) if r["moved"]]
            where = f"{key[0]} {key[1]}{' (the machine)' if mine[0]['machine'] else ''}"
            if not moved:
                blocks = mine[0]["blocks"]
                out.append(f"why {where} {key[2]} vs {self.values[0]}: no frame moved "
                           f"({blocks} block{'' if blocks == 1 else 's'})")
                continue
            said = ", ".join(f"{r['frame']} ({r['kind']}) {r['delta']:+.1f} pp "
                             f"{why.interval_text(r)}" for r in moved)
            out.append(f"why {where} {key[2]} vs {self.values[0]}: {said}")
        counters = self.counter_rows()
        for key in sorted({(r["pair"], r["host"], r["value"]) for r in counters}):
            shifted = [r for r in counters if (r["pair"], r["host"], r["value"]) == key
                       and r["moved"]][:limit]
            if shifted:
                said = ", ".join(f"{r['counter']} {r['pct']:+.1f}% [{r['low']:+.1f}, "
                                 f"{r['high']:+.1f}]" for r in shifted)
                out.append(f"counters {key[0]} {key[1]} {key[2]} vs {self.values[0]}: {said}")
        return out
