"""Between a plan's steps no run is up, yet the plan goes on: the knob bar read "stopped"
(issue 49); it says "between steps" until the plan is done."""

from __future__ import annotations

import pytest

from abtui.measure.replay.synthetic import synthetic_profile
from abtui.ui.model.state import ConsoleState
from abtui.ui.render.knobbar import knobbar_content

pytestmark = pytest.mark.ui


def _bar(progress: dict[str, object] | None) -> str:
    state = ConsoleState(synthetic_profile(2))
    return knobbar_content("all", ["A", "B"], {}, state, progress, 200).plain


def test_between_a_plans_steps_the_bar_does_not_read_stopped() -> None:
    between = _bar({"done": 1, "total": 3, "eta_s": 20.0})
    assert "between steps plan 1/3, 20 s left" in between and "stopped" not in between
    assert "stopped plan 3/3" in _bar({"done": 3, "total": 3, "eta_s": 0.0})
    assert "stopped" in _bar(None)
