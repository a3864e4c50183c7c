"""ctrl+y: the alternation's profile movers under the verdicts, live. On a synthetic stream
whose profile windows follow the knob (under the capped tcp_wmem a third of the samples sit
in `copy_from_user`, a tenth otherwise), the panel names that function as moved up with its
interval; without a profile it says how to ask for one."""

from __future__ import annotations

import dataclasses

from abtui.core import events
from abtui.core.events import AnyEvent, Event, EventKind
from abtui.core.folded import pack
from abtui.measure.replay.controller import ReplayController
from abtui.measure.replay.synthetic import synthetic_profile
from abtui.ui.app import AbtuiApp
from tests.ui.console_kit import until

CAPPED = "4096 16384 65536"


def _panel(app: AbtuiApp) -> str:
    return str(app.query_one("#verdicts").render())


async def test_without_a_profile_ctrl_y_says_how_to_ask_for_one() -> None:
    ctl = ReplayController(synthetic_profile(1), speed=400)
    app = AbtuiApp(ctl, title="abtui — test")
    async with app.run_test(size=(140, 45)) as pilot:
        await until(pilot, lambda: app.state.running)
        await pilot.press("ctrl+y")
        await until(pilot, lambda: "no profile is taken" in _panel(app))
        await pilot.press("ctrl+y")
        await until(pilot, lambda: not app.query_one("#verdicts").display)


async def test_ctrl_y_names_the_function_that_moved() -> None:
    base = synthetic_profile(1)
    profile = dataclasses.replace(base, test=dataclasses.replace(base.test, profile_hz=99))
    ctl = ReplayController(profile, speed=400)
    app = AbtuiApp(ctl, title="abtui — test")

    def windows(event: AnyEvent) -> None:  # one profile window per interval of pair A
        if event.kind is not EventKind.INTERVAL or event.pair != "A":
            return
        capped = app.state.pairs["A"].config.get("tcp_wmem") == CAPPED
        copy = 330 if capped else 100
        stacks = {"iperfN;main;send;copy_from_user": copy, "iperfN;main;send;other": 1000 - copy}
        ctl._emit(Event.of(events.Profiled(run="A-1", role="sender", start=event.t,
                                           end=event.t, event="cpu-clock", hz=99,
                                           samples=1000, stacks=pack(stacks)),
                           pair="A", host="snd-a", t=event.t))

    ctl.subscribe(windows)
    async with app.run_test(size=(160, 48)) as pilot:
        await until(pilot, lambda: app.state.running)
        app.alternation.every = 0.5
        await pilot.press("w")  # tcp_wmem capped: the knob to alternate
        await until(pilot, lambda: app.state.pairs["A"].config.get("tcp_wmem") == CAPPED)
        await pilot.press("ctrl+y")
        await pilot.press("ctrl+a")
        try:
            await until(pilot, lambda: "copy_from_user (self)" in _panel(app), timeout=90)
        except AssertionError:
            raise AssertionError(f"no mover named; the panel:\n{_panel(app)}") from None
        text = _panel(app)
        line = next(x for x in text.splitlines() if x.startswith("why A"))
        assert "-" in line.split("copy_from_user (self)")[1].split("pp")[0]  # down uncapped
        if app.alternation.live is not None and app.alternation.live.running:
            await pilot.press("ctrl+a")
        await until(pilot, lambda: "ended:" in _panel(app), timeout=60)
