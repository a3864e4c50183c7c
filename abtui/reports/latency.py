"""Latency as its own measure: the replies' min/avg/max/stddev (as ping prints them) and their
percentiles p50, p90, p99, p99.9, per pair and configuration (seed 002's table), from ping
replies or a request/response load's round trips; and the run-level values the gate and
compare judge latency on.

A percentile is the nearest-rank one (the value at rank ceil(q·n) of the sorted replies: a
reply that was measured, never an interpolation between two), and only from enough replies
that it is not simply the slowest one: p90 from 10, p99 from 100, p99.9 from 1000 (`needed`).
With fewer it is None and the tables print `—`: ping's `-c 10` says nothing of a p99.

Lower is better. The gate judges latency the way the alternation does (measure/alternate/'s
`ping_readings`): on 1/RTT, so that a loss is a regression as with throughput (−20 % of 1/RTT is
the RTT +25 %); the gate's lines say the RTT's own change beside it (gate.rtt_change).
Measured (tests/bench/latency_gate_sim.py, docs/sequential.md "Latency in the gate"): at 30
runs a side and −5 %, p50 passes 0.99 of no-change gates and catches an RTT +10 % in 0.93;
avg passes 0.36 (stalls), p99 0.04; false alarms ≤ 0.003 in every case simulated.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from abtui.reports import samples
from abtui.reports.gate import Judged
from abtui.sessions.session import Session

PERCENTILES = (50.0, 90.0, 99.0, 99.9)
STATS = ("avg", "p50", "p90", "p99", "p99.9")  # what a run-level latency value can be


def name(q: float) -> str:
    """`p50`, `p99.9`."""
    return f"p{q:g}"


def needed(q: float) -> int:
    """The fewest replies from which the q-th percentile is not simply the largest one."""
    if q <= 50:
        return 1
    return math.ceil(round(100.0 / (100.0 - q), 6))


def percentile(values: Sequence[float] | np.ndarray[Any, Any], q: float) -> float | None:
    """The nearest-rank q-th percentile of the finite values; None with fewer than needed(q)."""
    a = np.asarray(values, dtype=float)
    a = np.sort(a[np.isfinite(a)])
    if a.size == 0 or a.size < needed(q):
        return None
    rank = max(1, math.ceil(round(q / 100.0 * a.size, 9)))
    return float(a[rank - 1])


@dataclass(frozen=True, slots=True)
class Latency:
    """One pair's replies (ms) under one configuration: what ping's last line says, plus the
    percentiles; `lost` the requests that had no reply."""

    n: int
    lost: int = 0
    min: float | None = None
    avg: float | None = None
    max: float | None = None
    stddev: float | None = None
    percentiles: dict[str, float | None] = field(default_factory=dict)

    def to_json(self) -> dict[str, Any]:
        return {"replies": self.n, "lost": self.lost, "min_ms": self.min, "avg_ms": self.avg,
                "max_ms": self.max, "stddev_ms": self.stddev,
                "percentiles_ms": dict(self.percentiles),
                "percentiles_need": {name(q): needed(q) for q in PERCENTILES}}


def of_values(values: Sequence[float] | np.ndarray[Any, Any], lost: int = 0) -> Latency:
    """A Latency of these round trips (ms; NaN ones are not replies)."""
    a = np.asarray(values, dtype=float)
    a = a[np.isfinite(a)]
    pct = {name(q): percentile(a, q) for q in PERCENTILES}
    if a.size == 0:
        return Latency(0, lost, percentiles=pct)
    # ping's mdev is the population deviation; the sample one is what a table's stddev means
    return Latency(int(a.size), lost, float(a.min()), float(a.mean()), float(a.max()),
                   float(a.std(ddof=1)) if a.size > 1 else None, pct)


def latency(session: Session, pair: str, *, phases: Sequence[int] | None = None,
            runs: Sequence[int] | None = None) -> Latency:
    """A pair's latency within these phases/runs: its ping replies."""
    rtt = samples.ping_rtts(session, pair, phases=phases, runs=runs)
    return of_values(rtt, int(np.count_nonzero(~np.isfinite(rtt))))


def expand(values: np.ndarray[Any, Any], counts: np.ndarray[Any, Any]) -> np.ndarray[Any, Any]:
    """Binned round trips back as one value per observation (each bin's value)."""
    ok = np.isfinite(values) & np.isfinite(counts) & (counts > 0)
    return np.repeat(values[ok], counts[ok].astype(np.int64))


def rr_latency(session: Session, pair: str, *, phases: Sequence[int] | None = None,
               runs: Sequence[int] | None = None) -> Latency:
    """A pair's request/response load's round trips (sockperf) within these phases/runs."""
    return of_values(expand(*samples.rr_bins(session, pair, phases=phases, runs=runs)))


def has_rr(session: Session, pair: str | None = None) -> bool:
    """Whether the session recorded a request/response load (on this pair)."""
    pairs = [pair] if pair is not None else list(session.rr)
    return any(len(session.rr.get(p, ())) for p in pairs)


SOURCES = ("ping", "sockperf")


def run_values(session: Session, pair: str, phases: Sequence[int], stat: str = "avg",
               source: str = "ping") -> list[float]:
    """One value per run within these phases: its replies' (or, with `source` "sockperf",
    its request/response round trips') mean (`avg`) or percentile (`p99`), runs with too
    few for that percentile left out (`needed`)."""
    if stat not in STATS:
        raise ValueError(f"latency statistic {stat!r}: one of {', '.join(STATS)}")
    if source == "sockperf":
        runs = [expand(v, c) for v, c in
                samples.rr_bins_by_run(session, pair, phases).values()]
    else:
        runs = list(samples.ping_rtts_by_run(session, pair, phases).values())
    out = []
    for rtt in runs:
        finite = rtt[np.isfinite(rtt)]
        if not finite.size:
            continue
        v = float(finite.mean()) if stat == "avg" else percentile(finite, float(stat[1:]))
        if v is not None:
            out.append(v)
    return out


def inverse(values: Sequence[float]) -> list[float]:
    """1000 / RTT (ms): the gate's and the alternation's way, more is better."""
    return [1000.0 / v for v in values if v > 0]


GATE_METRIC = "latency"  # a gate case's metric: `latency p99` (Judged.metric)


def gate_metric(stat: str) -> str:
    return f"{GATE_METRIC} {stat}"


def stat_of(metric: str) -> str | None:
    """The statistic a gate case's metric judges (`p99`; `latency p99 sockperf` too), None
    for another metric."""
    head, _, rest = metric.partition(" ")
    stat = rest.split(" ")[0]
    return stat if head == GATE_METRIC and stat in STATS else None


def judged(left: Session, right: Session, rows: Sequence[dict[str, Any]], stat: str
           ) -> list[Judged]:
    """The gate's latency cases (abtui.reports.compare.rows' matched rows): per pair and
    configuration, each run's `stat` of its replies on either side, as 1/RTT (more is better,
    so a loss beyond −PCT is a regression as with throughput: the RTT up by more than
    PCT / (100 − PCT)). Where both sides ran a request/response load (sockperf) on the pair,
    its round trips are judged (thousands a run, against ping's few), and the case's metric
    says so (`latency p99 sockperf`). A row with no replies on either side is left out: no
    latency was measured there, so none is judged."""
    out = []
    for r in rows:
        if r["only"] is not None:
            continue
        lc, rc = r["left"], r["right"]
        source = ("sockperf" if has_rr(left, lc.pair) and has_rr(right, rc.pair)
                  else "ping")
        base = run_values(left, lc.pair, lc.phases, stat, source)
        other = run_values(right, rc.pair, rc.phases, stat, source)
        if not base and not other and not (lc.rtt.n or rc.rtt.n):
            continue
        metric = gate_metric(stat) + (" sockperf" if source == "sockperf" else "")
        out.append(Judged(r["pair"], r["config"], inverse(base), inverse(other), metric))
    return out
