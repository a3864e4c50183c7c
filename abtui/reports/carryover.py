"""First-order carryover: what a value leaves to the stretch after it (Linux's TCP metrics
cache handing the last connection's ssthresh and RTT to the next to the same host; a queue
left full), estimated from the order the blocks were drawn in.

A value with no effect of its own whose after-effect moves the next stretch by 3–10 % read as
a difference 0.20–0.27 of the time, every one of the wrong sign: over the six balanced
orders a compared value's own stretches follow it less often than the base's do, so the
block log ratio carries about −¼ of the after-effect. The varied orders make it estimable:
per pair (a crossover: its half log ratio series), a least-squares fit of every stretch's log
rate on its block (fixed), the value in it (one indicator per compared value) and the value
in the stretch before (the same), over the stretches whose predecessor is known (the first
of the run is not: left out). Its sums are kept per block (`sums`) so that every look's fit
is a running total (`fits`).

The rule (abtui.reports.sequential.assess): when the fit shows a carryover (its t beyond
the two-sided CARRY_LEVEL quantile), the verdict says so ("carryover: a stretch after B runs
+5.0 % [+3.2, +6.9]"), and a difference is claimed only if the direct effect adjusted for it
is significant at the look's level as well, with the same sign; else "a difference not
separated from carryover". Without a shown carryover the claim needs only the adjusted effect
beyond a loose level (CONFIRM_LEVEL) with the same sign, which a real effect the log ratios
call nearly always passes, so the power at +3 % is kept. Measured in docs/sequential.md.
"""

from __future__ import annotations

from typing import Any, NamedTuple

import numpy as np

# the fit "shows" a carryover when its t is beyond this two-sided level's quantile: at 0.01
# an after-effect of 3 % under 3 % noise, too weak to show, was claimed 0.09 of the time; at
# 0.2 the power at +3 % / 3 % fell to 0.796 (1 500 runs each)
CARRY_LEVEL = 0.1
# whether shown or not, a claim needs the adjusted effect beyond this two-sided level's
# quantile with the log ratios' sign: a carryover too weak to show still leaks about a quarter
# of itself into the ratios (an after-effect of 3 % under 3 % noise: claimed 0.060 without
# this check), while a real effect the ratios call is almost never this weak once adjusted
CONFIRM_LEVEL = 0.32


class Sums(NamedTuple):
    """Per block the within-block centred cross products of the fit's features (x: the
    compared values present, then p: they were in the stretch before) and the log rate:
    ff (…, blocks, m, m), fy (…, blocks, m), yy (…, blocks), the stretches fitted (…,
    blocks); m = 2 × compared values."""

    ff: Any
    fy: Any
    yy: Any
    n: Any


class Fit(NamedTuple):
    """The fit at each look (cumulative over blocks): per compared value the direct effect
    and the carryover (…, compared, blocks) with their standard errors, and the residual
    degrees of freedom (…, blocks)."""

    tau: Any
    tau_se: Any
    gamma: Any
    gamma_se: Any
    df: Any


def sums(logs: Any, pos: Any) -> Sums:
    """The blocks' sums from log rates (…, stretches; nan: not fitted) in the schedule's
    `pos` (as sequential.contrasts takes it)."""
    y = np.asarray(logs, dtype=float)
    pos = np.asarray(pos, dtype=np.int64)
    blocks, values, per = pos.shape[-3:]
    lead = pos.shape[:-3]
    stretches = y.shape[-1]
    # the value each stretch ran (-1: in no complete block), at pos's leading shape
    label = np.full((*lead, stretches + 1), -1, dtype=np.int64)  # + 1: index -1 → unknown
    who = np.broadcast_to(np.arange(values)[:, None], (blocks, values, per))
    idx = pos.reshape((*lead, -1))
    np.put_along_axis(label, idx, np.broadcast_to(who.reshape(-1), idx.shape), -1)
    prev = np.take_along_axis(label, idx - 1, -1)  # idx 0 - 1 = -1: the extra slot, unknown
    now = np.take_along_axis(label, idx, -1)
    k = values - 1
    onehot = np.arange(1, values)
    f = np.concatenate([(now[..., None] == onehot), (prev[..., None] == onehot)], -1)
    f = f.astype(float).reshape((*lead, blocks, values * per, 2 * k))
    known = (prev >= 0).reshape((*lead, blocks, values * per))
    while idx.ndim < y.ndim:  # pos without the logs' pair axis
        idx, f, known = idx[..., None, :], f[..., None, :, :, :], known[..., None, :, :]
    got = np.take_along_axis(y, np.broadcast_to(idx, y.shape[:-1] + idx.shape[-1:]), -1)
    got = got.reshape((*y.shape[:-1], blocks, values * per))
    w = (known & np.isfinite(got)).astype(float)
    f = np.broadcast_to(f, (*got.shape, 2 * k))
    yv = np.where(w > 0, got, 0.0)
    n = w.sum(-1)
    with np.errstate(invalid="ignore", divide="ignore"):
        mf = np.where(n[..., None] > 0, (w[..., None] * f).sum(-2) / n[..., None], 0.0)
        my = np.where(n > 0, (w * yv).sum(-1) / np.maximum(n, 1), 0.0)
    fc = (f - mf[..., None, :]) * w[..., None]
    yc = (yv - my[..., None]) * w
    ff = np.einsum("...si,...sj->...ij", fc, fc)
    fy = np.einsum("...si,...s->...i", fc, yc)
    return Sums(ff, fy, (yc * yc).sum(-1), n)


def fits(s: Sums) -> Fit:
    """Every look's fit from the blocks' running totals."""
    ff = np.cumsum(s.ff, -3)
    fy = np.cumsum(s.fy, -2)
    yy = np.cumsum(s.yy, -1)
    n = np.cumsum(s.n, -1)
    used = np.cumsum(s.n > 0, -1)
    m = ff.shape[-1]
    k = m // 2
    ridge = 1e-12 * np.eye(m)
    inv = np.linalg.pinv(ff + ridge)
    beta = np.einsum("...ij,...j->...i", inv, fy)
    rss = np.maximum(yy - np.einsum("...i,...i->...", beta, fy), 0.0)
    df = n - used - m
    with np.errstate(invalid="ignore", divide="ignore"):
        var = np.where(df > 0, rss / np.maximum(df, 1), np.nan)
    diag = np.diagonal(inv, 0, -2, -1)
    se = np.sqrt(np.maximum(diag, 0.0) * var[..., None])
    move = lambda a: np.moveaxis(a, -1, -2)  # noqa: E731  (… × blocks × k → … × k × blocks)
    return Fit(move(beta[..., :k]), move(se[..., :k]), move(beta[..., k:]), move(se[..., k:]),
               df)


def confirms(tau: Any, se: Any, df: Any, sign: Any) -> Any:
    """Whether the adjusted direct effect is beyond Student's two-sided CONFIRM_LEVEL quantile
    of its standard error, with the sign `sign`."""
    from scipy.stats import t as student_t

    df = np.asarray(df, dtype=float)
    q = student_t.isf(CONFIRM_LEVEL / 2, np.maximum(df, 1))
    with np.errstate(invalid="ignore"):
        return (df > 0) & (np.abs(tau) > q * se) & (np.sign(tau) == np.sign(sign))


def shown(gamma: Any, se: Any, df: Any) -> Any:
    """Whether a fit shows a carryover: |γ| beyond Student's two-sided CARRY_LEVEL quantile
    of its standard error."""
    from scipy.stats import t as student_t

    df = np.asarray(df, dtype=float)
    q = student_t.isf(CARRY_LEVEL / 2, np.maximum(df, 1))
    with np.errstate(invalid="ignore"):
        return (df > 0) & np.isfinite(se) & (np.abs(gamma) > q * se)
