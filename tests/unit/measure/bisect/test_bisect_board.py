"""The bisect panel's lines, folded from a bisection's events alone (abtui.measure.bisect.board):
the candidates with their calls, the step under way, the range left, the answer; many
candidates keep the panel short; a step stopped after a look is recorded undecided, so a
resume judges it again with its α counted; a look round-trips through the journal."""

from __future__ import annotations

import asyncio
import json
from typing import Any

from abtui.core.events import BisectLook, Event
from abtui.measure.bisect.board import BisectBoard
from abtui.measure.bisect.run import BisectPlan, _stopped
from abtui.measure.bisect.search import BAD, GOOD, UNDECIDED, Bisection, Step

CANDIDATES = tuple(f"v{i}" for i in range(9))
PLAN = BisectPlan("rmem", CANDIDATES, 10.0, max_blocks=6).record()


def _look(number: int, index: int, blocks: int, **more: Any) -> BisectLook:
    return BisectLook(number=number, candidate=CANDIDATES[index], index=index, good="v0",
                      blocks=blocks, max_blocks=6, **more)


def test_the_lines_follow_the_steps_to_the_answer() -> None:
    board = BisectBoard(PLAN)
    board.look = _look(1, 4, 0)
    lines = board.lines()
    assert lines[0] == "bisecting rmem, 9 candidates: bad when worse by 10 % or more " \
                       "(α 0.05 over ≤ 4 steps)"
    assert " 5 v4  ◀ now" in lines and " 1 v0  good (given)" in lines
    assert " 9 v8  untested (given bad)" in lines
    assert lines[-2:] == ["step 1: 5 vs 1, 0/6 blocks, Δgeo —, no call yet",
                          "range left: 2–9 (8 candidates)"]
    board.look = _look(1, 4, 3, call=GOOD, pct=-1.0, low=-4.0, high=2.0, pair="A")
    assert board.lines()[-2] == "step 1: 5 vs 1, 3/6 blocks, Δgeo -1.0% [-4.0, +2.0], " \
                                "good so far"
    board.step(Step(1, "v4", 4, GOOD, -1.0, -4.0, 2.0, 3).row("v0"), "bisect step 1: …")
    lines = board.lines()
    assert board.look is None and lines[-1] == "range left: 6–9 (4 candidates)"
    assert " 5 v4  good      Δgeo -1.0% [-4.0, +2.0], 3 bl." in lines
    # the untested candidates outside the range left: one line for each run of them
    assert "   … 3 untested" in lines and " 3 v2  untested" not in lines
    board.step(Step(2, "v6", 6, BAD, -30.0, -40.0, -20.0, 4).row("v0"), "")
    board.step(Step(3, "v5", 5, BAD, -31.0, -41.0, -21.0, 4).row("v0"), "")
    board.step({"answer": "first bad", "line": "first bad: v5 (family-wise error ≤ 5 % "
                "over 4 steps)"}, "")
    lines = board.lines()
    assert lines[-1].startswith("first bad: v5") and not any("range" in x for x in lines)
    assert " 6 v5  bad       Δgeo -31.0% [-41.0, -21.0], 4 bl." in lines


def test_a_step_stopped_after_a_look_is_recorded_undecided_and_judged_again() -> None:
    marks: list[tuple[str, dict[str, Any] | None]] = []

    class Host:
        async def mark(self, text: str, verdicts: object = None,
                       bisect: dict[str, Any] | None = None) -> None:
            marks.append((text, bisect))

    b = Bisection(CANDIDATES, 10.0)
    said: list[str] = []
    for blocks in (1, 2):
        step = Step(1, "v4", 4, UNDECIDED, -3.0, -9.0, 4.0, blocks)
        asyncio.run(_stopped(Host(), b, step, said.append))  # type: ignore[arg-type]
    assert marks[0][1] is None  # before the rule's first look: no α spent, not a step
    row = marks[1][1]
    assert row is not None and row["stopped"] is True and row["verdict"] == UNDECIDED
    assert said[1].startswith("bisect stopped in step 1 (v4 vs v0) after 2 blocks; the first "
                              "bad is one of v1 … v8 (8 candidates)")
    again = Bisection(CANDIDATES, 10.0)
    again.replay([row])
    assert again.retried == 1 and again.next() == 4  # judged again, its α counted
    board = BisectBoard(PLAN)
    board.step(row, marks[1][0])
    assert board.lines()[-1] == "stopped: `abtui bisect … --resume` with this session goes on"
    board = BisectBoard(PLAN)  # resumed from it: the row is the earlier run's, not a stop
    board.step({**row, "resumed": "s.jsonl"}, "")
    assert board.bisection.retried == 1 and not board.lines()[-1].startswith("stopped")


def test_a_look_round_trips_through_the_journal() -> None:
    event = Event.of(_look(2, 6, 4, call=BAD, pct=-30.0, low=-40.0, high=-20.0, pair="A"))
    again = Event.from_json(json.loads(json.dumps(event.to_json())))
    assert again == event and again.payload == event.payload
    assert "low" not in Event.of(_look(1, 4, 0)).record()  # left out while None


def test_the_console_bisection_takes_no_out_file(tmp_path: Any, capsys: Any) -> None:
    from abtui.cli import main

    assert main(["bisect", str(tmp_path / "p.toml"), "--knob", "k", "--good", "a", "--bad",
                 "b", "--out", str(tmp_path / "s.jsonl")]) == 2
    assert capsys.readouterr().err.strip() == "abtui: --out: the console writes its session " \
        "in the sessions folder; give --out with --headless"


def test_a_crossover_takes_exactly_two_judged_pairs_and_a_resume_its_design(
        tmp_path: Any) -> None:
    import argparse

    import pytest

    from abtui.commands.bisect import add_arguments, plan_of, resumed
    from abtui.core.errors import BadInput
    from abtui.profile import parse_profile
    from tests.unit.measure.bisect.test_bisect import _session
    from tests.unit.measure.test_alternate import PROFILE

    two = parse_profile(PROFILE.replace('pairs = ["A"]\n', ""))
    parser = argparse.ArgumentParser()
    add_arguments(parser)

    def plan(*argv: str) -> BisectPlan:
        return plan_of(parser.parse_args(["p.toml", "--knob", "rmem", "--good", "4096 131072 "
                                          "6291456", "--bad", "4096 8192 16384", *argv]), two)

    assert plan("--design", "crossover").design == "crossover"
    with pytest.raises(BadInput, match=r"--design crossover: the knob's pairs must be exactly "
                                       r"two, not 1 \(A\)"):
        plan("--design", "crossover", "--pair", "A")
    crossed = plan("--design", "crossover")
    old = {k: v for k, v in crossed.record().items() if k != "design"}  # before designs
    path = _session(tmp_path, [{"plan": old}])
    with pytest.raises(BadInput, match="its bisection's design was 'blocks', not 'crossover'"):
        resumed(path, crossed)
    assert resumed(path, plan())[1] is None  # a session from before: blocks


def test_the_report_says_a_stopped_step(tmp_path: Any) -> None:
    from abtui.reports.bisection import markdown
    from abtui.sessions.session import Session
    from tests.unit.measure.bisect.test_bisect import _session

    row = {**Step(1, "v4", 4, UNDECIDED, -3.0, -9.0, 4.0, 2).row("v0"), "stopped": True}
    text = "\n".join(markdown(Session.load(_session(tmp_path, [{"plan": PLAN}, row]))))
    assert "| 1 | v4 | v0 | undecided (stopped) | -3.0% [-9.0, +4.0] | 2 | 0 |" in text, text
    assert "**not finished (no answer recorded)**" in text
