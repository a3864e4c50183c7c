"""What hosts say (kernel strings, knob values, link and error messages, restore lines) is shown
as text: markup shows as written, never styled or acted on, and control characters are spelled
out. On a replay here; with a real host's watch output in tests/lab/test_console_lab.py."""

from __future__ import annotations

import pytest
from textual.widgets import DataTable

from abtui.core.events import Error, Event, Facts, KnobChanged, Link
from abtui.core.text import visible
from abtui.measure.replay.synthetic import T0
from abtui.ui.render.screens import QuitScreen, TunnelSwitcher
from abtui.ui.render.widgets import PairPane
from tests.ui.console_kit import make_app, replayed, settle, until

pytestmark = pytest.mark.ui

MARKUP = "[b]x[/b] [@click=app.quit]"
ESC = "\x1b[31mred\x1b[0m\x07"
SHOWN = "[b]x[/b] [@click=app.quit]"
SHOWN_ESC = "\\x1b[31mred\\x1b[0m\\x07"


def test_visible_spells_out_what_a_terminal_would_act_on() -> None:
    assert visible("plain [b] ü → 10 Gbit/s") == "plain [b] ü → 10 Gbit/s"
    assert visible(ESC) == SHOWN_ESC
    assert visible("a\nb\tc\u202ed\u2028") == "a\\x0ab c\\u202ed\\u2028"


async def test_host_strings_reach_the_screen_and_log_as_text() -> None:
    app = make_app(intervals=2)
    async with app.run_test(size=(240, 50)) as pilot:
        await replayed(pilot, 2)
        host = app.state.pairs["A"].receiver
        for event in (
            Event.of(Facts(facts={
                "kernel_release": f"6.1 {MARKUP} {ESC}", "os": "Linux",
                "tunnels": {"vxlan": f"no: {MARKUP}"}}), T0 + 3, host=host),
            Event.of(Link(state="lost", message=f"{MARKUP} {ESC}"), T0 + 3, host=host),
            Event.of(KnobChanged.from_data({"knob": "cc", "value": f"{MARKUP}{ESC}",
                                                "pairs": ["A"]}), T0 + 4),
            Event.of(Error(message=f"{MARKUP} {ESC}"), T0 + 4, host=host),
        ):
            app.receive(event)
        await until(pilot, lambda: app.state.pairs["A"].error != "")
        app.set_scope("A")
        await settle(pilot)
        pane = app.query_one("#pane-A", PairPane)
        head = pane.text("head")
        assert f"6.1 {SHOWN} {SHOWN_ESC}" in head
        config = pane.text("config")
        assert f"cc={SHOWN}{SHOWN_ESC}" in config
        error = pane.text("error")
        assert f"{SHOWN} {SHOWN_ESC}" in error
        bar = app.knobbar()
        assert f"cc={SHOWN}{SHOWN_ESC}" in bar.plain
        assert not [s for s in bar.spans if "quit" in str(s.style)]  # no action of theirs
        log = "\n".join(app.log_lines)
        assert f"link lost: {SHOWN} {SHOWN_ESC}" in log
        table = app.query_one("#phases", DataTable)
        labels = [str(table.get_cell_at((i, 0))) for i in range(table.row_count)]
        assert any(f"cc={SHOWN}{SHOWN_ESC}" in lb for lb in labels), labels
        await pilot.press("ctrl+t")
        assert isinstance(app.screen, TunnelSwitcher)
        vxlan = app.screen.query_one("#tunnel-list").get_option("vxlan")
        assert str(vxlan.prompt).endswith(f"{host}: {SHOWN}")
        await pilot.press("escape")
        quit_screen = QuitScreen()
        await app.push_screen(quit_screen)
        quit_screen.show([f"{host}: cc={MARKUP} NOT restored ({ESC})"])
        await pilot.pause()
        lines = str(quit_screen.query_one("#restore-lines").render())
        assert f"cc={SHOWN} NOT restored ({SHOWN_ESC})" in lines
        everything = "\n".join([head, config, error, bar.plain, log, *labels, lines])
        assert "\x1b" not in everything and "\x07" not in everything
        assert app.is_running

