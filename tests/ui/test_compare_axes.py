"""The compare screen (issue 49): its axes in 3 significant digits, as every number abtui
prints (not `5610.0`), and its bar chart names each row under its bars (not `1`, `2`)."""

from __future__ import annotations

import re

import pytest

from abtui.ui.render.screens import CompareScreen
from tests.ui.console_kit import make_app, replayed, until

pytestmark = pytest.mark.ui


async def test_axes_in_3_digits_and_bars_named_by_row() -> None:
    app = make_app(pairs=2, intervals=12)
    async with app.run_test(size=(120, 40)) as pilot:
        await replayed(pilot, 12)
        await pilot.press("ctrl+o")
        await until(pilot, lambda: isinstance(app.screen, CompareScreen))
        await pilot.pause(0.3)
        text = app.screen_text()
        comparison = app.screen.comparison
    assert comparison.bar_names and all(not n.isdigit() for n in comparison.bar_names)
    under = next(ln for ln in text.splitlines() if comparison.bar_names[-1] in ln)
    assert all(name in under for name in comparison.bar_names)
    numbers = [t.strip() for t in re.findall(r"([\d.]+)┤", text)]
    assert numbers, text
    for t in numbers:  # at most 3 significant digits, no `.0` padding past them
        digits = t.replace(".", "").lstrip("0")
        assert len(digits) <= 3, t
