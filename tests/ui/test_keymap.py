"""The user's keymap file moves any binding, a knob's included, to another key (Textual's
set_keymap with the bindings' ids)."""

from __future__ import annotations

import math
from pathlib import Path

import pytest

from abtui.core.errors import BadInput
from abtui.measure.replay.synthetic import synthetic_events, synthetic_profile
from abtui.ui.app import AbtuiApp
from abtui.ui.flow.keymap import keymap_path, load_keymap
from abtui.ui.render.screens import TextPrompt
from tests.ui.console_kit import SpyController, replayed, settle, until

pytestmark = pytest.mark.ui


def _app() -> AbtuiApp:
    profile = synthetic_profile(2)
    ctl = SpyController(profile, synthetic_events(profile, intervals=4, seed=7), speed=math.inf)
    return AbtuiApp(ctl, title="abtui — test — REPLAY")


async def test_a_keymap_file_rebinds_a_console_key_and_a_knob(tmp_path: Path,
                                                                monkeypatch) -> None:  # type: ignore[no-untyped-def]
    monkeypatch.setenv("XDG_CONFIG_HOME", str(tmp_path))
    monkeypatch.delenv("ABTUI_KEYMAP", raising=False)
    keymap_path().parent.mkdir(parents=True)
    keymap_path().write_text('mark = "ctrl+k"\n"knob.tso" = "f5"\n')
    assert keymap_path() == tmp_path / "abtui" / "keymap.toml"
    app = _app()
    async with app.run_test() as pilot:
        await replayed(pilot, 4)
        await pilot.press("f5")  # tso's new key
        await until(pilot, lambda: ("set_knob", "tso", "off", ["A", "B"]) in app.controller.calls)
        await pilot.press("m")  # no longer mark
        await settle(pilot)
        assert not isinstance(app.screen, TextPrompt)
        await pilot.press("ctrl+k")
        await until(pilot, lambda: isinstance(app.screen, TextPrompt))


def test_a_bad_keymap_file_is_one_line_naming_it(tmp_path: Path) -> None:
    path = tmp_path / "keymap.toml"
    assert load_keymap(path) == {}  # none: the defaults
    path.write_text("mark = 3\n")
    with pytest.raises(BadInput, match=r"keymap.toml: mark: expected keys"):
        load_keymap(path)
    path.write_text("mark = \n")
    with pytest.raises(BadInput, match=r"keymap.toml: not TOML"):
        load_keymap(path)
