"""80×24 and 160×48 whole (issue 49): a pane's title is never cut (hosts too long for it go
inside the pane, whole), the panes of a grid row end on the same row, and `?` leads with
abtui's own keys, not the table's cursor keys."""

from __future__ import annotations

import dataclasses
import math

import pytest
from rich.cells import cell_len

from abtui.measure.replay.synthetic import synthetic_events, synthetic_profile
from abtui.ui.app import AbtuiApp
from abtui.ui.render.widgets import PairPane
from tests.ui.console_kit import SpyController, replayed, settle

pytestmark = pytest.mark.ui
LONG = ("node-stock-sender", "node-stock-receiver")


def _app(pairs: int) -> AbtuiApp:
    profile = synthetic_profile(pairs)
    profile.pairs[0] = dataclasses.replace(profile.pairs[0], sender=LONG[0], receiver=LONG[1])
    events = synthetic_events(profile, intervals=6, seed=7)
    return AbtuiApp(SpyController(profile, events, speed=math.inf), title="abtui — test")


@pytest.mark.parametrize(("size", "pairs"), [((80, 24), 2), ((80, 24), 4), ((160, 48), 4),
                                             ((160, 48), 2)])
async def test_titles_whole_and_panes_of_a_row_end_together(size: tuple[int, int],
                                                            pairs: int) -> None:
    app = _app(pairs)
    async with app.run_test(size=size) as pilot:
        await replayed(pilot, 6)
        await settle(pilot)
        screen = app.screen_text()
        panes = list(app.query(PairPane))
        for pane in panes:
            title = str(pane.border_title)
            assert cell_len(title) + 6 <= pane.size.width, title
            assert title in screen  # drawn whole, no ellipsis
            hosts = f"{pane.state.sender} → {pane.state.receiver}"
            if hosts not in title:  # then inside the pane, whole, over its lines
                assert " ".join(pane.text("head").split()).startswith(hosts), pane.text("head")
        assert "…" not in "".join(str(p.border_title) for p in panes)
        rows: dict[int, set[int]] = {}
        for pane in panes:
            rows.setdefault(pane.region.y, set()).add(pane.region.bottom)
        assert all(len(bottoms) == 1 for bottoms in rows.values()), rows


async def test_the_keys_panel_leads_with_abtui_s_keys() -> None:
    app = _app(2)
    async with app.run_test(size=(120, 40)) as pilot:
        await replayed(pilot, 6)
        app.main_screen.query_one("DataTable").focus()
        await settle(pilot)
        await pilot.press("question_mark")
        await pilot.pause(0.3)
        text = app.screen_text()
        panel = [ln.split("▏")[-1].strip() for ln in text.splitlines() if "▏" in ln]
        keys = [ln for ln in panel if ln]
        assert keys[0] == "abtui", keys[:5]
        assert not any("Cursor" in ln for ln in keys), keys
        assert any(ln.startswith("S Save setup") for ln in keys)
        await pilot.press("question_mark")
        await pilot.pause(0.3)
        assert type(app.main_screen.focused).__name__ != "NoneType"  # focus given back
