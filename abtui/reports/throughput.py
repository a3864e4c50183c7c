"""A pair's throughput under a configuration, defined once for every place that prints it: the
console's phase table, headless progress, the reports' tables, compare and the JSON export.

- The samples are *run-level values*. Intervals within a run are not independent (TCP state
  carries over from one to the next), so they are never samples of their own.
- A run-level value is one *segment*: the counted intervals of one run within one phase (plan
  mode: a whole run; continuous mode: a stretch with no knob change). Counted: in the pair's own
  direction, not omitted (`model.interval_rate`), not straddling a knob change. Its value is
  the bits it carried over the seconds it lasted, Σ rate × span ÷ Σ span: for a whole run
  that is iperf3's own summary figure (within the rounding of the interval lines it printed),
  and a short last interval weighs only as long as it lasted. An interval whose span is
  unknown (a foreign record without start or end) is left out: weighing it as some made-up
  length would put bits in the figure that nobody measured over time nobody knows.
- A configuration's throughput on a pair is the mean of its run-level values (each run weighs
  the same, however long).

Plain Python (no numpy): the console folds intervals into segments as they arrive.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import Any

from abtui.core.events import AnyEvent, EventKind, IntervalMeasured
from abtui.core.model import interval_rate


def span_of(start: Any, end: Any) -> float | None:
    """An interval's length in seconds, from iperf3's own start and end; None when either is
    missing or not a number, or the end comes before the start (such an interval counts in no
    rate: see the module docstring)."""
    if isinstance(start, int | float) and isinstance(end, int | float) \
            and not isinstance(start, bool) and not isinstance(end, bool):
        span = float(end) - float(start)
        if math.isfinite(span) and span >= 0:
            return span
    return None


def counted(event: AnyEvent) -> tuple[float, float] | None:
    """A live INTERVAL event's (bits/s, seconds) when it counts in its pair's throughput (its
    own direction, not omitted: model.interval_rate; its span known), else None."""
    interval = event.payload if event.kind is EventKind.INTERVAL else None
    if event.pair is None or not isinstance(interval, IntervalMeasured):
        return None
    rate = interval_rate(interval)
    if rate is None or rate[1]:
        return None
    span = span_of(interval.start, interval.end)
    return None if span is None else (rate[0], span)


@dataclass(slots=True)
class Segment:
    """The counted intervals of one run within one phase: bits and seconds so far."""

    bits: float = 0.0
    seconds: float = 0.0
    n: int = 0

    def add(self, bps: float, span: float | None) -> None:
        """One counted interval; one of unknown span (span_of's None) is left out."""
        if span is None:
            return
        self.bits += bps * span
        self.seconds += span
        self.n += 1

    def merge(self, other: Segment) -> None:
        """Take in another segment's intervals (one configuration counted over phases)."""
        self.bits += other.bits
        self.seconds += other.seconds
        self.n += other.n

    @property
    def rate(self) -> float | None:
        """Bits per second over the segment; None before any time has been counted."""
        return self.bits / self.seconds if self.seconds > 0 else None

    @classmethod
    def of(cls, bps: Iterable[float], starts: Iterable[float], ends: Iterable[float]
           ) -> Segment:
        """A segment from columns, added in order (the same sums as adding them live)."""
        seg = cls()
        for rate, start, end in zip(bps, starts, ends, strict=True):
            if math.isfinite(rate):
                seg.add(rate, span_of(start, end))
        return seg


def mean(values: Sequence[float]) -> float | None:
    """The mean of run-level values, correctly rounded (the same in any order)."""
    return math.fsum(values) / len(values) if values else None


def run_values(segments: Iterable[Segment]) -> list[float]:
    """The run-level values of a configuration's segments (those that counted some time)."""
    return [r for r in (s.rate for s in segments) if r is not None]


def configuration_rate(segments: Iterable[Segment]) -> float | None:
    """A configuration's throughput on a pair: the mean of its run-level values."""
    return mean(run_values(segments))


def change_pct(base: float | None, other: float | None) -> float | None:
    """`other` vs `base` in percent of base: every Δ abtui prints."""
    if base is None or other is None or not base:
        return None
    return (other - base) / abs(base) * 100
