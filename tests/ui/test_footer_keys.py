"""The main screen's footer (abtui.ui.render.keys_footer): one widget drawing the keys Textual's
footer would show, as one line. Textual's footer is a widget per key (half the screen's
widgets, each mounted, styled and rendered before the first frame, and all made again on
every refresh of the bindings: docs/performance.md, `first_frame_s`)."""

from __future__ import annotations

import itertools
import math

import pytest

from abtui.measure.replay.controller import ReplayController
from abtui.measure.replay.synthetic import synthetic_events, synthetic_profile
from abtui.ui.app import AbtuiApp
from abtui.ui.render.keys_footer import DIVIDER, FooterKey, KeysFooter, key_spans
from tests.ui.console_kit import until

pytestmark = pytest.mark.ui


def _app() -> AbtuiApp:
    profile = synthetic_profile(2)
    ctl = ReplayController(profile, synthetic_events(profile, intervals=3, seed=7),
                           speed=math.inf)
    return AbtuiApp(ctl, title="abtui — test", autostart=False)


def _line(app: AbtuiApp) -> str:
    return app.screen_text().splitlines()[-1]


async def test_the_footer_is_one_widget_showing_the_screens_keys_from_its_first_frame() -> None:
    app = _app()
    async with app.run_test(size=(160, 48)) as pilot:
        footer = app.query_one(KeysFooter)
        assert list(footer.children) == []  # no widget a key
        await pilot.pause()
        line = _line(app)
        assert line.startswith(" tab Scope  ^q Quit  ? Keys  space Start/stop ")
        assert line.rstrip().endswith(f"{DIVIDER}^p palette")  # at the right end
        # what Textual's footer shows: each shown binding's description, none hidden
        shown = [b.description for _, b, _, _ in app.screen.active_bindings.values()
                 if b.show]
        assert all(d in line for d in shown[:8])
        assert [k.description for k in footer.keys] == list(dict.fromkeys(
            b.description for _, b, _, _ in app.screen.active_bindings.values()
            if b.show))  # an action's first shown binding, none that is not shown


async def test_a_key_is_drawn_again_only_when_what_the_keys_show_changes() -> None:
    app = _app()
    async with app.run_test(size=(160, 48)) as pilot:
        footer = app.query_one(KeysFooter)
        await pilot.pause()
        drawn = []
        render = footer.render
        footer.render = lambda: drawn.append(1) or render()  # type: ignore[method-assign]
        app.screen.refresh_bindings()  # nothing the keys show changed
        await pilot.pause()
        await pilot.pause()
        assert drawn == []
        app.bind("f9", "bell", description="Ring")  # a key more: drawn again
        app.screen.refresh_bindings()
        await until(pilot, lambda: any(k.key == "f9" for k in footer.keys))
        await pilot.pause()
        assert drawn


async def test_a_click_runs_the_key_under_it_and_the_pointer_highlights_it() -> None:
    app = _app()
    async with app.run_test(size=(160, 48)) as pilot:
        footer = app.query_one(KeysFooter)
        await pilot.pause()
        keys = {k.key: k for k in footer.keys}
        span = next(s for s in key_spans(footer.keys, footer.palette, footer.size.width)
                    if s.key.key == "question_mark")
        await pilot.hover(KeysFooter, offset=(span.start + 1, 0))
        assert footer.key_at(span.start + 1) == keys["question_mark"]
        assert footer.tooltip in (None, keys["question_mark"].tooltip or None)
        await pilot.click(KeysFooter, offset=(span.start + 1, 0))  # `?`: the keys panel
        await until(pilot, lambda: app.keys_panel_width() > 0)


def test_what_does_not_fit_is_left_out_and_the_palettes_key_keeps_the_right_end() -> None:
    keys = tuple(FooterKey(k, k, f"do {k}") for k in "abcdefgh")  # ` a do a ` is 8 wide
    palette = FooterKey("ctrl+p", "^p", "palette")
    spans = key_spans(keys, palette, 40)
    assert [s.key.key for s in spans] == ["a", "b", "c", "ctrl+p"]  # 3 keys + 12 of palette
    assert spans[-1].end == 40 and spans[-1].start == 40 - len("^p palette ")
    assert all(a.end <= b.start for a, b in itertools.pairwise(spans))
    assert [s.key.key for s in key_spans(keys, None, 40)] == list("abcde")
