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

from dataclasses import dataclass

import numpy as np

from abtui.measure.alternate import positions, schedule
from abtui.reports import sequential as sq

SUBSTEPS = 24  # a stretch's load fraction, averaged on this many points


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


def host_noise(rng: np.random.Generator, runs: int, pairs: int, n: int, sc: Scenario
               ) -> np.ndarray:
    """Log throughput noise, runs × pairs × n stretches."""
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
    if sc.period:
        phase = rng.uniform(0, sc.period, (runs, 1, 1))
        t = np.arange(n)[None, :, None] + (np.arange(SUBSTEPS) + 0.5) / SUBSTEPS
        on = ((t[None] + phase[..., None]) % sc.period) < sc.period / 2
        shared += np.log1p(-sc.load * on.mean(-1))
    if sc.stall_p:
        x += np.where(rng.random(x.shape) < sc.stall_p, np.log(0.3), 0.0)
    return x + shared


def ratios(rng: np.random.Generator, runs: int, pairs: int, values: int, blocks: int,
           sc: Scenario, effects: tuple[float, ...] | None = None, *, strict: bool = False
           ) -> np.ndarray:
    """Block log ratios runs × (pairs × compared values) × blocks, the order drawn per run
    by abtui's schedule (`strict`: ABAB…, the old order, for comparison); `effects` the
    values' true log effects (default none)."""
    names = tuple(str(v) for v in range(values))
    eff = np.asarray(effects if effects is not None else (0.0,) * values)
    n = values * blocks
    logs = host_noise(rng, runs, pairs, n, sc)
    pos = np.empty((runs, blocks, values), dtype=np.int64)
    for r in range(runs):
        order = names * blocks if strict else \
            schedule(names, blocks, int(rng.integers(2**31)))
        pos[r] = positions(order, names)
        logs[r] += eff[[int(v) for v in order]]
    taken = np.take_along_axis(logs[:, :, None, :],
                               pos.transpose(0, 2, 1)[:, None, :, :], axis=3)
    d = taken[:, :, 1:, :] - taken[:, :, :1, :]  # runs × pairs × compared × blocks
    return d.reshape(runs, pairs * (values - 1), blocks)


def false_claims(rng: np.random.Generator, sc: Scenario, runs: int, pairs: int = 2,
                 values: int = 3, blocks: int = 20, strict: bool = False) -> float:
    """The share of A/A runs in which any comparison of the family turns significant."""
    d = ratios(rng, runs, pairs, values, blocks, sc, strict=strict)
    got = sq.simulate(d, sq.Family(d.shape[1], blocks))
    return float((got.decided > 0).any(axis=1).mean())


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
