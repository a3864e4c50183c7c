"""Why B is faster: the profiles' rule and their cost.

- `why_false_moved_rate` and `why_power_2pp`: the rule of abtui.reports.why, simulated. A
  host's profile is 300 stacks with Zipf-like weights (a few functions hold most samples, a
  long tail below the share tested); an alternation of 8 blocks of four stretches of 2 000
  samples each (10 s at 99 Hz on 2 CPUs). What real hosts add is in every stretch: each
  stack's weight moved by its own 5 % noise; a co-tenant's load taking 0–30 % of the samples,
  drawn per block (drift), plus a periodic one every 3 stretches; a stalled stretch (half its
  samples idle) in one run of four. The false-moved rate is the share of A/A runs in which any
  frame is called moved; the power, the share of runs with a real +2-point change of one
  function (taken from the rest) in which that function is called moved up.
- `profile_overhead_pct` and `profile_session_mb_per_min`: on a lab of its own, pair A, 5 s
  runs with the profile on (99 Hz) and off, alternated A B B A over ROUNDS rounds, each round's
  two runs back to back (a pair); the overhead is one less the median of the pairs' ratios of
  the receiver's rate, in percent (the overhead record's method), its note the median's 95 %
  interval by order statistics (distribution-free): on a shared machine single runs spread by
  a factor of 2-3, and the interval says whether the rounds could settle 2 %. The session's
  growth per profiled minute is the size of the PROFILE events written, per minute of
  profiled runs.
"""

from __future__ import annotations

import asyncio
import statistics
import tempfile
from pathlib import Path
from typing import Any

import numpy as np

from abtui.core.events import EventKind
from abtui.lab.netns import Lab
from abtui.reports import why
from abtui.sessions.session import Session
from abtui.sessions.writer import SessionWriter
from tests.bench.bench_engine import _engine, _plan, _profile
from tests.bench.judge import measures
from tests.bench.labs import with_lab

SEED = 20261207
RUNS = 300
BLOCKS = 8
SAMPLES = 2000
STACKS = 300
ORDERS = ("AABB", "ABAB", "ABBA", "BAAB", "BABA", "BBAA")


def _host(rng: np.random.Generator) -> tuple[list[str], np.ndarray]:
    """300 stacks over 60 functions in 3 threads, Zipf-like weights."""
    functions = [f"f{i}" for i in range(60)]
    stacks = []
    for i in range(STACKS):
        depth = int(rng.integers(2, 6))
        frames = rng.choice(functions, size=depth, replace=False)
        stacks.append(";".join([f"t{i % 3}", *frames, f"leaf{i % 40}"]))
    weights = 1.0 / np.arange(1, STACKS + 1) ** 1.1
    return stacks, weights / weights.sum()


def _stretch(rng: np.random.Generator, stacks: list[str], weights: np.ndarray,
             cotenant: float, stalled: bool) -> dict[str, int]:
    w = weights * np.exp(rng.normal(0, 0.05, len(weights)))
    w = w / w.sum() * (1 - cotenant)
    names = [*stacks, "other;busy", "swapper;idle"]
    idle = 0.5 if stalled else 0.0
    probs = np.concatenate([w * (1 - idle), [cotenant * (1 - idle), idle]])
    counts = rng.multinomial(SAMPLES, probs / probs.sum())
    return {n: int(c) for n, c in zip(names, counts, strict=True) if c}


def _run(rng: np.random.Generator, shift: float) -> tuple[bool, bool]:
    """One alternation: (any frame moved, the shifted function moved up)."""
    stacks, weights = _host(rng)
    target = "leaf7"
    shifted = weights.copy()
    if shift:
        holding = np.array([s.endswith(target) for s in stacks])
        gain = shift / 100.0
        shifted[holding] *= 1 + gain / shifted[holding].sum()
        shifted[~holding] *= (1 - shifted[holding].sum()) / shifted[~holding].sum()
    stall_at = int(rng.integers(0, BLOCKS * 4)) if rng.random() < 0.25 else -1
    blocks: list[why.Block] = []
    for b in range(BLOCKS):
        drift = float(rng.uniform(0, 0.3))
        order = ORDERS[int(rng.integers(0, 6))]
        block = []
        for s, side in enumerate(order):
            i = b * 4 + s
            cotenant = min(0.6, drift + (0.15 if i % 3 == 0 else 0.0))
            w = shifted if side == "B" else weights
            block.append((side == "B", _stretch(rng, stacks, w, cotenant, i == stall_at)))
        blocks.append(block)
    moved = why.compare(blocks)
    hit = any(m.moved and m.frame == target and m.kind == "self" and m.delta > 0
              for m in moved)
    return any(m.moved for m in moved), hit


@measures("why_false_moved_rate", "why_power_2pp")
def why_rates() -> list[dict[str, Any]]:
    rng = np.random.default_rng(SEED)
    false = sum(_run(rng, 0.0)[0] for _ in range(RUNS)) / RUNS
    power = sum(_run(rng, 2.0)[1] for _ in range(RUNS)) / RUNS
    model = (f"{BLOCKS} blocks of 4 stretches of {SAMPLES} samples, {STACKS} stacks, 5 % "
             "stack noise, co-tenant 0-30 % per block and +15 % every 3 stretches, a stalled "
             "stretch in 1 run of 4")
    return [{"name": "why_false_moved_rate", "value": round(false, 4), "unit": "",
             "note": f"{RUNS} A/A alternations: any frame called moved; {model}"},
            {"name": "why_power_2pp", "value": round(power, 4), "unit": "",
             "note": f"{RUNS} alternations with one function +2 points: called moved up"}]


# ---- cost on the lab -------------------------------------------------------------------
ROUNDS = 16  # 6 left the median ±15 % at the spread of a loaded machine
SECONDS = 5


def median_interval(values: list[float], level: float = 0.95) -> tuple[float, float]:
    """The median's distribution-free interval: the order statistics k and n-1-k that the
    binomial(n, 1/2) puts at least `level` between; the whole range when n is too small."""
    from math import comb

    xs = sorted(values)
    n = len(xs)
    best = 0
    for k in range(n // 2):
        inside = sum(comb(n, j) for j in range(k + 1, n - k)) / 2 ** n
        if inside >= level:
            best = k + 1
        else:
            break
    k = max(best - 1, 0)
    return (xs[k], xs[n - 1 - k]) if xs else (float("nan"), float("nan"))


async def _arms(lab: Lab, tmp: Path) -> tuple[list[float], list[float], int, float]:
    """(rates with profile, rates without, PROFILE bytes written, profiled seconds)."""
    on, off = [], []
    profile_bytes, profiled_s = 0, 0.0
    for i in range(ROUNDS):
        for hz in ((99, 0) if i % 2 == 0 else (0, 99)):
            profile = _profile(lab, 1, duration=SECONDS, profile_hz=hz)
            engine = _engine(profile, tmp)
            path = tmp / f"r{i}-{hz}.abtui.jsonl"
            writer = SessionWriter(path, profile="bench", pairs=["A"], compact=False)
            engine.subscribe(writer.write)
            try:
                await engine.connect()
                await _plan(engine)
            finally:
                await engine.shutdown()
                writer.close()
            final = writer.final_path or writer.path
            session = Session.load(final)
            run = session.runs_of("A")[0]
            rate = (run.summary or {}).get("receiver_bits_per_second") or 0.0
            (on if hz else off).append(rate)
            if hz:
                profiled_s += SECONDS
                profile_bytes += sum(len(line) for line in path.read_text().splitlines()
                                     if f'"kind": "{EventKind.PROFILE}"' in line
                                     or f'"kind":"{EventKind.PROFILE}"' in line) \
                    if path.exists() else 0
    return on, off, profile_bytes, profiled_s


@measures("profile_overhead_pct", "profile_session_mb_per_min")
def profile_cost() -> list[dict[str, Any]]:
    def measure(lab: Lab) -> tuple[list[float], list[float], int, float]:
        with tempfile.TemporaryDirectory(prefix="abtui-bench-why-") as tmp:
            return asyncio.run(_arms(lab, Path(tmp)))

    on, off, size, seconds = with_lab(1, measure)
    ratios = [a / b for a, b in zip(on, off, strict=True) if b]
    overhead = (1 - statistics.median(ratios)) * 100 if ratios else None
    low, high = median_interval(ratios) if ratios else (float("nan"), float("nan"))
    return [{"name": "profile_overhead_pct", "value": None if overhead is None
             else round(overhead, 2), "unit": "%",
             "note": f"1 - median of {len(ratios)} paired ratios (99 Hz on / off, pair A, "
                     f"{SECONDS} s runs, A B B A); 95 % interval of the overhead "
                     f"[{(1 - high) * 100:+.1f}, {(1 - low) * 100:+.1f}] %; ratios "
                     f"{min(ratios, default=0):.3f}-{max(ratios, default=0):.3f}; medians "
                     f"{statistics.median(on) / 1e9:.2f} and "
                     f"{statistics.median(off) / 1e9:.2f} Gbit/s"},
            {"name": "profile_session_mb_per_min",
             "value": round(size / 1e6 / (seconds / 60), 3) if seconds else None,
             "unit": "MB/min", "note": f"PROFILE events of {seconds:g} s of profiled runs "
                                       "(the journal as written, before its gzip)"}]


RECORDS = [why_rates, profile_cost]
