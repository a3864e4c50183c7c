"""`abtui bisect`'s logic: the range narrowed by each step's call (a fake judge), the α split
over the steps, an undecided step never turned into good or bad (the range it could not split
reported), the step call made from the alternation's own looks (real Stretches, Verdicts and
drive on simulated stretches), and bad input as one line."""

from __future__ import annotations

import argparse
import math
from collections.abc import Callable, Mapping

import numpy as np
import pytest

from abtui.commands.bisect import add_arguments, plan_of
from abtui.core.errors import BadInput
from abtui.core.events import BuildSwitch, Event, IntervalMeasured, Mark, Ping
from abtui.measure.alternate.design import Alternation, max_blocks, schedule
from abtui.measure.alternate.drive import drive
from abtui.measure.alternate.stretches import Stretches
from abtui.measure.alternate.verdicts import Verdicts
from abtui.measure.bisect.run import step_looks
from abtui.measure.bisect.search import (
    BAD,
    FIRST_BAD,
    GOOD,
    NONE_DIFFERS,
    UNDECIDED,
    Bisection,
    Step,
    call,
    family_steps,
    pair_call,
)
from abtui.profile import parse_profile
from abtui.reports import stats
from abtui.reports.sequential import Assessment, Family
from tests.unit.measure.test_alternate import PROFILE as ALTERNATE_PROFILE

CANDIDATES = tuple(f"v{i}" for i in range(9))


def _bisect(candidates: tuple[str, ...], judge: Callable[[int], str],
            threshold: float = 10.0) -> tuple[Bisection, list[int]]:
    """The bisection run to its answer with `judge` calling each compared index."""
    b = Bisection(candidates, threshold)
    asked: list[int] = []
    while (i := b.next()) is not None:
        asked.append(i)
        verdict = judge(i)
        b.record(Step(len(b.steps) + 1, candidates[i], i, verdict, -20.0, -30.0, -10.0, 5))
    return b, asked


def test_the_steps_alpha_is_split_over_is_the_most_a_bisection_can_take() -> None:
    assert [family_steps(n) for n in (2, 3, 4, 5, 9, 17)] == [1, 2, 3, 3, 4, 5]
    for n in range(2, 40):
        cands = tuple(f"c{i}" for i in range(n))
        for first in [*range(1, n), None]:  # None: nothing differs
            b, asked = _bisect(cands, lambda i, f=first: BAD if f is not None and i >= f
                               else GOOD)
            assert len(asked) <= b.budget == family_steps(n)
            assert math.isclose(b.step_alpha, 0.05 / b.budget)
    b = Bisection(CANDIDATES[:5], 10.0)
    assert b.error_text() == "family-wise error ≤ 5 % over 3 steps"


@pytest.mark.parametrize("first", range(1, len(CANDIDATES)))
def test_a_step_at_a_known_place_is_found(first: int) -> None:
    b, asked = _bisect(CANDIDATES, lambda i: BAD if i >= first else GOOD)
    assert b.answer == FIRST_BAD and b.hi == first and b.lo == first - 1
    assert b.result_line() == f"first bad: v{first} (family-wise error ≤ 5 % over 4 " \
        f"steps); last good: v{first - 1}; worse by 10 % or more"
    assert len(set(asked)) == len(asked)  # no candidate judged twice


def test_when_every_step_says_good_the_bad_end_is_judged_and_no_first_bad_is_named() -> None:
    b, asked = _bisect(CANDIDATES, lambda _i: GOOD)
    assert asked[-1] == len(CANDIDATES) - 1  # the confirmation: the bad end itself
    assert b.answer == NONE_DIFFERS
    line = b.result_line()
    assert line.startswith("no candidate differs: v8 is not worse than v0 by 10 %")
    assert "first bad" not in line
    # two candidates: the one step is the confirmation
    b, asked = _bisect(("g", "b"), lambda _i: GOOD)
    assert asked == [1] and b.answer == NONE_DIFFERS


def test_an_undecided_step_stops_the_bisection_and_says_the_range_left() -> None:
    def judge(i: int) -> str:
        return UNDECIDED if i == 6 else BAD if i >= 6 else GOOD

    b = Bisection(CANDIDATES, 10.0)
    while (i := b.next()) is not None:
        verdict = judge(i)
        b.record(Step(len(b.steps) + 1, CANDIDATES[i], i, verdict, -8.0, -14.0, -1.5, 10))
    assert b.answer == UNDECIDED and b.stalled is not None
    assert b.stalled.candidate == "v6"
    assert all(s.verdict in (GOOD, BAD) for s in b.steps[:-1])  # never turned into one
    assert (b.lo, b.hi) == (4, 8)  # v4 good, v8 the bad end: not split
    line = b.result_line()
    assert line.startswith("undecided: the first bad is one of v5 … v8 (4 candidates); "
                           "step 2 (v6 vs v0) was undecided after 10 blocks: Δgeo -8.0% "
                           "[-14.0, -1.5]"), line
    # what would split it: more blocks at this spread, or a threshold its interval decides
    assert "about 96 blocks in all would split it (--max-blocks 96)" in line
    assert "a threshold above 14.0 % would call it good" in line
    assert "one of 1.5 % or less could call it bad" in line
    assert line.endswith("(family-wise error ≤ 5 % over 4 steps)")
    blind = Bisection(("g", "b"), 10.0)
    blind.record(Step(1, "b", 1, UNDECIDED, blocks=2))  # no block measured whole
    assert "was undecided after 2 blocks: Δgeo —; no complete block had every stretch " \
        "measured" in blind.result_line()
    early = Bisection(("g", "b"), 10.0)
    early.record(Step(1, "b", 1, UNDECIDED, pct=-88.8, blocks=2))  # an unbounded look
    assert "after 2 blocks: Δgeo -88.8% (interval not bounded yet); its interval was not " \
        "bounded yet (no step can call anything before its 3rd block" in early.result_line()
    with pytest.raises(ValueError):  # nothing more to record beyond α's steps
        for k in range(5):
            b.record(Step(9 + k, "v7", 7, GOOD))


def _look(pct: float, low: float, high: float, significant: bool, n: int = 4) -> Assessment:
    return Assessment(stats.Delta(pct, low, high), n, significant, None, 10)


def test_a_pairs_call_is_bad_beyond_the_threshold_and_good_short_of_it() -> None:
    assert pair_call(_look(-40, -50, -30, True), 20) == BAD
    assert pair_call(_look(-40, -50, -30, False), 20) is None  # the rule has not claimed
    assert pair_call(_look(-25, -30, -15, True), 20) is None  # straddles -20 %
    assert pair_call(_look(-5, -12, +3, False), 20) == GOOD
    assert pair_call(_look(+30, +10, +50, True), 20) == GOOD  # better is good
    assert pair_call(_look(-5, -100, math.inf, False), 20) is None  # not bounded yet
    assert pair_call(_look(-5, -12, +3, False, n=1), 20) is None  # no look yet
    # the step: one pair bad is bad; good only when every pair is
    assert call([_look(-40, -50, -30, True), _look(-5, -12, 3, False)], 20) == BAD
    assert call([_look(-5, -12, 3, False), _look(-25, -30, -15, True)], 20) is None
    assert call([_look(-5, -12, 3, False), _look(0, -2, 2, False)], 20) == GOOD
    assert call([], 20) is None


BIG, SMALL = "4096 131072 6291456", "4096 8192 16384"


class Simulated(Stretches):
    """Stretches that measure themselves: once begun, one interval of the value's rate times
    a noise draw."""

    rates: dict[str, float]
    noise: np.random.Generator

    def begin(self, index: int, value: str | Mapping[str, str]) -> None:
        super().begin(index, value)
        bps = self.rates[self.held["A"]] * float(self.noise.lognormal(0, 0.03))
        self(Event.of(IntervalMeasured.from_data({
            "run": "r", "phase": 0, "bits_per_second": bps, "start": 0, "end": 1,
            "omitted": False, "straddles": False}), self.latest + 1.1, pair="A"))


async def _drive_step(ratio: float, threshold: float, blocks: int, seed: int
                      ) -> tuple[str, Verdicts]:
    s = Simulated("rmem", (BIG, SMALL), ("A",), min_seconds=0.0)
    s.rates, s.noise = {BIG: 5e9, SMALL: 5e9 * ratio}, np.random.default_rng(seed)
    n = max_blocks((BIG, SMALL), 2 * blocks)
    v = Verdicts(s, schedule((BIG, SMALL), n, seed), seed,
                 Family(1, n, alpha=0.05 / 3, arrangements=6), min_effect=threshold)
    s.begin(0, v.order[0])
    why = await drive(lambda *_: None, Alternation("rmem", (BIG, SMALL), 0.0, 2 * blocks), v,
                      lambda _line: None,
                      done=lambda: call(list(step_looks(v, SMALL).values()), threshold))
    return why, v


async def test_a_step_stops_at_its_call_or_is_undecided_at_the_maximum() -> None:
    """The real rule on simulated stretches (3 % noise): a candidate at a fifth of the good
    one's rate is bad, one 2 % off is good at a 30 % threshold, and one right at the
    threshold is undecided after the maximum of blocks (drive's own `max-runs`)."""
    why, v = await _drive_step(0.2, 30.0, 10, 1)
    assert why == BAD and v.blocks() < 10
    why, v = await _drive_step(0.98, 30.0, 10, 2)
    assert why == GOOD and v.blocks() < 10
    why, v = await _drive_step(0.70, 30.0, 4, 3)
    assert why == "max-runs" and v.blocks() == 4


# the alternation tests' profile, its knob with a third value, and an ethtool knob
PROFILE = ALTERNATE_PROFILE.replace(
    'values = ["4096 131072 6291456", "4096 8192 16384"]',
    'values = ["4096 131072 6291456", "4096 65536 262144", "4096 8192 16384"]') + """
[[knobs]]
name = "tso"
kind = "ethtool-feature"
key = "tso"
values = ["on", "off"]
"""


def _plan(*argv: str) -> object:
    parser = argparse.ArgumentParser()
    add_arguments(parser)
    return plan_of(parser.parse_args(["p.toml", "--headless", *argv]), parse_profile(PROFILE))


def test_the_candidates_default_to_the_knobs_values_from_good_to_bad() -> None:
    plan = _plan("--knob", "rmem", "--good", BIG, "--bad", SMALL)
    assert plan.candidates == (BIG, "4096 65536 262144", SMALL)  # type: ignore[attr-defined]
    plan = _plan("--knob", "rmem", "--good", "a", "--bad", "c", "--candidates", "x,a,b,c,d")
    assert plan.candidates == ("a", "b", "c")  # type: ignore[attr-defined]


def test_the_candidates_come_from_a_file(tmp_path: object) -> None:
    from pathlib import Path

    path = Path(str(tmp_path)) / "builds.txt"
    path.write_text("# builds, oldest first\non\n\noff\n")
    plan = _plan("--knob", "tso", "--good", "on", "--bad", "off", "--from", str(path))
    assert plan.candidates == ("on", "off")  # type: ignore[attr-defined]
    path.write_text("# nothing\n")
    with pytest.raises(BadInput, match=r"--from .*builds.txt: no candidates"):
        _plan("--knob", "tso", "--good", "on", "--bad", "off", "--from", str(path))


@pytest.mark.parametrize(("argv", "said"), [
    (("--knob", "nope", "--good", "a", "--bad", "b"), "--knob nope: the profile has no knob"),
    (("--knob", "rmem", "--good", "zz", "--bad", SMALL), "--good 'zz' is not among the "
                                                         "candidates"),
    (("--knob", "rmem", "--good", "a", "--bad", "zz", "--candidates", "a,b"),
     "--bad 'zz' is not among the candidates (--candidates: a, b)"),
    (("--knob", "rmem", "--good", "b", "--bad", "a", "--candidates", "a,b"),
     "--good 'b' comes after --bad 'a'"),
    (("--knob", "rmem", "--good", "a", "--bad", "b", "--candidates", "a,b,a"),
     "'a' is listed twice"),
    (("--knob", "rmem", "--good", "a", "--bad", "b", "--candidates", ","), "no candidates"),
    (("--knob", "tso", "--good", "on", "--bad", "of", "--candidates", "on,of"),
     "candidates of knob tso: entry 1"),
    (("--knob", "rmem", "--good", BIG, "--bad", SMALL, "--threshold", "0"), "--threshold 0"),
    (("--knob", "rmem", "--good", BIG, "--bad", SMALL, "--max-blocks", "1"), "--max-blocks 1"),
    (("--knob", "rmem", "--good", BIG, "--bad", SMALL, "--pair", "B"),
     "--pair B: knob rmem is on pairs A"),
])
def test_bad_input_is_one_line_naming_what(argv: tuple[str, ...], said: str) -> None:
    with pytest.raises(BadInput) as got:
        _plan(*argv)
    assert said in str(got.value) and "\n" not in str(got.value)


def test_the_rtt_metric_is_each_stretchs_inverse_rtt_a_lost_reply_zero() -> None:
    """`--metric rtt`: the stretches count ping replies (1000 / RTT ms, each held for the
    ping interval; one that timed out 0), never the intervals."""
    from abtui.measure.latency_stretch import ping_readings

    s = Stretches("rmem", (BIG, SMALL), ("A",), min_seconds=0.0, source=ping_readings(0.2))

    def ping(t: float, rtt: float | None) -> Event:
        return Event.of(Ping(run="r", phase=0, seq=1, rtt_ms=rtt), t, pair="A")

    s(ping(10.0, 1.0))
    s.begin(0, BIG)  # opens at 10.0
    for k, rtt in enumerate((0.5, 0.5, None, 0.25)):
        s(ping(10.3 + 0.2 * k, rtt))
    s(Event.of(IntervalMeasured.from_data({
        "run": "r", "phase": 0, "bits_per_second": 5e9, "start": 0, "end": 0.5,
        "omitted": False, "straddles": False}), 10.9,
        pair="A"))  # not counted: the measure is ping's
    s.begin(1, SMALL)
    s(ping(11.5, 2.0))
    s.close(full=True)
    assert s.samples["A"][BIG] == pytest.approx([(2000 + 2000 + 0 + 4000) / 4])
    assert s.samples["A"][SMALL] == pytest.approx([500.0])


def test_a_steps_boots_are_the_hosts_switches_that_came_up() -> None:
    from abtui.measure.bisect.run import BootCount

    count = BootCount()
    for host, stage in (("a", "booting"), ("b", "booting"), ("a", "up"), ("b", "up"),
                        ("a", "booting"), ("a", "failed")):
        count(Event.of(BuildSwitch(knob="kernel", value="v", method="kexec", stage=stage), 1.0,
                       host=host))
    assert count.n == 2


def _session(tmp_path: object, rows: list[dict[str, object]]) -> str:
    """A session whose marks carry these bisect rows (as `abtui bisect` records them)."""
    from pathlib import Path

    from abtui.sessions.writer import SessionWriter

    folder = Path(str(tmp_path))
    path = folder / f"b{len(list(folder.glob('b*.abtui.jsonl')))}.abtui.jsonl"
    w = SessionWriter(path, profile="t", compact=False)
    for i, row in enumerate(rows):
        w.write(Event.of(Mark(text="bisect", bisect=row), 10.0 + i))
    return str(w.close())


def test_a_resume_keeps_the_calls_and_judges_an_undecided_step_again(tmp_path: object) -> None:
    from abtui.commands.bisect import resumed

    plan = _plan("--knob", "rmem", "--good", "v0", "--bad", "v8", "--candidates",
                 ",".join(CANDIDATES), "--threshold", "10")
    b = Bisection(CANDIDATES, 10.0)
    good = Step(1, "v4", 4, GOOD, -1.0, -4.0, 2.0, 5).row("v0")
    stuck = Step(2, "v6", 6, UNDECIDED, -9.0, -15.0, -2.0, 10).row("v0")
    path = _session(tmp_path, [{"plan": plan.record()}, good, stuck,  # type: ignore[attr-defined]
                               {"answer": UNDECIDED, "line": "undecided: …"}])
    again, answered = resumed(path, plan)  # type: ignore[arg-type]
    assert answered is None and again.resumed == (good, stuck)
    b.replay(again.resumed)
    assert (b.lo, b.hi, b.retried, b.judged) == (4, 8, 1, 2)
    assert b.next() == 6  # the undecided step, judged again
    assert b.error_text() == "family-wise error ≤ 6.25 % over 4 steps, 1 of them judged " \
        "again after a resume"
    # another threshold is not this bisection; a step the bisection would not take is refused
    other = _plan("--knob", "rmem", "--good", "v0", "--bad", "v8", "--candidates",
                  ",".join(CANDIDATES), "--threshold", "20")
    with pytest.raises(BadInput, match=r"its bisection's threshold was 10\.0, not 20\.0"):
        resumed(path, other)  # type: ignore[arg-type]
    wrong = Step(1, "v2", 2, GOOD).row("v0")
    path = _session(tmp_path, [{"plan": plan.record()}, wrong])  # type: ignore[attr-defined]
    with pytest.raises(BadInput, match="recorded step 1 compared 'v2'; this bisection "
                                       "compares 'v4' next"):
        resumed(path, plan)  # type: ignore[arg-type]
    broken = {**good, "index": "4"}
    path = _session(tmp_path, [{"plan": plan.record()}, broken])  # type: ignore[attr-defined]
    with pytest.raises(BadInput, match="a recorded step's 'index' is '4'"):
        resumed(path, plan)  # type: ignore[arg-type]
    # an answered bisection: its answer, nothing to run
    path = _session(tmp_path, [{"plan": plan.record()},  # type: ignore[attr-defined]
                               {"answer": "first bad", "line": "first bad: v5 (…)"}])
    assert resumed(path, plan)[1] == "first bad: v5 (…)"  # type: ignore[arg-type]
    path = _session(tmp_path, [])
    with pytest.raises(BadInput, match="the session recorded no bisection"):
        resumed(path, plan)  # type: ignore[arg-type]


def test_a_step_line_names_the_pair_that_decided() -> None:
    """The step line said the call and a Δ without naming whose (issue 49)."""
    from abtui.measure.bisect.search import BAD, Step

    step = Step(1, "v4", 4, BAD, -12.0, -20.0, -5.0, 3, pair="B")
    assert step.decided_by() == " (pair B decided)"
    assert Step(1, "v4", 4, BAD).decided_by() == ""
