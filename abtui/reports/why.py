"""Why B is faster: each function's share of a host's samples under each value, and the
change between values with an interval over the alternation's blocks.

The pairing is the verdict's: in every complete block the stretches of a value are merged and
set against the base's stretches of the same block, so whatever drifts from block to block
(a co-tenant's load, the machine's clock) falls on both sides alike. A frame's share is
counted three ways: `self` (samples whose leaf it is), `children` (samples whose stack holds
it at least once) and `thread` (samples of a thread name: a worker pool's share, e.g. the
kworkers cryptd runs in). Its change is in percentage points of all samples.

The interval is Student's t over the blocks' changes at a family confidence of 95 %: every
frame tested (the frames holding at least MIN_SHARE % of either side's samples, the
MAX_FRAMES largest at most) is a comparison, so each gets Bonferroni's share of the 5 %. A
frame is "moved" only when its interval excludes zero; an A/A alternation then names a moved
frame in at most 5 % of runs (measured in tests/bench/bench_why.py: see docs/reports.md).
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

FAMILY_ALPHA = 0.05
MIN_SHARE = 1.0  # percent of a side's samples for a frame to be tested
MAX_FRAMES = 60  # tested frames per comparison at most (the largest)
MIN_BLOCKS = 3  # blocks before an interval is given
KINDS = ("self", "children", "thread")
ROW_KEYS = ("pair", "host", "value", "base", "frame", "kind", "base_share", "share", "delta",
            "low", "high", "moved", "blocks", "machine")

Stacks = Mapping[str, int]
# The profile's own thread (perf record, the one process the profile runs beside the traffic:
# abtui.remote.profiling) is left out of the samples shares are counted in: what it costs is
# the profile's, not the value's (the report's section says so)
PROFILER_THREADS = frozenset({"perf"})


def shares(stacks: Stacks) -> dict[str, dict[str, float]]:
    """Per kind, each frame's percentage of the samples, the profile's own thread's left out
    (PROFILER_THREADS)."""
    stacks = {s: c for s, c in stacks.items() if s.split(";", 1)[0] not in PROFILER_THREADS}
    total = sum(stacks.values())
    out: dict[str, dict[str, float]] = {k: {} for k in KINDS}
    if total <= 0:
        return out
    self_, children, thread = out["self"], out["children"], out["thread"]
    for stack, count in stacks.items():
        parts = stack.split(";")
        thread[parts[0]] = thread.get(parts[0], 0.0) + count
        frames = parts[1:]
        if frames:
            self_[frames[-1]] = self_.get(frames[-1], 0.0) + count
        for frame in set(frames):
            children[frame] = children.get(frame, 0.0) + count
    for table in out.values():
        for frame in table:
            table[frame] = 100.0 * table[frame] / total
    return out


@dataclass(frozen=True, slots=True)
class Moved:
    """One frame's change between two values over the blocks."""

    frame: str
    kind: str
    base_share: float
    share: float
    delta: float  # points, mean over blocks
    low: float | None
    high: float | None
    blocks: int

    @property
    def moved(self) -> bool:
        return excludes_zero(self.low, self.high)


def excludes_zero(low: float | None, high: float | None) -> bool:
    """An interval that says which way the change went (a frame or counter "moved")."""
    return low is not None and high is not None and (low > 0 or high < 0)


def _t_quantile(df: int, p: float) -> float:
    from scipy.special import stdtrit

    return float(stdtrit(df, p))


Block = Sequence[tuple[bool, Stacks]]  # a block's stretches: (of the value, its stacks)


def compare(blocks: Sequence[Block], *, alpha: float = FAMILY_ALPHA,
            min_share: float = MIN_SHARE, max_frames: int = MAX_FRAMES) -> list[Moved]:
    """Each tested frame's change from the base to the value, sorted: the moved first, then
    by the size of the change.

    Every stretch is a sample, each block its own level (a fixed effect): the change is the
    within-block difference of the two sides' mean shares, averaged over the blocks (the
    verdict's pairing), and its error is estimated from the stretches' scatter about their
    block and side (N - B - 1 degrees of freedom: a block of four stretches gives two, where
    a block's one difference gave none of its own)."""
    used = [[(is_value, shares(st)) for is_value, st in block if sum(st.values()) > 0]
            for block in blocks]
    used = [b for b in used if any(v for v, _ in b) and any(not v for v, _ in b)]
    n_blocks = len(used)
    if not n_blocks:
        return []
    n_stretches = sum(len(b) for b in used)
    df = n_stretches - n_blocks - 1
    pooled_base = shares(_merged(st for block in blocks for v, st in block if not v))
    pooled_value = shares(_merged(st for block in blocks for v, st in block if v))
    tested: list[tuple[float, str, str]] = []
    for kind in KINDS:
        for frame in set(pooled_base[kind]) | set(pooled_value[kind]):
            top_share = max(pooled_base[kind].get(frame, 0.0),
                            pooled_value[kind].get(frame, 0.0))
            if top_share >= min_share:
                tested.append((top_share, kind, frame))
    tested.sort(reverse=True)
    tested = tested[:max_frames]
    k = max(1, len(tested))
    judged = n_blocks >= MIN_BLOCKS and df >= 1
    quantile = _t_quantile(df, 1 - alpha / (2 * k)) if judged else math.nan
    out = []
    for _top, kind, frame in tested:
        mean, se = _within_blocks([[(v, sh[kind].get(frame, 0.0)) for v, sh in b]
                                   for b in used])
        low = high = None
        if judged and se is not None:
            low, high = mean - quantile * se, mean + quantile * se
        out.append(Moved(frame, kind, pooled_base[kind].get(frame, 0.0),
                         pooled_value[kind].get(frame, 0.0), mean, low, high, n_blocks))
    out.sort(key=lambda m: (not m.moved, -abs(m.delta)))
    return out


def _within_blocks(blocks: Sequence[Sequence[tuple[bool, float]]]) -> tuple[float, float | None]:
    """The value's effect with blocks as fixed effects: (mean of the blocks' differences of
    side means, its standard error from the residuals; None without residual freedom)."""
    diffs, sxx, rss, n = [], 0.0, 0.0, 0
    for block in blocks:
        on = [y for v, y in block if v]
        off = [y for v, y in block if not v]
        diffs.append(sum(on) / len(on) - sum(off) / len(off))
        x_mean = len(on) / len(block)
        sxx += sum((float(v) - x_mean) ** 2 for v, _ in block)
        n += len(block)
    delta = sum(diffs) / len(diffs)
    # residuals about each block's side means (the block and the value's effect fitted; a
    # per-block effect beyond the mean one is in the residuals, as in the OLS fit)
    for block in blocks:
        on = [y for v, y in block if v]
        off = [y for v, y in block if not v]
        centre = (sum(on) + sum(off)) / len(block)
        x_mean = len(on) / len(block)
        for v, y in block:
            fitted = centre + delta * (float(v) - x_mean)
            rss += (y - fitted) ** 2
    df = n - len(blocks) - 1
    if df < 1 or sxx <= 0:
        return delta, None
    return delta, math.sqrt(rss / df / sxx)


# Ratios of two counters' rates, per stretch, compared like the rates (not a second: a
# count per count): what a receive path's batching is. `per.packets_per_net_rx`: packets the
# stack took (softnet processed) per NET_RX softirq, what one NAPI round hands up;
# `per.segments_per_ip_packet`: IP segments received (IpExtIn*Pkts count a GRO packet's
# segments) per IP packet the stack took (IpInReceives counts a GRO packet once): 1.0 where
# nothing was merged. A tunnel's outer packets count 1 in both.
RATIOS = {
    "per.packets_per_net_rx": (("softnet.processed",), ("softirq.NET_RX",)),
    "per.segments_per_ip_packet": (("nstat.IpExtInNoECTPkts", "nstat.IpExtInECT0Pkts",
                                    "nstat.IpExtInECT1Pkts", "nstat.IpExtInCEPkts"),
                                   ("nstat.IpInReceives",)),
}


def ratios(rates: Mapping[str, float]) -> dict[str, float]:
    """RATIOS of a stretch's rates, where both sides have moved."""
    out = {}
    for name, (top, bottom) in RATIOS.items():
        num = sum(rates.get(n, 0.0) for n in top)
        den = sum(rates.get(n, 0.0) for n in bottom)
        if num > 0 and den > 0:
            out[name] = num / den
    return out


COUNTER_KEYS = ("pair", "host", "value", "base", "counter", "base_rate", "rate", "pct",
                "low", "high", "moved", "blocks", "machine")
RateBlock = Sequence[tuple[bool, Mapping[str, float]]]  # a block's stretches: (value?, rates)


@dataclass(frozen=True, slots=True)
class CounterMoved:
    """One counter's rate under each value and the change in % of the base's rate."""

    counter: str
    base_rate: float
    rate: float
    pct: float
    low: float | None
    high: float | None
    blocks: int

    @property
    def moved(self) -> bool:
        return excludes_zero(self.low, self.high)


def compare_counters(blocks: Sequence[RateBlock], *, alpha: float = FAMILY_ALPHA,
                     max_counters: int = MAX_FRAMES) -> list[CounterMoved]:
    """Each counter's change of rate (a second) from the base to the value, in % of the
    base's mean rate, with the frames' model (blocks as fixed effects, stretches as samples,
    Bonferroni over the counters tested: those that moved at all, the busiest first)."""
    used = [b for b in blocks if any(v for v, _ in b) and any(not v for v, _ in b)]
    n_blocks = len(used)
    if not n_blocks:
        return []
    names: dict[str, float] = {}
    for block in used:
        for _, rates in block:
            for name, rate in rates.items():
                names[name] = max(names.get(name, 0.0), abs(rate))
    tested = sorted((n for n, top in names.items() if top > 0), key=lambda n: -names[n])
    tested = tested[:max_counters]
    df = sum(len(b) for b in used) - n_blocks - 1
    judged = n_blocks >= MIN_BLOCKS and df >= 1
    quantile = _t_quantile(df, 1 - alpha / (2 * max(1, len(tested)))) if judged else math.nan
    out = []
    for name in tested:
        rows = [[(v, float(rates.get(name, 0.0))) for v, rates in b] for b in used]
        base_values = [y for b in rows for v, y in b if not v]
        value_values = [y for b in rows for v, y in b if v]
        base_rate = sum(base_values) / len(base_values)
        rate = sum(value_values) / len(value_values)
        delta, se = _within_blocks(rows)
        if base_rate <= 0:
            continue  # no rate to give a change in % of
        low = high = None
        if judged and se is not None:
            low = 100 * (delta - quantile * se) / base_rate
            high = 100 * (delta + quantile * se) / base_rate
        out.append(CounterMoved(name, base_rate, rate, 100 * delta / base_rate, low, high,
                                n_blocks))
    out.sort(key=lambda m: (not m.moved, -abs(m.pct)))
    return out


def counter_rows(pair: str, host: str, value: str, base: str, moved: Sequence[CounterMoved],
                 machine: bool = False) -> list[dict[str, Any]]:
    return [{"pair": pair, "host": host, "value": value, "base": base, "counter": m.counter,
             "base_rate": round(m.base_rate, 3), "rate": round(m.rate, 3),
             "pct": round(m.pct, 2), "low": None if m.low is None else round(m.low, 2),
             "high": None if m.high is None else round(m.high, 2), "moved": m.moved,
             "blocks": m.blocks, "machine": machine} for m in moved]


def _merged(parts: Any) -> dict[str, int]:
    out: dict[str, int] = {}
    for part in parts:
        for stack, count in part.items():
            out[stack] = out.get(stack, 0) + count
    return out


def rows(pair: str, host: str, value: str, base: str, moved: Sequence[Moved],
         machine: bool = False) -> list[dict[str, Any]]:
    """The recorded rows (ROW_KEYS) of one comparison."""
    return [{"pair": pair, "host": host, "value": value, "base": base, "frame": m.frame,
             "kind": m.kind, "base_share": round(m.base_share, 3), "share": round(m.share, 3),
             "delta": round(m.delta, 3),
             "low": None if m.low is None else round(m.low, 3),
             "high": None if m.high is None else round(m.high, 3),
             "moved": m.moved, "blocks": m.blocks, "machine": machine} for m in moved]


def top(rows_: Sequence[Mapping[str, Any]], limit: int = 10) -> list[Mapping[str, Any]]:
    """The rows a reader sees first: the moved ones by the size of the change, else the
    largest changes (none of them moved)."""
    ordered = sorted(rows_, key=lambda r: (not r.get("moved"), -abs(_num(r.get("delta")))))
    return ordered[:limit]


def _num(value: Any) -> float:
    return float(value) if isinstance(value, int | float) else 0.0


def interval_text(row: Mapping[str, Any]) -> str:
    low, high = row.get("low"), row.get("high")
    if isinstance(low, int | float) and isinstance(high, int | float):
        return f"[{low:+.2f}, {high:+.2f}]"
    return f"(fewer than {MIN_BLOCKS} blocks: no interval)"
