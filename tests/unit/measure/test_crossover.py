"""The crossover design (`--alternate KNOB=A,B --design crossover`): two pairs in mirrored
orders drawn from the seed, both switched in one call to the engine, one verdict on the mean
of the two pairs' block log ratios; the report's rows name the design (and a build knob's
boots and spreads)."""

from __future__ import annotations

import argparse
import asyncio
import math
from collections.abc import Mapping

import numpy as np
import pytest

from abtui.core.errors import BadInput, KnobRefused
from abtui.core.model import Knob, KnobKind, Pair, Profile
from abtui.measure.alternate.design import (
    Alternation,
    check_design,
    mirror,
    order_line,
    pair_orders,
    positions,
    schedule,
)
from abtui.measure.alternate.drive import drive
from abtui.measure.alternate.stretches import Stretches
from abtui.measure.alternate.verdicts import Verdicts, verdicts_for
from abtui.measure.boots import boot_spread
from abtui.reports import sequential as sq
from tests.unit.measure.engine.test_engine_parts import FakeKnobs
from tests.unit.measure.test_alternate import after

BIG, SMALL = "4096 131072 6291456", "4096 8192 16384"
VALUES = (BIG, SMALL)


def _profile(pairs: int = 2, kind: KnobKind = KnobKind.SYSCTL) -> Profile:
    knob = Knob(name="rmem", kind=kind, key="net.ipv4.tcp_rmem" if kind is KnobKind.SYSCTL
                else None, values=VALUES)
    return Profile(name="x", pairs=[Pair(label=lb, sender=f"s{lb}", receiver=f"r{lb}",
                                         target=f"198.18.{i + 1}.2")
                                    for i, lb in enumerate("PQR"[:pairs])], knobs=[knob])


# ---- the schedule ---------------------------------------------------------------------------

def test_the_second_pair_runs_the_opposite_value_in_every_stretch_of_a_balanced_block() -> None:
    for seed in range(40):
        order = schedule(VALUES, 10, seed)
        orders = pair_orders("crossover", order, VALUES, ("P", "Q"))
        assert orders["P"] == order
        assert all(a != b for a, b in zip(orders["P"], orders["Q"], strict=True))
        for pos in positions(orders["Q"], VALUES):  # Q's blocks are balanced orders too
            assert [len(at) for at in pos] == [2, 2]
    # every block's order: one of the six, the mirror another of the six
    for k, b in enumerate(sq.BALANCED):
        assert tuple(1 - x for x in b) == sq.BALANCED[len(sq.BALANCED) - 1 - k]
    assert mirror(("a", "a", "b", "a"), ("a", "b")) == ("b", "b", "a", "b")
    # blocks: every pair the same order
    same = pair_orders("blocks", schedule(VALUES, 3, 1), VALUES, ("P", "Q", "R"))
    assert len(set(same.values())) == 1


def test_the_orders_replay_from_the_seed_and_differ_between_seeds() -> None:
    alt = Alternation("rmem", VALUES, 1.0, 20, seed=1234, design="crossover")
    a, b = verdicts_for(_profile(), alt), verdicts_for(_profile(), alt)
    assert a.orders == b.orders and a.seed == b.seed == 1234
    other = verdicts_for(_profile(), Alternation("rmem", VALUES, 1.0, 20, seed=1235,
                                                 design="crossover"))
    assert other.orders != a.orders
    assert a.values_at(0) == {"P": a.order[0], "Q": mirror(a.order, VALUES)[0]}
    line = order_line("rmem", 1234, VALUES, "crossover", ("P", "Q"))
    assert "crossed over P and Q" in line and "Q the mirror" in line
    assert "--seed 1234 --design crossover" in line
    # one comparison: the family is one, judged on both pairs
    assert a.keys == [("P+Q", SMALL)] and a.family.size == 1


def test_a_crossover_takes_two_values_on_exactly_two_pairs() -> None:
    check_design("crossover", VALUES, ("P", "Q"))
    with pytest.raises(BadInput, match="exactly two, not 3"):
        check_design("crossover", VALUES, ("P", "Q", "R"))
    with pytest.raises(BadInput, match="two values are crossed over two pairs, not 3"):
        check_design("crossover", (*VALUES, "x"), ("P", "Q"))
    with pytest.raises(BadInput, match="not a design"):
        check_design("latin", VALUES, ("P", "Q"))
    with pytest.raises(BadInput, match="exactly two, not 1"):
        verdicts_for(_profile(1), Alternation("rmem", VALUES, 1.0, design="crossover"))


def test_the_run_command_checks_the_design() -> None:
    from abtui.commands.run import _alternation

    def args(**kw: object) -> argparse.Namespace:
        base = {"seed": None, "alternate": f"rmem={BIG},{SMALL}", "every": 1.0,
                "max_runs": None, "until_verdict": False, "design": "crossover"}
        return argparse.Namespace(**(base | kw))

    got = _alternation(args(), _profile())
    assert got is not None and got.design == "crossover"
    with pytest.raises(BadInput, match="--design crossover: give --every"):
        _alternation(args(every=None), _profile())
    with pytest.raises(BadInput, match="exactly two, not 3"):
        _alternation(args(), _profile(3))
    with pytest.raises(BadInput, match="--design goes with --alternate"):
        _alternation(args(alternate=None, every=None), _profile())


# ---- the verdict ----------------------------------------------------------------------------

class Fed(Stretches):
    """Stretches that measure themselves as they open: pair × value × stretch index."""

    def begin(self, index: int, value: str | Mapping[str, str]) -> None:
        super().begin(index, value)
        for pair in self.pairs:
            self(after(self, pair, self.rate(pair, self.held[pair], index)))  # type: ignore[attr-defined]


def _crossover(rate, seed: int = 7, max_runs: int = 8) -> Verdicts:  # type: ignore[no-untyped-def]
    s = Fed("rmem", VALUES, ("P", "Q"), min_seconds=0.0)
    s.rate = rate  # type: ignore[attr-defined]
    blocks = max_runs // 2
    return Verdicts(s, schedule(VALUES, blocks, seed), seed, sq.Family(1, blocks, arrangements=6),
                    min_effect=1.0, design="crossover")


async def _run(v: Verdicts, every: float = 0.0) -> list[dict[str, str]]:
    """The live loop on `v` (drive); each call it made to set the pairs' values."""
    calls: list[dict[str, str]] = []
    v.stretches.begin(0, v.values_at(0))
    await drive(lambda _k, values: calls.append(dict(values)),
                Alternation("rmem", VALUES, every, 8, until_verdict=True, design="crossover"),
                v, lambda _line: None)
    v.stretches.close()
    return calls


async def test_drive_switches_both_pairs_in_one_call_each_to_its_own_value() -> None:
    v = _crossover(lambda *_: 1e9, max_runs=4)
    calls = await _run(v)
    assert calls and all(set(c) == {"P", "Q"} and c["P"] != c["Q"] for c in calls)
    changes = [v.values_at(i) for i in range(1, v.stretches.closed)
               if v.order[i] != v.order[i - 1]]
    assert calls == changes[:len(calls)]
    # each pair's stretch counted under the value it ran
    for pair in ("P", "Q"):
        for i, rate in v.stretches.taken[pair].items():
            assert rate > 0 and v.orders[pair][i] in VALUES


async def test_the_pair_effect_and_a_shared_disturbance_cancel_in_the_crossover() -> None:
    """Q's hardware 40 % slower, and a disturbance shared in time (−30 % on every stretch of
    index 3 mod 4 on both pairs), with no difference between the values: the crossover's
    mean log ratio is exactly 0 in every block (each pair alone sees ±0.18 in the blocks the
    disturbance hits one value of) and it claims nothing; a real −20 % on both pairs is
    called, its Δ the mean of the pairs'."""
    def level(pair: str, index: int) -> float:
        return (0.6 if pair == "Q" else 1.0) * (0.7 if index % 4 == 3 else 1.0)

    v = _crossover(lambda pair, _value, i: 5e9 * level(pair, i))
    await _run(v)
    got = v.current()[("P+Q", SMALL)]
    assert not got.significant and got.n >= 2
    assert np.allclose(v.ratios("P+Q", SMALL), 0.0, atol=1e-9)
    each = v._contrast("P+Q", SMALL)
    assert each is not None and each.tss is not None
    effect = {BIG: 1.0, SMALL: 0.8}
    rng = np.random.default_rng(3)
    noise = rng.normal(1, 0.01, 500)
    w = _crossover(lambda pair, value, i: 5e9 * level(pair, i) * effect[value] * noise[i])
    await _run(w)
    called = w.current()[("P+Q", SMALL)]
    assert called.significant and called.delta is not None
    assert -23 < called.delta.pct < -17
    rows = w.table()
    assert rows[0]["pair"] == "P+Q" and rows[0]["design"] == "crossover"
    assert "boots" not in rows[0]  # a sysctl: no boots


def test_crossed_contrasts_are_the_mean_of_the_pairs_and_a_shared_disturbance_cancels(
        ) -> None:
    """The crossover's block ratio is the mean of the pairs'; a disturbance shared in time
    (the same factor on both pairs' stretch) changes neither it nor its spread, where it
    swells each pair's own spread; the drawn arrangement is among the options."""
    rng = np.random.default_rng(1)
    order = schedule(VALUES, 3, 11)
    pos_p = [[b[0], b[1]] for b in positions(order, VALUES)]
    pos_q = [[b[0], b[1]] for b in positions(mirror(order, VALUES), VALUES)]
    rp, rq = np.exp(rng.normal(0, 0.01, 12)), 0.6 * np.exp(rng.normal(0, 0.01, 12))
    cp, cq = sq.contrasts(rp, pos_p), sq.contrasts(rq, pos_q)
    c = sq.crossed(rp, rq, pos_p, pos_q)
    assert np.allclose(c.d, (cp.d + cq.d) / 2)
    assert np.allclose(c.floor, (cp.floor + cq.floor) / 2)
    for b in range(3):
        assert np.min(np.abs(c.options[0, b] - c.d[0, b])) < 1e-12
    shared = np.exp(rng.normal(0, 0.2, 12))  # 20 % swings, on both pairs at once
    loaded = sq.crossed(rp * shared, rq * shared, pos_p, pos_q)
    assert np.allclose(loaded.d, c.d) and np.allclose(loaded.tss, c.tss)
    assert sq.contrasts(rp * shared, pos_p).tss.sum() > 50 * cp.tss.sum()
    # a dead stretch on the second pair is counted against the value it ran there (the base:
    # the compared value died one fewer), and its block leaves the log ratios
    dead = rq.copy()
    dead[pos_q[0][0][0]] = 0.0  # the base's stretch on Q
    got = sq.crossed(rp, dead, pos_p, pos_q)
    assert np.isnan(got.d[0, 0]) and np.isfinite(got.d[0, 1:]).all()
    assert got.dead[0][0].tolist() == [-1, 0, 0] and got.dead[2][0].tolist() == [1, 0, 0]
    assert np.min(np.abs(got.dead[1][0, 0] - got.dead[0][0, 0])) == 0  # drawn among options


@pytest.mark.sim
def test_the_crossover_rule_s_false_claims_stay_within_alpha_under_a_pair_effect_and_drift(
        ) -> None:
    """A/A on two pairs, Q 30 % slower, a −5 % drift shared in time and 3 % noise: 400
    simulated crossovers (the bench's own; docs/sequential.md has the 2 000-run rates)."""
    from tests.bench import seqsim

    got = seqsim.crossover_claims(np.random.default_rng(5), seqsim.Timed(
        "drift", sd=0.03, drift=-0.05, period=5.0), 400, pair_effect=-0.3)
    assert (got.decided > 0).mean() <= 0.08
    # the same runs with +10 % on the second value: found in nearly all
    hit = seqsim.crossover_claims(np.random.default_rng(5), seqsim.Timed(
        "drift", sd=0.03, drift=-0.05, period=5.0), 200, effect=math.log(1.1),
        pair_effect=-0.3)
    assert (hit.decided > 0).mean() >= 0.95


# ---- boots ----------------------------------------------------------------------------------

def test_every_stretch_is_a_boot_and_the_spreads_pool_over_pairs() -> None:
    order = "AABBBBAA"
    # boot to boot: A's stretches at 100, 100, 110, 110; B's all 50; within a boot: each
    # stretch's readings ±1 % (df 1, ss 2e-4)
    taken = {0: 100.0, 1: 100.0, 2: 50.0, 3: 50.0, 4: 50.0, 5: 50.0, 6: 110.0, 7: 110.0}
    within = {i: (1, 2e-4) for i in range(8)}
    got = boot_spread([(taken, order, within)], 8)
    assert got.boots == {"A": 4, "B": 4}
    assert got.within is not None and abs(got.within - 100 * math.sqrt(8 * 2e-4 / 8)) < 1e-9
    ln = math.log(1.1) / 2  # A's four about their mean: ±ln(1.1)/2
    assert got.between is not None and abs(got.between - 100 * math.sqrt(4 * ln ** 2 / 6)) \
        < 1e-9
    # a dead stretch is left out of the spreads (its boot counted); one stretch of a value
    # gives no between, a stretch of one reading no within
    lone = boot_spread([({0: 0.0, 1: 5.0}, "AB", {})], 2)
    assert lone.boots == {"A": 1, "B": 1} and lone.between is None and lone.within is None


class Twice(Fed):
    """Two readings a stretch, 2 % apart: a spread within each boot."""

    def begin(self, index: int, value: str | Mapping[str, str]) -> None:
        super().begin(index, value)
        for pair in self.pairs:
            self(after(self, pair, 0.98 * self.rate(pair, self.held[pair], index)))  # type: ignore[attr-defined]


async def test_a_build_knob_s_rows_say_boots_and_both_spreads() -> None:
    v = verdicts_for(_profile(kind=KnobKind.KERNEL), Alternation(
        "rmem", VALUES, 1.0, 8, seed=3, design="crossover"))
    fed = Twice("rmem", VALUES, ("P", "Q"), min_seconds=0.0)
    noise = iter(np.random.default_rng(2).normal(1, 0.02, 100))
    fed.rate = lambda *_: 5e9 * next(noise)  # type: ignore[attr-defined]
    v.stretches = fed
    await _run(v)
    row = v.table()[0]
    assert row["boots"] + row["base_boots"] == 2 * v.stretches.closed  # a boot a stretch

    assert isinstance(row["boot_sd"], float) and isinstance(row["within_sd"], float)


def test_the_report_names_the_design_and_a_build_s_boots() -> None:
    from abtui.reports import alternation

    rows = [{"pair": "P+Q", "knob": "kernel", "value": "b", "base": "a", "delta": "Δgeo",
             "pct": -3.1, "low": -5.0, "high": -1.2, "verdict": "significant", "blocks": 4,
             "dead": 0, "seed": 9, "design": "crossover", "boots": 6, "base_boots": 6,
             "boot_sd": 1.24, "within_sd": 0.51}]
    header, body = alternation.table(rows)
    assert header[1] == "design" and body[0][1] == "crossover"
    assert "boots (value / base)" in header and "6 / 6" in body[0]
    assert "1.2" in body[0] and "0.5" in body[0]
    old = [{k: v for k, v in rows[0].items() if k not in ("design", "boots")}]
    header, body = alternation.table(old)
    assert body[0][1] == "blocks" and "boots (value / base)" not in header


# ---- the engine: one call, each pair its own value -----------------------------------------

async def test_the_engine_sets_each_pair_its_own_value_in_one_change() -> None:
    from abtui.core.events import Event, EventKind
    from abtui.measure.engine.front import Engine

    prof = _profile()
    engine = Engine(prof, parser_factory=lambda _f: None, ping_parser_factory=lambda: None,
                    use_journal=False)  # type: ignore[arg-type,return-value]
    knobs = FakeKnobs()
    running: list[str] = []
    at_once: list[int] = []
    asked = knobs.apply

    async def apply(knob, value, pairs):  # type: ignore[no-untyped-def]
        running.append(value)
        await asyncio.sleep(0.05)
        at_once.append(len(running))
        await asked(knob, value, pairs)
        await asyncio.sleep(0.05)
        running.remove(value)
        return {}

    knobs.apply = apply  # type: ignore[method-assign]
    engine.knobs.use(knobs)
    events: list[Event] = []
    engine.subscribe(events.append)
    await engine.set_values("rmem", {"P": BIG, "Q": SMALL})
    assert sorted(knobs.asked) == sorted([("rmem", BIG, ["P"]), ("rmem", SMALL, ["Q"])])
    assert at_once == [2, 2]  # both values applied concurrently
    assert engine.book.phases["P"].config == {"rmem": BIG}
    assert engine.book.phases["Q"].config == {"rmem": SMALL}
    # the next boundary: both switch, each to the other value
    for label in ("P", "Q"):
        engine.book.phases[label].running(True)
    events.clear()
    await engine.set_values("rmem", {"P": SMALL, "Q": BIG})
    phases = {e.pair: e.payload.config for e in events if e.kind is EventKind.PHASE}
    assert phases == {"P": {"rmem": BIG}, "Q": {"rmem": SMALL}}  # the phases closed
    assert engine.book.phases["P"].config == {"rmem": SMALL}
    # one value refused: that pair stays as it was, the other takes its own
    with pytest.raises(KnobRefused, match="invalid value"):
        await engine.set_values("rmem", {"P": BIG, "Q": "bad"})
    assert engine.book.phases["P"].config == {"rmem": BIG}
    assert engine.book.phases["Q"].config == {"rmem": BIG}
    assert engine.book.phases["Q"].pending is None


def test_a_phase_that_measured_nothing_takes_the_change_and_starts_after_it() -> None:
    """A change before the pair's run started (a restart under load outlasting a stretch):
    the phase takes the new value and starts when the change is done, so it never spans a
    time its pair ran the other value (before, it kept its old start)."""
    from abtui.measure.phases import PairPhases

    ph = PairPhases("P", config={"rmem": BIG}, start=10.0)
    assert ph.commit_change(20.0, 20.5, {"rmem": SMALL}) is None
    assert ph.config == {"rmem": SMALL} and ph.start == 20.5 and ph.phase == 0
    ph.running(True)
    closed = ph.commit_change(30.0, 30.4, {"rmem": BIG})
    assert closed is not None and (closed.payload.start, closed.payload.end) == (20.5, 30.0)
