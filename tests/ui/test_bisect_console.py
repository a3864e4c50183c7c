"""`abtui bisect` in the console, on a live synthetic stream whose throughput follows the knob
(a 64 KiB tcp_wmem halves it, 1 MiB does not change it): the bisect panel shows the candidates
with their calls, the step under way and the range left, then the answer; the steps are marked
as headless marks them; escape leaves a running bisection's panel alone (at 80×24 it is whole);
the keys that would set the hosts are refused while it runs; ctrl+q stops it and sets the hosts
back, recording the step it stopped."""

from __future__ import annotations

import re
from collections.abc import Sequence

import pytest

from abtui.core.events import AnyEvent, BisectLook, EventKind, Mark
from abtui.measure.bisect.run import BisectPlan
from abtui.measure.replay.controller import ReplayController
from abtui.ui.app import AbtuiApp
from abtui.ui.render.verdict_panel import VerdictPanel
from tests.ui.console_kit import until
from tests.ui.test_living_small import footer, words
from tests.ui.test_small_screen import fully_shown
from tests.unit.measure.bisect.test_bisect_live import BIG, MID, SMALL, three_sizes

pytestmark = pytest.mark.ui

def _app(every: float, max_blocks: int = 8, threshold: float = 20.0, speed: float = 400,
         refuse: tuple[str, ...] = ()) -> tuple[AbtuiApp, list[AnyEvent]]:
    ctl = ReplayController(three_sizes(1), speed=speed, refuse=refuse)
    seen: list[AnyEvent] = []
    ctl.subscribe(seen.append)
    plan = BisectPlan("tcp_wmem", (BIG, MID, SMALL), threshold, max_blocks=max_blocks,
                      every=every)
    return AbtuiApp(ctl, title="abtui — test", bisection=plan), seen


def _panel(app: AbtuiApp) -> str:
    return str(app.query_one("#verdicts").render())


def _rows(seen: list[AnyEvent]) -> list[dict[str, object]]:
    return [e.payload.bisect for e in seen
            if isinstance(e.payload, Mark) and isinstance(e.payload.bisect, dict)]


def _whole(app: AbtuiApp) -> None:
    """The panel fully on screen, every line of it."""
    panel = app.query_one("#verdicts")
    assert panel.display and fully_shown(app, panel)
    shown = words(" ".join(app.screen_text().splitlines()[
        panel.region.y:panel.region.bottom]))
    for line in _panel(app).splitlines():
        assert words(line) in shown, (line, shown)


async def test_the_bisect_panel_follows_the_steps_to_the_first_bad_at_80x24(
        monkeypatch: pytest.MonkeyPatch) -> None:
    app, seen = _app(0.05, speed=100)
    texts: list[str] = []  # the panel at every update (a fast stream: steps take a second)
    show = VerdictPanel.show

    def shown(panel: VerdictPanel, lines: Sequence[str] | None, ended: bool = False) -> None:
        show(panel, lines, ended)
        texts.append(_panel(app))

    monkeypatch.setattr(VerdictPanel, "show", shown)
    async with app.run_test(size=(80, 24)) as pilot:
        panel = app.query_one("#verdicts")
        await until(pilot, lambda: "first bad:" in _panel(app), timeout=30)
        assert texts[0].startswith("bisecting tcp_wmem, 3 candidates: bad when worse by 20 % "
                                   "or more (α 0.05 over ≤ 2 steps)"), texts[0]
        first = next(t for t in texts if "step 1: 2 vs 1, 0/8 blocks" in t)
        assert re.search(rf" 2 {MID} +◀ now", first) and "range left: 2–3 (2 candidates)" \
            in first, first
        assert any(re.search(r"step 1: 2 vs 1, [2-8]/8 blocks, Δgeo [-+]\d", t) for t in texts)
        second = next(t for t in texts if "step 2: 3 vs 1," in t)
        assert re.search(rf" 3 {SMALL} +◀ now", second) and "range left: 3 (1 candidate)" \
            in second, second
        text = _panel(app)
        assert f"first bad: {SMALL} (family-wise error ≤ 5 % over 2 steps); last good: " \
               f"{MID}" in text, text
        lines = text.splitlines()
        assert lines[1].startswith(f" 1 {BIG}") and "good (given)" in lines[1]
        assert re.match(rf" 2 {MID} +good +Δgeo [-+]\d", lines[2]), lines
        assert re.match(rf" 3 {SMALL} +bad +Δgeo -[45]\d\.\d% \[", lines[3]), lines
        assert "range left" not in text and "◀ now" not in text
        # the steps as headless records them: the plan, two calls, the answer
        rows = _rows(seen)
        assert "plan" in rows[0]
        assert [(r["candidate"], r["verdict"]) for r in rows[1:3]] == [(MID, "good"),
                                                                     (SMALL, "bad")]
        assert rows[3]["answer"] == "first bad"
        looks = [e.payload for e in seen if e.kind is EventKind.BISECT]
        assert all(isinstance(look, BisectLook) for look in looks)
        assert {look.number for look in looks} == {1, 2}  # every step said as it went
        await until(pilot, lambda: "esc Close verdicts" in footer(app))
        _whole(app)
        await pilot.press("escape")
        await until(pilot, lambda: not panel.display)


async def test_a_running_bisection_keeps_its_panel_and_ctrl_q_stops_it() -> None:
    """In the first step (each value held 5 s: before any flip) the panel is whole at 80×24,
    escape leaves it and the bisected knob's key is refused; ctrl+q stops the bisection,
    which says where (a step with no look is not recorded as judged), and the hosts are set
    back."""
    app, seen = _app(5.0, speed=10)  # (a slower stream: the keys are taken at once)
    async with app.run_test(size=(80, 24)) as pilot:
        panel = app.query_one("#verdicts")
        await until(pilot, lambda: "step 1: 2 vs 1, 0/8 blocks" in _panel(app), timeout=15)
        await pilot.pause()
        _whole(app)
        assert "Close verdicts" not in footer(app)  # a running bisection's panel stays
        await pilot.press("escape")
        value = app.state.pairs["A"].config.get("tcp_wmem")
        await pilot.press("w")  # the bisected knob's key: refused while it runs
        await pilot.pause(0.2)
        assert panel.display and app.state.pairs["A"].config.get("tcp_wmem") == value
        await pilot.press("ctrl+q")
        await until(pilot, lambda: app.exit_flow.restore_outcome == "done", timeout=20)
    assert app.bisection.live is not None and app.bisection.live.why == "stopped"
    marks = [e.payload for e in seen if isinstance(e.payload, Mark)]
    assert marks[-1].text.startswith(f"bisect stopped in step 1 ({MID} vs {BIG}) after 0 "
                                     "blocks"), marks[-1]
    assert marks[-1].bisect is None and not any("answer" in r for r in _rows(seen))
    restored = [e.payload for e in seen if e.kind is EventKind.RESTORE]
    assert restored and all(r.value == BIG for r in restored)
    knobs = [e.payload for e in seen if e.kind is EventKind.KNOB]
    assert len(knobs) == 1  # the step's first value (5 s before the next): nothing after


async def test_a_refused_value_ends_the_bisection_as_a_failure() -> None:
    app, _seen = _app(0.05, refuse=(f"tcp_wmem={MID}",), speed=10)
    async with app.run_test(size=(100, 30)) as pilot:
        await until(pilot, lambda: app.bisection.live is not None
                    and app.bisection.live.failed is not None, timeout=15)
        await until(pilot, lambda: any("bisect of tcp_wmem failed: " in line
                                       for line in app.log_lines))
        assert f"refused tcp_wmem={MID}" in app.bisection.live.failed  # type: ignore[union-attr,operator]
        await until(pilot, lambda: "esc Close verdicts" in footer(app))
        await pilot.press("escape")
        await until(pilot, lambda: not app.query_one("#verdicts").display)
