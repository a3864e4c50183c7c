"""Verdicts that hold (issue 33, the live rule): every boundary timed alike whatever the
order, a stretch that moved nothing counted against its value, the figures' precision and the
randomisation floor checked before any claim, an obvious effect called within twelve
stretches, and one named Δ. Each test failed before the change it names."""

from __future__ import annotations

import asyncio
import math
from collections.abc import Mapping

import numpy as np
import pytest

from abtui.core.events import Event, IntervalMeasured, RunEnd
from abtui.measure.alternate.design import Alternation, max_blocks, schedule
from abtui.measure.alternate.drive import drive
from abtui.measure.alternate.stretches import Stretches
from abtui.measure.alternate.verdicts import Verdicts
from abtui.reports import sequential as sq
from tests.bench import seqsim as ss

BIG, SMALL = "6291456", "16384"
VALUES = (BIG, SMALL)


def _interval(s: Stretches, pair: str, bps: float) -> Event:
    """A one-second interval that began just after the stretch in force opened."""
    return Event.of(IntervalMeasured.from_data({
        "run": "r", "phase": 0, "bits_per_second": bps, "start": 0, "end": 1,
        "omitted": False, "straddles": False}), s.latest + 1.1, pair=pair)


class Fed(Stretches):
    """Stretches that measure themselves as they open: `rate(pair, index, value)`; None for
    a stretch whose run failed (the engine's RUN_END "error" after three empty intervals)
    and sent nothing more, "empty" for one in which no interval counted (too short, late)."""

    def begin(self, index: int, value: str | Mapping[str, str]) -> None:
        super().begin(index, value)
        for pair in self.pairs:
            got = self.rate(pair, index, self.held[pair])  # type: ignore[attr-defined]
            if got is None:
                self(Event.of(RunEnd(run="r", status="error", summary=None, ping=None,
                                     message="no data moved for 3 intervals"), self.latest + 0.1,
                                     pair=pair))
            elif got != "empty":
                self(_interval(self, pair, got))


def _verdicts(rate, pairs: tuple[str, ...] = ("A",), max_runs: int = 20,  # type: ignore[no-untyped-def]
              seed: int = 1) -> Verdicts:
    s = Fed("tcp_rmem", VALUES, pairs, min_seconds=0.5)
    s.rate = rate  # type: ignore[attr-defined]
    blocks = max_blocks(VALUES, max_runs)
    return Verdicts(s, schedule(VALUES, blocks, seed), seed,
                    sq.Family(len(pairs), blocks, arrangements=6), min_effect=1.0)


# ---- 1. order-free timing ----------------------------------------------------------------

async def test_every_boundary_is_timed_alike_whether_the_value_changes_or_not() -> None:
    """A flip that takes 300 ms: the stretch after it opens `window` after the flip returned
    (its own length never grows), and a boundary that keeps the value pauses as long as a
    flip before its window, so the time between two stretches is one flip and one window
    whatever the order (before: nothing at all at a boundary that kept the value, and the
    flip inside the next stretch)."""
    v = _verdicts(lambda *_: 5e9, max_runs=8, seed=3)
    loop = asyncio.get_running_loop()
    opened: dict[int, float] = {}
    closed: dict[int, float] = {}

    class Clocked(Fed):
        def begin(self, index: int, value: str | Mapping[str, str]) -> None:
            super().begin(index, value)
            opened[index] = loop.time()

        def close(self, full: bool = False) -> None:
            if self.index is not None:
                closed[self.index] = loop.time()
            super().close(full)

    clocked = Clocked("tcp_rmem", VALUES, ("A",), min_seconds=0.5)
    clocked.rate = lambda *_: 5e9  # type: ignore[attr-defined]
    v.stretches = clocked

    async def flip(_knob: str, _value: Mapping[str, str]) -> None:
        await asyncio.sleep(0.3)

    alt = Alternation("tcp_rmem", VALUES, 0.05, 8, window=0.03)
    v.current()  # the designs computed before the clock matters (a look's work is in a gap)
    await drive(flip, alt, v, lambda _line: None)
    order = v.order
    gaps = [(opened[i] - closed[i - 1], order[i] != order[i - 1]) for i in range(1, 12)]
    assert any(changed for _, changed in gaps) and not all(changed for _, changed in gaps)
    for gap, changed in gaps:  # a 300 ms flip or as long a pause, and the 30 ms window
        assert gap > 0.32, (gap, changed, gaps)
    lengths = [closed[i] - opened[i] for i in range(12)]
    assert max(lengths) < 0.25, lengths  # `every` (50 ms) long: never holds a 300 ms flip


@pytest.mark.sim  # a simulation of the rule, drawn many times (`make test` runs it)
def test_a_periodic_load_and_slow_flips_no_longer_make_false_claims() -> None:
    """The audit's failure on the clock (seqsim.timed_rates: flips that take 0.5–3
    stretches, iperf3's intervals on their own clock, a load on for half of every 7
    stretches): last round's boundary and rule claimed a difference in an A/A alternation
    far more than α; every boundary alike, blocks of four and the randomisation check keep
    it within the 0.06 budget."""
    rng = np.random.default_rng(33)
    sc = ss.Timed("periodic 7, slow flips", period=7.0, flip_s=(0.5, 3.0))
    old = (ss.timed_claims(rng, sc, 800, 1, 2, old=True).decided > 0).any(1).mean()
    new = (ss.timed_claims(rng, sc, 1500, 1, 2).decided > 0).any(1).mean()
    assert old > 0.1, old
    assert new <= 0.06, new


# ---- 2. dead stretches count ---------------------------------------------------------------

def test_a_value_dead_in_7_of_20_stretches_is_never_no_difference() -> None:
    """The small value stops the traffic in 7 of its 20 stretches (the engine ended the run,
    nothing arrives after); before, those blocks were left out and the line read "no
    difference of 1% or more". Now the deaths are counted per value and judged on their own
    (issue 45: not as a rate inside the log ratios): it is called worse by its deaths, and
    the line says how often each value died. A stretch in which no interval counted while the
    run was not failing is missing data instead, said as such."""
    rng = np.random.default_rng(7)
    dead = set(rng.choice(20, 7, replace=False))
    seen: dict[str, int] = {BIG: 0, SMALL: 0}

    def rate(_pair: str, _index: int, value: str) -> float | None:
        k = seen[value]
        seen[value] += 1
        if value == SMALL and k in dead:
            return None
        return 5e9 * rng.normal(1, 0.001)

    v = _verdicts(rate)
    for i, value in enumerate(v.order):
        v.stretches.begin(i, value)
    v.stretches.close(full=True)
    (line,) = v.summary()
    empty = _verdicts(lambda _p, i, _v: "empty" if i == 5 else 5e9)
    for i, value in enumerate(empty.order):
        empty.stretches.begin(i, value)
    empty.stretches.close(full=True)
    (row,) = empty.summary()
    assert "1 stretch left out: no interval counted in it" in row and "died" not in row, row
    assert "no difference" not in line, line
    assert f"{SMALL} died in 7 of 20 stretches, {BIG} in 0" in line, line
    got = v.current()[("A", SMALL)]
    assert got.significant and got.by_deaths == 1 and got.verdict == "dies more", line
    assert v.table()[0]["verdict"] == "significant (deaths)"


# ---- 4. resolution-aware -------------------------------------------------------------------

def test_equal_at_printed_precision_is_not_significant() -> None:
    """[9.41]×3 against [9.42]×3 (iperf3's 3 significant digits): zero spread read as
    certainty (`+0.1% [+0.1, +0.1]`); the spread is now never taken below the figures'
    precision: nothing is claimed at the audit's shapes (3 and 5 blocks), and at any look
    the interval is at least as wide as what the figures allow (0.1 %: 9.41 may be 9.405 to
    9.415). A zero spread with no floor never claims."""
    order = schedule(VALUES, 10, 4)
    from abtui.measure.alternate.design import positions

    pos = positions(order, VALUES)
    rates = [9.41e9 if x == BIG else 9.42e9 for x in order]
    got = sq.contrasts(rates, pos)
    for n in range(2, 11):
        design = sq.Family(1, 10, arrangements=6).design()
        said = sq.assess(got.d[0, :n], design, 1.0, float(got.floor[0]), 0,
                         got.options[0, :n], got.tss[0, :n])
        assert n > 5 or not said.significant, (n, said.line())
        d = said.delta
        assert d is not None and d.low is not None and d.high is not None
        assert d.high - d.low >= 0.1, (n, said.line())
    # identical block ratios, no floor given: before, significant at block 2
    assert not sq.assess([0.01, 0.01], sq.Family(1, 20).design()).significant
    assert not sq.assess([0.01] * 12, sq.Family(1, 20).design()).significant


# ---- 5. as fast as the evidence allows -----------------------------------------------------

async def test_a_ten_times_effect_is_called_within_twelve_stretches() -> None:
    """Two pairs, the small value 30 % slower at 3 % noise a stretch (ten times the noise):
    the live objects stop with a verdict on both pairs after three blocks of four (twelve
    stretches) in most orders; before, the randomisation floor forbade any claim before
    block 7 of AB/BA blocks (fourteen). The early-stop note is not printed beside an effect
    this far beyond its boundary."""
    stops = []
    for seed in range(12):
        rng = np.random.default_rng(seed)
        v = _verdicts(lambda _p, _i, value, rng=rng: (  # type: ignore[misc]
            5e9 * (0.7 if value == SMALL else 1.0) * rng.normal(1, 0.03)),
            pairs=("A", "B"), seed=seed)
        v.stretches.begin(0, v.order[0])
        why = await drive(lambda *_: None,
                          Alternation("tcp_rmem", VALUES, 0.0, 20, True), v, lambda _x: None)
        assert why == "verdict"
        stops.append(v.stretches.closed)
        assert all("overstate" not in line for line in v.summary()), v.summary()
    assert np.median(stops) <= 12, stops


# ---- 6. one Δ, named -----------------------------------------------------------------------

def test_the_live_delta_is_named_and_said_once() -> None:
    got = sq.assess([-2.04, -2.05, -2.03, -2.06, -2.04], sq.Family(1, 5).design())
    line = got.line()
    assert line.startswith(f"{sq.DELTA_LABEL} -87.") and sq.DELTA_KIND == "geometric"
    assert line.count("-87.") == 1, line  # before: `Δ -87.0% [...], -87.0% significant`
    assert math.isclose(got.delta.pct if got.delta else 0.0,
                        math.expm1(np.mean([-2.04, -2.05, -2.03, -2.06, -2.04])) * 100)


# ---- the bench's rule is the live one -------------------------------------------------------

@pytest.mark.sim
async def test_the_vectorised_rule_decides_as_the_live_objects_do() -> None:
    """seqsim.rule (what the statistics bench measures) against drive/Stretches/Verdicts on
    the very same stretch rates and orders: the same comparisons decided at the same looks,
    2 pairs × 2 values under a periodic load with a 3 % effect on one pair (some claims,
    some not)."""
    rng = np.random.default_rng(5)
    names = ("0", "1")
    seeds = rng.integers(2**31, size=40)
    blocks = max_blocks(names, 20)
    rates, pos = ss.untimed_rates(rng, seeds.size, 2, 2, blocks,
                                  ss.Scenario("periodic 3", sd=0.02, period=3.0),
                                  (0.0, math.log(1.03)), seeds=seeds)
    rates[:, 1] = rates[:, 1] * np.where(
        np.asarray([ss.schedule(names, blocks, int(s)) for s in seeds]) == "1", 1 / 1.03, 1.0)
    want = ss.rule(rates, pos, 2, blocks).decided
    for r, seed in enumerate(seeds):
        s = Fed("k", names, ("A", "B"), min_seconds=0.5)
        s.rate = lambda pair, i, _v, r=r: rates[r, "AB".index(pair), i]  # type: ignore[attr-defined]
        v = Verdicts(s, schedule(names, blocks, int(seed)), int(seed),
                     sq.Family(2, blocks, arrangements=6), min_effect=1.0)
        await drive(lambda *_: None, Alternation("k", names, 0.0, 20), v, lambda _x: None)
        got = [v.decided[(p, "1")].n if (p, "1") in v.decided else 0 for p in "AB"]
        assert got == list(want[r]), (r, got, want[r])
    assert 0 < (want > 0).sum() < want.size  # both kinds of outcome were compared


def test_a_live_alternation_makes_its_designs_off_the_event_loop() -> None:
    """The first look's designs (about a second of CPU each the first time, five seconds
    under load on the console's event loop) are made in a thread when the alternation
    starts: every design the family may judge by is cached before the first look."""
    import asyncio
    import threading

    from abtui.measure.alternate.drive import prepare_looks
    from abtui.reports import sequential

    threads: list[int] = []
    family = sequential.Family(2, max_runs=4, alpha=0.0371)  # designs no other test makes

    class Probe:  # only what prepare_looks reads of a Verdicts
        def __init__(self) -> None:
            self.family = family

    real = sequential._design

    def counted(*args: object) -> object:
        threads.append(threading.get_ident())
        return real(*args)  # type: ignore[arg-type]

    async def go() -> None:
        sequential._design = counted  # type: ignore[assignment]
        try:
            await prepare_looks(Probe())  # type: ignore[arg-type]
        finally:
            sequential._design = real

    asyncio.run(go())
    assert threads and threading.get_ident() not in threads
    before = real.cache_info().hits
    for rejected in range(family.size):
        family.design(rejected)
    assert real.cache_info().hits == before + family.size  # every one made already


def test_the_panel_before_the_first_look_makes_no_design() -> None:
    """ctrl+a draws the verdicts' panel at once, before any block: those lines need no
    design (its boundaries cost about a second of CPU the first time, made on the console's
    event loop when the panel first drew: the console froze as the alternation began)."""
    from abtui.reports import sequential

    v = _verdicts(lambda *_: 5e9, pairs=("A", "B"), max_runs=13)
    made: list[object] = []
    real = sequential._design

    def counted(*args: object) -> object:
        made.append(args)
        return real(*args)  # type: ignore[arg-type]

    sequential._design = counted  # type: ignore[assignment]
    try:
        current = v.current()
        lines = v.summary()
    finally:
        sequential._design = real
    assert made == []
    assert all(a.n == 0 and not a.significant for a in current.values()) and lines


def test_a_carryover_is_said_with_the_values_names_and_claims_nothing() -> None:
    """Issue 45: the small value has no effect of its own, but the stretch after it runs 8 %
    faster (what a TCP metrics cache or a full queue leaves behind). The live line names the
    carryover with the values and does not call the after-effect a difference."""
    rng = np.random.default_rng(21)
    last: list[str] = []

    def rate(_pair: str, _index: int, value: str) -> float:
        after = 1.08 if last and last[-1] == SMALL else 1.0
        last.append(value)
        return 5e9 * after * rng.normal(1, 0.004)

    v = _verdicts(rate)
    for i, value in enumerate(v.order):
        v.stretches.begin(i, value)
    v.stretches.close(full=True)
    (line,) = v.summary()
    assert f"carryover: a stretch after {SMALL} runs +" in line, line
    assert f"against one after {BIG}" in line and "not separated from it" in line, line
    assert not v.current()[("A", SMALL)].significant, line
