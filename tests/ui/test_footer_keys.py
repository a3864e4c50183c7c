"""The footer's keys are composed again only when what they show changes: Textual's footer
recomposes on every refresh of the bindings (the focus set, the screen resumed, a run
started), removing, mounting and styling its dozen keys each time, twice after the first
frame on the way to the first live number (docs/performance.md: `demo_first_number_warm_s`)."""

from __future__ import annotations

import math

import pytest
from textual.widgets._footer import FooterKey

from abtui.measure.replay.controller import ReplayController
from abtui.measure.replay.synthetic import synthetic_events, synthetic_profile
from abtui.ui.app import AbtuiApp
from tests.ui.console_kit import until

pytestmark = pytest.mark.ui


async def test_the_footer_keeps_its_keys_until_what_they_show_changes() -> None:
    profile = synthetic_profile(2)
    ctl = ReplayController(profile, synthetic_events(profile, intervals=3, seed=7),
                           speed=math.inf)
    app = AbtuiApp(ctl, title="abtui — test", autostart=False)
    async with app.run_test(size=(160, 48)) as pilot:
        await until(pilot, lambda: len(app.screen.query(FooterKey)) > 3)
        await app.settled()
        await pilot.pause()
        keys = list(app.screen.query(FooterKey))
        app.screen.refresh_bindings()  # nothing the keys show changed
        await pilot.pause()
        await pilot.pause()
        assert list(app.screen.query(FooterKey)) == keys  # the same widgets, not new ones
        app.bind("f9", "bell", description="Ring")  # a key more: composed again
        app.screen.refresh_bindings()
        await until(pilot, lambda: any(k.key == "f9" for k in app.screen.query(FooterKey)))
        assert len(app.screen.query(FooterKey)) == len(keys) + 1
