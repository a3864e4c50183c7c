"""What a session is made of: its runs and phases as small records, and the compact column
stores its intervals, pings and CPU samples go into (a day of two pairs at 1 s is 172 800
intervals: as Event objects that would be hundreds of MB). Apart from abtui.sessions.session
(which fills them from events) because every report reads these records and columns, while only
the session reads events.
"""

from __future__ import annotations

import math
from array import array
from dataclasses import dataclass, field
from typing import Any

from abtui.core.configuration import config_id
from abtui.core.cpu import FIELDS

NO_PHASE = -1
NAN = math.nan


@dataclass(slots=True)
class Run:
    pair: str
    id: Any
    index: int
    config: dict[str, Any] = field(default_factory=dict)
    start: float | None = None
    end: float | None = None
    status: str = "incomplete"  # until a RUN_END says otherwise
    summary: dict[str, Any] | None = None
    # --bidir: iperf3's summary of the other direction (receiver -> sender)
    reverse_summary: dict[str, Any] | None = None
    ping: dict[str, Any] | None = None
    message: str = ""
    skew_ms: float | None = None
    options: dict[str, Any] | None = None
    # the iperf3 client command as it ran (RUN_START `argv`); None in older sessions
    argv: list[str] | None = None


@dataclass(slots=True)
class Phase:
    pair: str
    id: Any
    index: int
    config: dict[str, Any]
    start: float | None = None
    end: float | None = None
    closed: bool = False

    @property
    def label(self) -> str:
        """The configuration's identity (config_id); tables print Session.config_label."""
        return config_id(self.config)


class Columns:
    """Named array columns appended row by row: the compact store for intervals and pings."""

    def __init__(self, **types: str) -> None:
        self.names = tuple(types)
        self.cols: dict[str, array[Any]] = {n: array(t) for n, t in types.items()}
        self._arrays = tuple(self.cols.values())

    def append(self, *values: Any) -> None:
        """Append one row, all columns or none (a value that does not fit rolls it back)."""
        n = len(self._arrays[0])
        try:
            for arr, value in zip(self._arrays, values, strict=True):
                arr.append(value)
        except (TypeError, ValueError, OverflowError):
            for arr in self._arrays:
                del arr[n:]
            raise

    def __len__(self) -> int:
        return len(self.cols[self.names[0]])

    def __getitem__(self, name: str) -> array[Any]:
        return self.cols[name]


def interval_columns() -> Columns:
    # t: event time; start/end: iperf3's own, relative to its run; NaN where unknown;
    # rx: 1 for --bidir's other direction (receiver -> sender), kept out of the pair's
    # throughput so a bidirectional run's two directions are never averaged together;
    # UDP: jitter (ms), lost datagrams and datagrams due (lost included), NaN for TCP
    return Columns(t="d", start="d", end="d", bytes="d", bps="d", retransmits="d", cwnd="d",
                   omitted="b", phase="i", run="i", rx="b", jitter="d", lost="d",
                   packets="d")


def cpu_columns() -> Columns:
    # one host's CPU samples: event time, run and phase (NO_PHASE: straddling a change), the
    # ticks each state gained over all CPUs (abtui.core.cpu.FIELDS), the CPU count and the
    # busiest CPU's busy share (a saturated core hides in a many-core total); the CPU with
    # the largest softirq share, and that share (a core a receive path saturates)
    return Columns(t="d", run="i", phase="i", **{f: "d" for f in FIELDS}, cpus="i", peak="d",
                   soft_peak="d", soft_core="i")


def ping_columns() -> Columns:
    return Columns(t="d", seq="q", rtt="d", phase="i", run="i")


def rr_columns() -> Columns:
    """A request/response load's round trips: one row per recorded bin (its ms, its count)."""
    return Columns(t="d", rtt="d", count="d", phase="i", run="i")


def as_dict(value: Any) -> dict[str, Any] | None:
    """A dict field as recorded, or None when a foreign record put something else there."""
    return dict(value) if isinstance(value, dict) else None


def as_argv(value: Any) -> list[str] | None:
    """A recorded command line, or None when there is none or a foreign record put something
    other than a list of strings there."""
    if isinstance(value, list) and value and all(isinstance(a, str) for a in value):
        return list(value)
    return None


def as_num(value: Any) -> float:
    return NAN if value is None or isinstance(value, bool) else float(value)
