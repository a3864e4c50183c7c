"""The header at 80 columns: the demo's title and its session's name whole, and a reminder to
recover before anything else of the subtitle (the header cuts what does not fit with `…`)."""

from __future__ import annotations

import math

import pytest

from abtui.commands.demo import demo_title
from abtui.commands.tui import session_subtitle
from abtui.measure.replay.synthetic import synthetic_profile
from abtui.sessions.paths import new_session_path
from abtui.ui.app import AbtuiApp
from tests.ui.console_kit import SpyController, started

pytestmark = pytest.mark.ui


async def _header_line(subtitle: str, tmp_path) -> str:  # type: ignore[no-untyped-def]
    app = AbtuiApp(SpyController(synthetic_profile(2), [], speed=math.inf), autostart=False,
                   title=demo_title("lab"), subtitle=subtitle)
    async with app.run_test(size=(80, 24)) as pilot:
        await started(pilot)
        title = app.query_one("HeaderTitle")
        shown = title.render_line(0).text  # what the header draws, cut to its width
        return shown.strip()


async def test_the_demo_s_header_shows_its_session_s_name_whole(tmp_path) -> None:  # type: ignore[no-untyped-def]
    path = new_session_path("lab", tmp_path)
    shown = await _header_line(session_subtitle(path), tmp_path)
    assert "…" not in shown, shown
    assert shown.endswith(f"session {path.name.removesuffix('.abtui.jsonl')}"), shown


async def test_a_reminder_to_recover_comes_before_the_session_s_name(tmp_path) -> None:  # type: ignore[no-untyped-def]
    shown = await _header_line(session_subtitle(new_session_path("lab", tmp_path), True),
                               tmp_path)
    assert "⚠ run `abtui recover`" in shown, shown
