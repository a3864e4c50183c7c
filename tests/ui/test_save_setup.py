"""`S` saves the live setup into the profile's own file (docs/profiles.md, "Saving"): Enter
confirms, the log names the file, the file keeps its comments and loads (issue 49)."""

from __future__ import annotations

import math
from pathlib import Path

import pytest

from abtui.measure.replay.synthetic import synthetic_events, synthetic_profile
from abtui.profile import load_profile, save_profile
from abtui.ui.app import AbtuiApp
from abtui.ui.flow.keymap import palette_actions
from abtui.ui.render.screens import Confirm
from tests.ui.console_kit import SpyController, replayed, until

pytestmark = pytest.mark.ui


def _profile_copy(tmp_path: Path) -> Path:
    """A copy of the synthetic profile with comments a user wrote."""
    path = tmp_path / "mine.toml"
    save_profile(synthetic_profile(2), path)
    text = path.read_text().replace(
        '[[knobs]]\nname = "tso"', '# segmentation offload: off costs CPU\n'
        '[[knobs]]\nname = "tso"').replace('binding = "t"', 'binding = "t"  # t for tso')
    path.write_text("# my lab, pairs A and B\n" + text)
    return path


def _app(path: Path) -> AbtuiApp:
    profile = load_profile(path)
    events = synthetic_events(profile, intervals=6, seed=7)
    return AbtuiApp(SpyController(profile, events, speed=math.inf), title="abtui — test")


async def test_S_saves_a_flipped_setup_into_the_profile_keeping_its_comments(
        tmp_path: Path) -> None:
    path = _profile_copy(tmp_path)
    app = _app(path)
    async with app.run_test(size=(120, 40)) as pilot:
        await replayed(pilot, 6)
        await until(pilot, lambda: app.state.knob_value("tso", ["A", "B"]) == "on")
        await pilot.press("t")  # tso flipped on both pairs (the scope: all)
        await until(pilot, lambda: app.state.knob_value("tso", ["A", "B"]) == "off")
        await pilot.press("S")
        await until(pilot, lambda: isinstance(app.screen, Confirm))
        shown = str(app.screen.query_one("#what").render())
        assert "tso = off (was not set)" in shown
        live = {k.name: app.state.knob_value(k.name, ["A", "B"]) for k in app.profile.knobs}
        assert path.read_text().count("initial") == 0  # nothing written before Enter
        await pilot.press("enter")
        await until(pilot, lambda: "setup saved to" in "\n".join(app.log_lines))
    log = "\n".join(app.log_lines)
    assert f"setup saved to {path}: " in log and "tso=off" in log
    text = path.read_text()
    assert "# my lab, pairs A and B" in text
    assert "# segmentation offload: off costs CPU" in text
    assert 'binding = "t"  # t for tso' in text
    saved = load_profile(path)
    assert saved.knob("tso").initial == "off"
    assert {k.name: k.initial for k in saved.knobs} == live  # the setup, every knob


async def test_escape_leaves_the_profile_as_it_was(tmp_path: Path) -> None:
    path = _profile_copy(tmp_path)
    before = path.read_text()
    app = _app(path)
    async with app.run_test(size=(120, 40)) as pilot:
        await replayed(pilot, 6)
        await pilot.press("t")
        await until(pilot, lambda: app.state.knob_value("tso", ["A", "B"]) == "off")
        await pilot.press("S")
        await until(pilot, lambda: isinstance(app.screen, Confirm))
        await pilot.press("escape")
        await until(pilot, lambda: not isinstance(app.screen, Confirm))
    assert path.read_text() == before


async def test_a_profile_broken_since_it_was_loaded_is_not_replaced(tmp_path: Path) -> None:
    """The file is checked again before the atomic replace: an edit that broke it since the
    console loaded it is said, naming the file, and the file is left alone."""
    path = _profile_copy(tmp_path)
    app = _app(path)
    async with app.run_test(size=(120, 40)) as pilot:
        await replayed(pilot, 6)
        await pilot.press("t")
        await until(pilot, lambda: app.state.knob_value("tso", ["A", "B"]) == "off")
        broken = path.read_text().replace('label = "B"', 'label = 7')
        path.write_text(broken)
        await pilot.press("S")
        await until(pilot, lambda: isinstance(app.screen, Confirm))
        await pilot.press("enter")
        await until(pilot, lambda: "save setup failed" in "\n".join(app.log_lines))
    assert str(path) in "\n".join(app.log_lines)
    assert path.read_text() == broken


def test_the_palette_offers_save_setup_to_profile() -> None:
    names = {name: action for name, action, _ in palette_actions({}, [])}
    assert names["Save setup to profile"] == "save_setup"
