"""Simulated alternations for the statistics bench and its unit test: stretch values under a
noise scenario, in the order the project's own schedule draws (abtui.measure.alternate), turned
into block log ratios as the live verdicts take them (`positions`), judged by the live rule
vectorised (abtui.reports.sequential.simulate).

A stretch is one time unit; each pair's log throughput in stretch s is the sum of: the value's
effect, independent noise (`sd`), a linear drift (`drift` over the whole run), slowly varying
AR(1) noise (`phi`, marginal spread `ar_sd`), periodic interference (a load that takes `load`
of the throughput for half of every `period` stretches, at a random phase, averaged over the
stretch), and stalls (a stretch that, with probability `stall_p`, keeps only 30 %). Drift,
interference and the slow noise are the host's: the same on both pairs.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from abtui.measure.alternate.design import arrangements, max_blocks, positions, schedule
from abtui.reports import carryover
from abtui.reports import sequential as sq

SUBSTEPS = 24  # a stretch's load fraction, averaged on this many points
CHUNK = 50  # per_seed: seeds simulated together


@dataclass(frozen=True)
class Scenario:
    name: str
    sd: float = 0.03
    drift: float = 0.0
    phi: float = 0.0
    ar_sd: float = 0.0
    period: float = 0.0
    load: float = 0.3
    stall_p: float = 0.0
    # the load's clock against the schedule's, for periodic interference (all drawn per run):
    # a stretch's real length in stretches (`length`: the load's timer and the schedule's drift
    # apart), the time a flip adds to the stretch it opens (`flip_s`: a flip is remote
    # commands, and a stretch that keeps the value has none), and iperf3's interval (`interval`,
    # on a clock of its own: a stretch's value is its complete intervals', as Stretches counts)
    length: tuple[float, float] = (1.0, 1.0)
    flip_s: tuple[float, float] = (0.0, 0.0)
    interval: float = 0.0

    @property
    def clocked(self) -> bool:
        """Whether the load is on a clock of its own (else a stretch is exactly one unit)."""
        return self.length != (1.0, 1.0) or self.flip_s != (0.0, 0.0) or bool(self.interval)


# the false-claim scenarios: every source of trouble the issue names
NULLS = (
    Scenario("independent 1 %", sd=0.01),
    Scenario("independent 3 %", sd=0.03),
    Scenario("independent 10 %", sd=0.10),
    Scenario("drift -5 %", sd=0.01, drift=-0.05),
    Scenario("AR(1) 0.9", sd=0.005, phi=0.9, ar_sd=0.03),
    Scenario("AR(1) 0.97", sd=0.005, phi=0.97, ar_sd=0.03),
    Scenario("periodic 2 x stretch", sd=0.01, period=2.0),
    Scenario("periodic 2.1 x stretch", sd=0.01, period=2.1),
    Scenario("periodic 3 x stretch", sd=0.01, period=3.0),
    Scenario("periodic 4 x stretch", sd=0.01, period=4.0),
    Scenario("periodic 6 x stretch", sd=0.01, period=6.0),
    Scenario("periodic 0.7 x stretch", sd=0.01, period=0.7),
    Scenario("stalls 5 %", sd=0.02, stall_p=0.05),
)


def host_noise(rng: np.random.Generator, runs: int, pairs: int, n: int, sc: Scenario,
               flips: np.ndarray | None = None) -> np.ndarray:
    """Log throughput noise, runs × pairs × n stretches; `flips` (runs × n) the stretches
    a flip opens (a clocked scenario's stretches are longer by the flip's time)."""
    x = rng.normal(0.0, sc.sd, (runs, pairs, n))
    shared = np.zeros((runs, 1, n))
    if sc.drift:
        shared += np.log1p(sc.drift) * np.arange(n) / max(1, n - 1)
    if sc.phi:
        e = rng.normal(0.0, sc.ar_sd * np.sqrt(1 - sc.phi**2), (runs, n))
        ar = np.empty((runs, n))
        ar[:, 0] = rng.normal(0.0, sc.ar_sd, runs)
        for s in range(1, n):
            ar[:, s] = sc.phi * ar[:, s - 1] + e[:, s]
        shared += ar[:, None, :]
    if sc.period and sc.clocked:
        shared += np.log1p(-sc.load * loaded(rng, runs, n, sc, flips))[:, None, :]
    elif sc.period:
        phase = rng.uniform(0, sc.period, (runs, 1, 1))
        t = np.arange(n)[None, :, None] + (np.arange(SUBSTEPS) + 0.5) / SUBSTEPS
        on = ((t[None] + phase[..., None]) % sc.period) < sc.period / 2
        shared += np.log1p(-sc.load * on.mean(-1))
    if sc.stall_p:
        x += np.where(rng.random(x.shape) < sc.stall_p, np.log(0.3), 0.0)
    return x + shared


def loaded(rng: np.random.Generator, runs: int, n: int, sc: Scenario,
           flips: np.ndarray | None = None) -> np.ndarray:
    """The loaded share of each stretch's counted time (runs × n), the load on for half of
    every `period` at a random phase, on its own clock (Scenario: length, flip_s, interval)."""
    u = (np.arange(SUBSTEPS) + 0.5) / SUBSTEPS
    phase = rng.uniform(0, sc.period, (runs, 1, 1))
    dur = rng.uniform(*sc.length, (runs, 1)) + rng.uniform(*sc.flip_s, (runs, 1)) * (
        flips if flips is not None else np.zeros((runs, n)))
    end = np.cumsum(dur, axis=1)
    start = end - dur
    if not sc.interval:
        t = start[..., None] + dur[..., None] * u
        return (((t + phase) % sc.period) < sc.period / 2).mean(-1)
    step = sc.interval  # interval j spans off + step (j - 1) … + step
    off = rng.uniform(0, step, (runs, 1))
    t = (off + step * (np.arange(int(end.max() / step) + 3) - 1))[..., None] + step * u
    each = (((t + phase) % sc.period) < sc.period / 2).mean(-1)
    sums = np.concatenate([np.zeros((runs, 1)), np.cumsum(each, axis=1)], axis=1)
    first = np.ceil((start - off) / step).astype(int) + 1
    last = np.floor((end - off) / step).astype(int)
    if (last < first).any():
        raise ValueError(f"a stretch shorter than twice the interval {step} counts none")
    return (np.take_along_axis(sums, last + 1, 1) - np.take_along_axis(sums, first, 1)) / (
        last - first + 1)


def untimed_rates(rng: np.random.Generator, runs: int, pairs: int, values: int, blocks: int,
                  sc: Scenario, effects: tuple[float, ...] | None = None, *,
                  seeds: np.ndarray | None = None) -> tuple[np.ndarray, np.ndarray]:
    """Stretch rates runs × pairs × stretches under `sc` (every stretch one unit, or on the
    load's own clock: Scenario.clocked) and each run's positions (runs × blocks × values ×
    per), the order drawn per run by abtui's schedule (`seeds`: run r in the order of
    schedule seed seeds[r], as `--seed` replays it); `effects` the values' true log effects
    (default none)."""
    names = tuple(str(v) for v in range(values))
    eff = np.asarray(effects if effects is not None else (0.0,) * values)
    seeds = rng.integers(2**31, size=runs) if seeds is None else np.asarray(seeds)
    cache: dict[int, tuple[np.ndarray, np.ndarray]] = {}
    for seed in np.unique(seeds):
        order = schedule(names, blocks, int(seed))
        cache[int(seed)] = (np.asarray(positions(order, names)), np.asarray(order, dtype=int))
    pos = np.stack([cache[int(x)][0] for x in seeds])
    at = np.stack([cache[int(x)][1] for x in seeds])
    flips = np.concatenate([np.zeros((runs, 1), bool), at[:, 1:] != at[:, :-1]], axis=1)
    logs = host_noise(rng, runs, pairs, at.shape[1], sc, flips) + eff[at][:, None, :]
    return np.exp(logs), pos


def rule(rates: np.ndarray, pos: np.ndarray, values: int, blocks: int,
         min_effect: float = 1.0, spending: str = sq.SPENDING[0], check: bool = True,
         pooled: bool = True, deaths: bool = True, carry: bool = True) -> sq.Simulated:
    """The live rule on stretch rates (runs × pairs × stretches) in the runs' orders `pos`:
    the block log ratios, their resolution floor, pooled spread and randomisation check as
    Verdicts takes them (sequential.contrasts), Holm over pairs × compared values."""
    names = tuple(str(v) for v in range(values))
    runs = rates.shape[0]
    got = sq.contrasts(rates, pos)
    d = got.d.reshape(runs, -1, got.d.shape[-1])
    options = np.broadcast_to(got.options, got.d.shape + got.options.shape[-1:]).reshape(
        d.shape + got.options.shape[-1:])
    tss = None if got.tss is None else np.broadcast_to(got.tss, got.d.shape).reshape(d.shape)
    family = sq.Family(d.shape[1], blocks, spending=spending,
                       arrangements=arrangements(names))
    return sq.simulate(d, family, min_effect, floor=got.floor.reshape(runs, -1),
                       options=options if check else None, tss=tss if pooled else None,
                       died=judged_deaths(got, runs) if deaths else None,
                       carry=fitted(got, runs) if carry else None)


def judged_deaths(got: sq.Contrasts, runs: int) -> tuple[np.ndarray, ...]:
    """Contrasts.dead as simulate takes it: run × comparison × block (× arrangement)."""
    obs, options, both = got.dead
    options = np.broadcast_to(options, np.shape(obs) + np.shape(options)[-1:])
    return (np.reshape(obs, (runs, -1, np.shape(obs)[-1])),
            np.reshape(options, (runs, -1, *np.shape(options)[-2:])),
            np.reshape(both, (runs, -1, np.shape(both)[-1])))


def fitted(got: sq.Contrasts, runs: int) -> carryover.Fit:
    """The carryover fit at every block as simulate takes it (run × comparison × block)."""
    fit = carryover.fits(got.carry)
    df = np.broadcast_to(np.asarray(fit.df)[..., None, :], np.shape(fit.tau))
    return carryover.Fit(*(np.reshape(x, (runs, -1, np.shape(x)[-1]))
                           for x in (fit.tau, fit.tau_se, fit.gamma, fit.gamma_se, df)))


def ratios(rng: np.random.Generator, runs: int, pairs: int, values: int, blocks: int,
           sc: Scenario, effects: tuple[float, ...] | None = None) -> np.ndarray:
    """Block log ratios runs × (pairs × compared values) × blocks (untimed_rates)."""
    rates, pos = untimed_rates(rng, runs, pairs, values, blocks, sc, effects)
    d = sq.contrasts(rates, pos).d
    return d.reshape(runs, -1, d.shape[-1])


def false_claims(rng: np.random.Generator, sc: Scenario, runs: int, pairs: int = 2,
                 values: int = 3, max_runs: int = 20) -> float:
    """The share of A/A runs in which any comparison of the family turns significant."""
    blocks = max_blocks(range(values), max_runs)
    rates, pos = untimed_rates(rng, runs, pairs, values, blocks, sc)
    return float((rule(rates, pos, values, blocks).decided > 0).any(axis=1).mean())


def per_seed(rng: np.random.Generator, sc: Scenario, seeds: Sequence[int], runs: int,
             pairs: int = 2, values: int = 2, max_runs: int = 20) -> np.ndarray:
    """The false-claim rate of each seed's order (what `--seed N` replays) over `runs` A/A
    runs that differ in the load's phase, the stretch's real length and the noise."""
    blocks = max_blocks(range(values), max_runs)
    out = []
    for at in range(0, len(seeds), CHUNK):  # a chunk of seeds at a time: the arrays stay small
        some = np.repeat(np.asarray(seeds[at:at + CHUNK]), runs)
        rates, pos = untimed_rates(rng, some.size, pairs, values, blocks, sc, seeds=some)
        claimed = (rule(rates, pos, values, blocks).decided > 0).any(axis=1)
        out.append(claimed.reshape(-1, runs).mean(axis=1))
    return np.concatenate(out)


def calibration(got: sq.Simulated) -> tuple[int, float]:
    """Of the looks that said "about k more blocks", how many, and the share resolved (turned
    significant, or the interval within ±min_effect) within k more looks."""
    within = np.cumsum(got.within, axis=-1)
    looks = got.looks
    last = looks.size - 1
    claims = resolved = 0
    for li in range(looks.size):
        k = got.more[..., li]
        said = k > 0
        if not said.any():
            continue
        end = np.minimum(li + k, last)
        by = looks[end]
        hit = (got.decided > 0) & (got.decided <= by)
        hit |= np.take_along_axis(within, end[..., None], -1)[..., 0] > within[..., li]
        claims += int(said.sum())
        resolved += int((hit & said).sum())
    return claims, resolved / max(1, claims)


# ---- time-resolved alternations: the boundary as drive() times it ---------------------------

@dataclass(frozen=True)
class Timed:
    """A null (or not) scenario on the clock: a stretch is one unit (`--every`); a flip takes
    `flip_s` (drawn per flip, uniform) and restarts the run (`restart`: iperf3's interval clock
    starts again once the value is confirmed); iperf3's intervals are `interval` long on their
    own clock; a load takes `load` of the throughput for half of every `period` stretches (0:
    none; "block": the block's length), at a random phase; a stretch is dead (moves nothing)
    with probability `dead_p`, on any value; `quantise`: each interval's rate printed with 3
    significant digits (around `level`); `sd` independent noise a stretch and pair; `drift`
    over the run. `restart` "every": every boundary restarts the runs, kept value or
    changed, as the engine's `again` does (each boundary's restart drawn from `flip_s`, the
    new runs' interval clock from its end), then pauses until it has lasted as long as one
    of the changes so far, drawn, as drive pads it; "every, kept": only a kept value's
    boundary pauses so (drive before: 0.077 false claims under a load of 2 stretches).
    `carry`: a stretch after one of value 1 on the same pair is that much (log) faster,
    whatever it runs (a value with an after-effect); `dead_value`: a stretch of value 1
    dies with this probability (the value's doing); `dead_one`: one stretch of each run,
    drawn, dies on the first pair (the host's doing)."""

    name: str
    sd: float = 0.01
    flip_s: tuple[float, float] = (0.02, 0.3)
    restart: bool | str = True
    interval: float = 0.1
    period: float | str = 0.0
    load: float = 0.3
    dead_p: float = 0.0
    quantise: bool = False
    level: float = 9.41
    drift: float = 0.0
    carry: float = 0.0
    dead_value: float = 0.0
    dead_one: bool = False


def old_schedule(values: Sequence[str], blocks: int, seed: int) -> tuple[str, ...]:
    """Last round's schedule (blocks of every value once, AB or BA for two), to reproduce its
    failures."""
    import random

    rng = random.Random(seed)
    out: list[str] = []
    for _ in range(blocks):
        block = list(values)
        rng.shuffle(block)
        out += block
    return tuple(out)


def old_positions(order: Sequence[str], values: Sequence[str]) -> list[list[tuple[int, ...]]]:
    m = len(values)
    return [[(order.index(v, b * m),) for v in values] for b in range(len(order) // m)]


def _on(a: np.ndarray, b: np.ndarray, period: float, phase: np.ndarray) -> np.ndarray:
    """The share of [a, b] in which a load on for the first half of every period is on."""
    def g(x: np.ndarray) -> np.ndarray:
        x = x + phase
        return np.floor(x / period) * period / 2 + np.minimum(np.mod(x, period), period / 2)
    return (g(b) - g(a)) / np.maximum(b - a, 1e-12)


def timed_rates(rng: np.random.Generator, runs: int, pairs: int, values: int, blocks: int,
                sc: Timed, effects: tuple[float, ...] | None = None, *, old: bool = False,
                window: float = 0.2, pad: bool = True, crossover: bool = False,
                pair_effect: float = 0.0) -> tuple[np.ndarray, np.ndarray]:
    """Stretch rates runs × pairs × stretches (nan: no sample) and each run's positions
    (runs × blocks × values × per), timed as drive() times the boundary: `old` as last round
    (the next stretch begun before the flip, its `every` counted from the flip's end,
    intervals straddling a flip dropped, a stretch that counted under half its time no
    sample, blocks of one stretch a value); else every boundary alike (close, flip when the
    value changes, `window` dropped, the stretch's clock from there, intervals begun in it;
    `pad`: a boundary that keeps the value waits the median time of the flips so far).
    `crossover` (two pairs, two values): the second pair runs the mirror of the order (its
    positions: `mirror_positions`); `pair_effect`: the second pair's hardware that much
    slower (or faster), a log offset on every stretch.
    """
    names = tuple(str(v) for v in range(values))
    sched, posf = (old_schedule, old_positions) if old else (schedule, positions)
    eff = np.asarray(effects if effects is not None else (0.0,) * values)
    seeds = rng.integers(2**31, size=runs)
    orders = [np.asarray(sched(names, blocks, int(s)), dtype=int) for s in seeds]
    pos = np.asarray([posf(tuple(str(x) for x in o), names) for o in orders])
    at = np.asarray(orders)  # runs × n
    n = at.shape[1]
    flip = np.r_[np.zeros((runs, 1), bool).T, (at[:, 1:] != at[:, :-1]).T].T
    every = sc.restart in ("every", "every, kept") and not old
    drawn = rng.uniform(*sc.flip_s, (runs, n))
    f = np.where(flip | every, drawn, 0.0)
    period = float(len(old_schedule(names, 1, 0)) if old else
                   len(schedule(names, 1, 0))) if sc.period == "block" else float(sc.period)
    phase = rng.uniform(0, period or 1.0, runs)
    L = sc.interval
    begin = np.empty((runs, n))
    end = np.empty((runs, n))
    origin = rng.uniform(0, L, runs)  # the interval clock
    t = np.zeros(runs) if old else np.full(runs, window)
    ran = np.stack([at, 1 - at], 1) if crossover else at[:, None, :]  # runs × pairs × n
    level = eff[ran] + rng.normal(0.0, sc.sd, (runs, pairs, n))
    if pair_effect:
        level[:, 1:] += np.log1p(pair_effect)
    if sc.drift:
        level += np.log1p(sc.drift) * np.arange(n) / max(1, n - 1)
    if sc.carry:
        level[..., 1:] += sc.carry * (ran[..., :-1] == 1)
    rates = np.zeros((runs, pairs, n))
    one = rng.integers(0, n, runs)
    for s in range(n):
        if old:  # begun at t; flip from t to t + f; `every` from the flip's end
            begin[:, s], end[:, s] = t, t + f[:, s] + 1.0
            counted_from = t + f[:, s]
            last_arrival = end[:, s]
        else:
            took = np.zeros(runs)
            if s:
                took = f[:, s]
                if pad:  # one of the flips so far, drawn (none yet: no pause)
                    seen = flip[:, 1:s]
                    count = seen.sum(1)
                    pick = np.floor(rng.random(runs) * np.maximum(count, 1)).astype(int)
                    rank = np.cumsum(seen, 1) - 1
                    chosen = (rank == pick[:, None]) & seen
                    typical = (np.where(chosen, f[:, 1:s], 0.0)).sum(1)
                    # restarting at every boundary, a kept value's boundary restarts the
                    # runs too (f: its restart) and then pauses until it has lasted as long
                    # as the drawn change (drive: max(0, drawn - took))
                    took = np.where(flip[:, s] & (sc.restart != "every"), took,
                                    np.maximum(took, typical) if every else typical)
                t = end[:, s - 1] + took + window
            begin[:, s], end[:, s] = t, t + 1.0
            counted_from = t
            last_arrival = end[:, s]
        if every:  # the runs restarted f into the boundary, before its pause and window
            origin = begin[:, s] - window - took + f[:, s] + 0.02
        elif sc.restart:
            origin = np.where(flip[:, s], begin[:, s] + f[:, s] + 0.02, origin)
        k0 = np.ceil((counted_from - origin) / L - 1e-9)
        if old:  # arrived after the begin, not straddling the flip
            k0 = np.maximum(k0, np.where(flip[:, s], k0, np.floor((begin[:, s] - origin) / L)))
        k1 = np.floor((last_arrival - origin) / L + 1e-9) - 1  # last interval ending by then
        width = int(np.max(k1 - k0)) + 1
        total = np.zeros((runs, pairs))
        count = np.maximum(k1 - k0 + 1, 0)
        for j in range(max(width, 0)):
            k = k0 + j
            a = origin + k * L
            on = _on(a, a + L, period, phase) if period else np.zeros(runs)
            r = sc.level * np.exp(level[:, :, s]) * (1 - sc.load * on)[:, None]
            if sc.quantise:
                r = _round3(r)
            total += np.where((j < count)[:, None], r, 0.0)
        rate = total / np.maximum(count, 1)[:, None]
        if sc.dead_p:
            rate = np.where(rng.random((runs, pairs)) < sc.dead_p, 0.0, rate)
        if sc.dead_value:
            rate = np.where((ran[:, :, s] == 1) & (rng.random((runs, pairs)) < sc.dead_value),
                            0.0, rate)
        if sc.dead_one:
            rate[:, 0] = np.where(one == s, 0.0, rate[:, 0])
        if old:  # under half its time: no sample (a dead stretch among them)
            short = (count * L < 0.5)[:, None] | (rate <= 0)
            rate = np.where(short, np.nan, rate)
        rates[:, :, s] = rate
        if old:
            t = end[:, s]
    return rates, pos


def mirror_positions(pos: np.ndarray) -> np.ndarray:
    """A crossover's second pair's positions (runs × blocks × 2 × 2) from the first's: the
    same stretches, the values swapped."""
    return np.asarray(pos)[..., ::-1, :]


def crossover_claims(rng: np.random.Generator, sc: Timed, runs: int, max_runs: int = 20,
                     effect: float = 0.0, pair_effect: float = 0.0,
                     check: bool = True) -> sq.Simulated:
    """The crossover's rule (one comparison, the mean of the two pairs' block log ratios,
    sequential.crossed) on `timed_rates` of two pairs in mirrored orders; `effect` the
    second value's true log effect on both pairs."""
    names = ("0", "1")
    blocks = max_blocks(names, max_runs)
    rates, pos = timed_rates(rng, runs, 2, 2, blocks, sc, (0.0, effect), crossover=True,
                             pair_effect=pair_effect)
    got = sq.crossed(rates[:, 0], rates[:, 1], pos, mirror_positions(pos))
    family = sq.Family(1, blocks, arrangements=arrangements(names))
    return sq.simulate(got.d, family, 1.0, floor=got.floor, options=got.options if check
                       else None, tss=got.tss, died=judged_deaths(got, runs),
                       carry=fitted(got, runs))


def _round3(r: np.ndarray) -> np.ndarray:
    """Rates as iperf3 prints them: 3 significant digits."""
    step = 10.0 ** (np.floor(np.log10(np.where(r > 0, r, 1.0))) - 2)
    return np.round(r / step) * step


def timed_claims(rng: np.random.Generator, sc: Timed, runs: int, pairs: int, values: int,
                 max_runs: int = 20, old: bool = False,
                 effects: tuple[float, ...] | None = None, check: bool = True,
                 spending: str = sq.SPENDING[0], pooled: bool = True) -> sq.Simulated:
    """The live rule on `timed_rates` (`old`: last round's schedule, boundary and rule)."""
    names = tuple(str(v) for v in range(values))
    blocks = max_runs if old else max_blocks(names, max_runs)
    rates, pos = timed_rates(rng, runs, pairs, values, blocks, sc, effects, old=old)
    if not old:
        return rule(rates, pos, values, blocks, spending=spending, check=check, pooled=pooled)
    d = sq.contrasts(rates, pos).d
    d = np.where(np.isnan(d), 0.0, d).reshape(runs, -1, d.shape[-1])  # (dropped: rare here)
    return sq.simulate(d, sq.Family(d.shape[1], blocks, spending="obrien-fleming"))
