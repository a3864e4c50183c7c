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
MIN_SHARE = 0.5  # percent of a side's samples for a frame to be tested
MAX_FRAMES = 200  # tested frames per comparison at most (the largest)
MIN_BLOCKS = 3  # blocks before an interval is given
KINDS = ("self", "children", "thread")
ROW_KEYS = ("pair", "host", "value", "base", "frame", "kind", "base_share", "share", "delta",
            "low", "high", "moved", "blocks", "machine")

Stacks = Mapping[str, int]


def shares(stacks: Stacks) -> dict[str, dict[str, float]]:
    """Per kind, each frame's percentage of the samples."""
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
        return self.low is not None and self.high is not None and (
            self.low > 0 or self.high < 0)


def _t_quantile(df: int, p: float) -> float:
    from scipy.special import stdtrit

    return float(stdtrit(df, p))


def compare(blocks: Sequence[tuple[Stacks, Stacks]], *, alpha: float = FAMILY_ALPHA,
            min_share: float = MIN_SHARE, max_frames: int = MAX_FRAMES) -> list[Moved]:
    """Each tested frame's change from the base (each block's first) to the value (its
    second), sorted: the moved first, then by the size of the change."""
    per_block = [(shares(base), shares(value)) for base, value in blocks
                 if sum(base.values()) > 0 and sum(value.values()) > 0]
    n = len(per_block)
    if not n:
        return []
    pooled_base = shares(_merged(b for b, _ in blocks))
    pooled_value = shares(_merged(v for _, v in blocks))
    tested: list[tuple[float, str, str]] = []
    for kind in KINDS:
        frames = set(pooled_base[kind]) | set(pooled_value[kind])
        for frame in frames:
            top = max(pooled_base[kind].get(frame, 0.0), pooled_value[kind].get(frame, 0.0))
            if top >= min_share:
                tested.append((top, kind, frame))
    tested.sort(reverse=True)
    tested = tested[:max_frames]
    k = max(1, len(tested))
    quantile = _t_quantile(n - 1, 1 - alpha / (2 * k)) if n >= MIN_BLOCKS else math.nan
    out = []
    for _top, kind, frame in tested:
        deltas = [v[kind].get(frame, 0.0) - b[kind].get(frame, 0.0) for b, v in per_block]
        mean = sum(deltas) / n
        low = high = None
        if n >= MIN_BLOCKS:
            sd = math.sqrt(sum((d - mean) ** 2 for d in deltas) / (n - 1))
            half = quantile * sd / math.sqrt(n)
            low, high = mean - half, mean + half
        out.append(Moved(frame, kind, pooled_base[kind].get(frame, 0.0),
                         pooled_value[kind].get(frame, 0.0), mean, low, high, n))
    out.sort(key=lambda m: (not m.moved, -abs(m.delta)))
    return out


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
