"""`abtui bisect --resume` trusts nothing a session recorded before checking it: a malformed
answer mark, a threshold that is no number (NaN: "was nan, not nan"), negative block counts,
an interval upside down, and a recorded plan of 200 000 candidates are each one short line of
bad input, never printed back whole, never exit 0."""

from __future__ import annotations

import json
import math
from pathlib import Path

import pytest

from abtui.core.errors import BadInput
from abtui.measure.bisect.recorded import brief
from abtui.measure.bisect.search import GOOD, Step
from tests.reliability import Reliability
from tests.unit.measure.bisect.test_bisect import CANDIDATES, _plan, _session


def _mine() -> object:
    return _plan("--knob", "rmem", "--good", "v0", "--bad", "v8", "--candidates",
                 ",".join(CANDIDATES), "--threshold", "10")


def _refusal(tmp_path: Path, rows: list[dict[str, object]]) -> str:
    from abtui.commands.bisect import resumed

    path = _session(tmp_path, rows)
    with pytest.raises(BadInput) as refused:
        resumed(path, _mine())  # type: ignore[arg-type]
    said = str(refused.value)
    assert "\n" not in said and len(said) < 400, said
    return said


def test_a_malformed_answer_mark_is_refused_not_printed(tmp_path: Path) -> None:
    plan = _mine().record()  # type: ignore[attr-defined]
    said = _refusal(tmp_path, [{"plan": plan}, {"answer": {"a": 1}}])
    assert "its bisection's answer is {'a': 1}, not one of" in said
    said = _refusal(tmp_path, [{"plan": plan}, {"answer": "first bad", "line": ["x"]}])
    assert "answer line is ['x']" in said


def test_a_threshold_that_is_no_number_is_named_so_not_as_a_difference(tmp_path: Path) -> None:
    plan = _mine().record()  # type: ignore[attr-defined]
    said = _refusal(tmp_path, [{"plan": {**plan, "threshold": math.nan}}])
    assert "threshold (nan) is not a percentage between 0 and 100" in said
    said = _refusal(tmp_path, [{"plan": {**plan, "threshold": "10"}}])
    assert "threshold ('10') is not a number" in said
    said = _refusal(tmp_path, [{"plan": {**plan, "candidates": [1, 2]}}])
    assert "candidates ([1, 2]) is not a list of values" in said


def test_negative_counts_and_upside_down_intervals_are_refused(tmp_path: Path) -> None:
    plan = _mine().record()  # type: ignore[attr-defined]
    good = Step(1, "v4", 4, GOOD, -1.0, -4.0, 2.0, 5).row("v0")
    assert "'blocks' is -3, less than 0" in _refusal(tmp_path, [{"plan": plan},
                                                                {**good, "blocks": -3}])
    assert "'boots' is -1, less than 0" in _refusal(tmp_path, [{"plan": plan},
                                                               {**good, "boots": -1}])
    assert "'number' is 0, less than 1" in _refusal(tmp_path, [{"plan": plan},
                                                               {**good, "number": 0}])
    assert "its low end above its high end" in _refusal(
        tmp_path, [{"plan": plan}, {**good, "low": 3.0, "high": -4.0}])
    assert "'pct' is inf" in _refusal(tmp_path, [{"plan": plan}, {**good, "pct": math.inf}])


@pytest.mark.reliability(
    "46b", "tampered `bisect --resume` sessions: a malformed answer mark, a NaN or text "
    "threshold, negative block/boot/step counts, an infinite or upside-down interval, a plan "
    "of 200 000 candidates",
    "each refused as bad input in one line (exit 2) naming the field, never printed back "
    "whole (`{'a': 1}` with exit 0 before), a recorded value quoted cut to 60 characters")
def test_a_huge_recorded_plan_gives_a_short_line(tmp_path: Path,
                                                  reliability: Reliability) -> None:
    plan = _mine().record()  # type: ignore[attr-defined]
    many = [f"value-{i}" for i in range(200_000)]
    assert len(json.dumps(many)) > 2_000_000
    said = _refusal(tmp_path, [{"plan": {**plan, "candidates": many}}])
    assert "had 200000 candidates, not 9" in said
    said = _refusal(tmp_path, [{"plan": {**plan, "knob": "k" * 100_000}}])
    assert "(" not in said.split("knob was ", 1)[1][:70] or "…" in said
    bad_candidate = Step(1, "x" * 100_000, 4, GOOD).row("v0")
    assert "…" in _refusal(tmp_path, [{"plan": plan}, bad_candidate])
    long_list = brief(many)
    assert long_list.endswith("… (200000 items)") and len(long_list) < 80
    reliability.row(plan_json_bytes=len(json.dumps(many)),
                    line_chars=len(_refusal(tmp_path, [{"plan": {**plan, "candidates": many}}])))
