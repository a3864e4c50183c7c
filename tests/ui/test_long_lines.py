"""Nothing is cut off: a log line longer than the log is wide wraps (its words all on screen,
at 80×24 and at 160×48), and a pane whose host could not connect says so, as the README
promises, even once the failed start has closed every link."""

from __future__ import annotations

import pytest
from textual.geometry import Region

from abtui.core.events import Event, Link
from abtui.core.model import LinkState
from abtui.ui.render.widgets import PairPane
from tests.ui.console_kit import make_app, replayed, settle

pytestmark = pytest.mark.ui

# what a changed host key makes the engine say (abtui.remote.ssh_files)
WHY = ("host key of lab-a-snd has CHANGED: /tmp/lylab/known_hosts line 3 (someone may be "
       "intercepting, or the host was rebuilt): remove that line with ssh-keygen -R "
       "lab-a-snd -f /tmp/lylab/known_hosts")


def region_text(app, widget, inside: bool = False) -> str:  # type: ignore[no-untyped-def]
    """The words the screen shows in `widget`'s region (`inside`: within its border and
    scrollbar), or in a region of the screen, as one line."""
    region = widget if isinstance(widget, Region) else \
        widget.content_region if inside else app.screen.find_widget(widget).region
    rows = app.screen_text().splitlines()[region.y:region.bottom]
    return " ".join(" ".join(row[region.x:region.right] for row in rows).split())


@pytest.mark.parametrize("size", [(160, 48), (80, 24)])
async def test_a_long_error_wraps_and_the_pane_says_could_not_connect(
        size: tuple[int, int]) -> None:
    app = make_app(intervals=4)
    async with app.run_test(size=size) as pilot:
        await replayed(pilot, 4)
        host = app.state.pairs["A"].sender
        t = app.event_log.last_t or 0.0
        app.receive(Event.of(Link(state=str(LinkState.FAILED), message=f"lab-a-snd: {WHY}"), t + 1,
                             host=host))
        app.receive(Event.of(Link.from_data({
            "state": str(LinkState.CLOSED)}), t + 2, host=host))  # a failed start closes every link
        await settle(pilot)
        app.fail(f"start failed: AbtuiError: lab-a-snd: {WHY}")
        await settle(pilot)
        log = app.query_one("#log")
        assert log.display
        shown = region_text(app, log, inside=True)
        assert f"start failed: AbtuiError: lab-a-snd: {WHY}" in shown, shown
        pane = app.query_one("#pane-A", PairPane)
        assert "could not connect" in str(pane.border_subtitle)
        assert "could not connect" in region_text(app, pane)
        assert "connected" in str(app.query_one("#pane-B", PairPane).border_subtitle)


async def test_a_refusal_in_a_pane_wraps_inside_it() -> None:
    """A pane's error line longer than the pane is wide takes the lines it needs."""
    app = make_app(intervals=2)
    async with app.run_test(size=(160, 48)) as pilot:
        await replayed(pilot, 2)
        why = f"tcp_wmem=4096 16384 65536 refused: lab-a-snd: {WHY}"
        app.fail(why, ["A"])
        await settle(pilot)
        pane = app.query_one("#pane-A", PairPane)
        assert pane.band_region("error").height > 1
        assert why in region_text(app, pane.band_region("error"))
