"""Deaths as their own outcome: a stretch that moved nothing (a stall, a run the value or the
host killed) is left out of the block log ratios and counted, per value, here.

Counted as a log rate (before: at 1 % of the pair's median, a block log ratio of about ±2.3),
one dead stretch the host caused among 40 took the power at +3 % / 3 % noise from 0.78 to
0.24 and printed an A/A median |Δ| of 23 %. Counted apart, the question is the one a user asks
("B died in 3 of 20 stretches, A in 0: is B worse?"), and its test is exact over the draw of
the block orders whatever made the stretches die: the statistic is the value's dead stretches
less the base's in the complete blocks so far; under no difference each block's dead slots
stay where they are and only the drawn arrangement decides which value they fall on, so its
null distribution is the convolution of each block's count under its equally likely
arrangements (`p_values`, exact, two-sided). A host's deaths clustered in time are no harm to
it.

The family's α is shared only when the deaths can say something: at a look at which even the
most extreme split of the deaths seen would not reach the deaths' level (`pmin`: one dead
stretch never can, two or three hardly), the log ratios keep the whole α; else the deaths get
DEATH_SHARE of it and the log ratios the rest (abtui.reports.sequential.Family). Measured in
docs/sequential.md.
"""

from __future__ import annotations

from typing import Any

import numpy as np

# the share of a comparison's α the deaths get at a look at which they can reach it
DEATH_SHARE = 0.9


def counts(dead: Any, pos: Any, balanced: Any = None) -> tuple[Any, Any, Any]:
    """Per compared value and complete block, the value's dead stretches less the base's
    (…, compared, blocks), the same under each arrangement the block could have been
    drawn in (…, compared, blocks, arrangements), and both values' dead stretches (…,
    compared, blocks): `dead` (…, stretches; True: moved
    nothing), `pos` as sequential.contrasts takes it; `balanced` (arrangements × 4, 0 the
    base, 1 the other): for blocks of four of two values, the orders a block is drawn from;
    else a block is one permutation and the two values' places swap or not."""
    x = np.asarray(dead, dtype=float)
    pos = np.asarray(pos, dtype=np.int64)
    shape = pos.shape[-3:]
    idx = pos.reshape((*pos.shape[:-3], -1))
    while idx.ndim < x.ndim:
        idx = idx[..., None, :]
    got = np.take_along_axis(x, np.broadcast_to(idx, x.shape[:-1] + idx.shape[-1:]), -1)
    per = got.reshape(x.shape[:-1] + shape).sum(-1)  # … × blocks × values
    obs = np.moveaxis(per[..., 1:] - per[..., :1], -2, -1)  # … × compared × blocks
    both = np.moveaxis(per[..., 1:] + per[..., :1], -2, -1)
    if balanced is not None and shape[-2:] == (2, 2):
        slots = np.sort(idx.reshape((*idx.shape[:-1], -1, 4)), -1).reshape(idx.shape)
        y = np.take_along_axis(x, np.broadcast_to(slots, x.shape[:-1] + slots.shape[-1:]), -1)
        y = y.reshape((*x.shape[:-1], -1, 4))
        weights = 2.0 * (np.asarray(balanced, dtype=float) - 0.5)  # +1 the value, -1 the base
        return obs, np.rint(y @ weights.T)[..., None, :, :], both
    return obs, np.stack([obs, -obs], -1), both


def p_values(obs: Any, options: Any) -> tuple[Any, Any]:
    """At each block (cumulative: the blocks up to it), the exact two-sided randomisation p
    of the total `obs` (…, blocks; integers) and the smallest p any split of the same dead
    slots could have given (`pmin`), from each block's equally likely counts `options`
    (…, blocks, arrangements). Blocks with no death add nothing; p is 1 with none."""
    obs = np.rint(np.asarray(obs, dtype=float)).astype(np.int64)
    opt = np.rint(np.asarray(options, dtype=float)).astype(np.int64)
    opt = np.broadcast_to(opt, obs.shape + opt.shape[-1:])
    lead, blocks, arr = obs.shape[:-1], obs.shape[-1], opt.shape[-1]
    flat_obs = obs.reshape(-1, blocks)
    flat_opt = opt.reshape(-1, blocks, arr)
    e = flat_obs.shape[0]
    half = int(np.abs(flat_opt).max(initial=0)) * blocks
    width = 2 * half + 1
    dist = np.zeros((e, width))
    dist[:, half] = 1.0
    total = np.zeros(e, dtype=np.int64)
    p = np.ones((e, blocks))
    pmin = np.ones((e, blocks))
    grid = np.arange(width) - half
    rows = np.arange(e)[:, None]
    for b in range(blocks):
        new = np.zeros_like(dist)
        for a in range(arr):
            src = np.arange(width)[None, :] - flat_opt[:, b, a][:, None]
            ok = (src >= 0) & (src < width)
            new += np.where(ok, dist[rows, np.clip(src, 0, width - 1)], 0.0)
        dist = new / arr
        total += flat_obs[:, b]
        far = np.abs(grid)[None, :] >= np.abs(total)[:, None] - 1e-9
        p[:, b] = np.minimum(1.0, np.where(far, dist, 0.0).sum(1))
        reach = np.where(dist > 1e-15, np.abs(grid)[None, :], -1).max(1)
        pmin[:, b] = np.where(reach > 0, np.where(np.abs(grid)[None, :] == reach[:, None],
                                                  dist, 0.0).sum(1), 1.0)
    return p.reshape((*lead, blocks)), pmin.reshape((*lead, blocks))


def text(value: str, dead: int, n: int, base: str, base_dead: int) -> str:
    """`16384 died in 7 of 20 stretches, 6291456 in 0`."""
    return f"{value} died in {dead} of {n} stretch{'es' if n != 1 else ''}, {base} in " \
           f"{base_dead}"
