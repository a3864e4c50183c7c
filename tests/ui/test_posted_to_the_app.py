"""What the main screen and the flow helpers post (abtui.ui.flow.messages) reaches the app's
`@on` handlers and shows: a dialog posted by the main screen bubbles up to the app, which
pushes it; a refusal's notice shows as a toast; the verdict panel is drawn from the posts of
both the alternation and the bisection, in the order they came."""

from __future__ import annotations

import types

import pytest
from textual.widgets import Input

from abtui.ui.flow.messages import VerdictsShown
from abtui.ui.render.screens import TextPrompt
from tests.ui.console_kit import make_app, replayed, until

pytestmark = pytest.mark.ui


async def test_m_posts_its_dialog_and_the_answer_marks_the_timeline() -> None:
    app = make_app(intervals=4)
    async with app.run_test(size=(120, 40)) as pilot:
        await replayed(pilot, 4)
        await pilot.press("m")
        await until(pilot, lambda: isinstance(app.screen, TextPrompt))
        assert "Mark the timeline" in app.screen_text()
        app.screen.query_one(Input).value = "a posted mark"
        await pilot.press("enter")
        await until(pilot, lambda: any("a posted mark" in line for line in app.log_lines))
        assert app.screen is app.main_screen


async def test_a_refused_key_says_why_in_a_toast_while_a_bisection_runs() -> None:
    app = make_app(intervals=4)
    toasts: list[tuple[str, str]] = []  # (run_test draws no toasts: what the app notifies)
    app.notify = lambda text, **how: toasts.append(  # type: ignore[method-assign]
        (text, how.get("severity", "")))
    async with app.run_test(size=(120, 40)) as pilot:
        await replayed(pilot, 4)
        app.bisection.live = types.SimpleNamespace(running=True)  # type: ignore[assignment]
        await pilot.press("w")
        await until(pilot, lambda: any("a bisection is running" in t for t, _ in toasts))
        assert toasts[-1][1] == "warning"
        assert not any("setting tcp_wmem" in line for line in app.log_lines)
        app.bisection.live = None


async def test_the_verdict_panel_follows_the_posts_in_their_order() -> None:
    app = make_app(intervals=4)
    async with app.run_test(size=(120, 40)) as pilot:
        await replayed(pilot, 4)
        panel = app.widgets.verdicts
        assert not panel.display
        app.post_message(VerdictsShown(["bisecting: first"]))
        app.post_message(VerdictsShown(["alternating: second"], ended=True))
        await until(pilot, lambda: panel.shown == ("alternating: second",))
        assert panel.display and panel.ended
        app.bisection.close()  # nothing of its own shown: it posts nothing
        app.alternation.close()
        await pilot.pause()
        assert panel.display
        app.post_message(VerdictsShown(None))
        await until(pilot, lambda: not panel.display)
