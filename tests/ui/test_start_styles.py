"""The console's start works out each widget's styles once: a class changed on a widget after
it mounted makes Textual apply the stylesheet to it (and everything in it) again, the largest
part of the CPU before the first frame (docs/performance.md: `first_frame_s`)."""

from __future__ import annotations

import math
from typing import Any

import pytest
from textual.dom import DOMNode
from textual.widgets._footer import FooterKey

from abtui.measure.replay.controller import ReplayController
from abtui.measure.replay.synthetic import synthetic_events, synthetic_profile
from abtui.ui.app import AbtuiApp
from tests.ui.console_kit import until

pytestmark = pytest.mark.ui


async def test_the_footer_s_keys_are_styled_once() -> None:
    """Textual's footer made each key compact and then not (two more styles each); the
    console's makes them as the footer is."""
    profile = synthetic_profile(2)
    ctl = ReplayController(profile, synthetic_events(profile, intervals=3, seed=7),
                           speed=math.inf)
    app = AbtuiApp(ctl, title="abtui — test", autostart=False)
    restyled: list[DOMNode] = []
    update = app.update_styles

    def spy(node: DOMNode, animate: bool = True, **kw: Any) -> None:
        restyled.extend(n for n in node.walk_children(with_self=True)
                        if isinstance(n, FooterKey))
        update(node, animate, **kw)

    app.update_styles = spy  # type: ignore[method-assign]
    async with app.run_test(size=(160, 48)) as pilot:
        await until(pilot, lambda: len(app.screen.query(FooterKey)) > 3)
        await app.settled()
        await pilot.pause()
        keys = list(app.screen.query(FooterKey))
        palette = [k for k in keys if k.has_class("-command-palette")]
        # each key as Textual's footer shows it: the palette's compact, the others not
        assert palette and all(k.compact and k.has_class("-compact") for k in palette)
        assert not any(k.compact or k.has_class("-compact") for k in keys
                       if k not in palette)
        # restyled after mounting: the palette's keys (made compact as they mounted), alone
        others = [k for k in restyled if not k.has_class("-command-palette")]
        assert others == [], f"{len(others)} restyles of {len(keys) - 1} footer keys"
