"""The console's auto-alternation (ctrl+a) and live verdict on a live synthetic stream whose
throughput follows the knob (a 64 KiB tcp_wmem halves it): the panel shows each pair's Δ,
interval and verdict, the blocks still needed, and the alternation stops by the rule or by
the key; ctrl+e changes min_effect."""

from __future__ import annotations

import re
from collections.abc import Sequence

import pytest

from abtui.measure.replay.controller import ReplayController
from abtui.measure.replay.synthetic import synthetic_profile
from abtui.ui.app import AbtuiApp
from abtui.ui.render.verdict_panel import VerdictPanel
from tests.ui.console_kit import alternating, until


def _panel(app: AbtuiApp) -> str:
    return str(app.query_one("#verdicts").render())


async def test_ctrl_a_alternates_the_last_knob_and_shows_the_verdict() -> None:
    ctl = ReplayController(synthetic_profile(2), speed=400)
    app = AbtuiApp(ctl, title="abtui — test")
    async with app.run_test(size=(140, 45)) as pilot:
        await until(pilot, lambda: app.state.running)
        assert not app.query_one("#verdicts").display
        app.alternation.every = 0.05
        await pilot.press("w")  # tcp_wmem to 64 KiB: the knob to alternate, its base now
        await until(pilot, lambda: app.state.pairs["A"].config.get("tcp_wmem") ==
                    "4096 16384 65536")
        await pilot.press("ctrl+a")
        await until(pilot, lambda: app.alternation.live is not None
                    and app.alternation.live.why == "verdict", timeout=20)
        text = _panel(app)
        assert app.query_one("#verdicts").display
        assert text.startswith("alternating tcp_wmem every 0.05 s"), text
        assert "ended: verdict" in text
        for pair in "AB":  # twice the throughput without the 64 KiB cap
            assert f"{pair}: tcp_wmem=4096 16384 4194304 vs 4096 16384 65536: Δgeo +" in text
        assert text.count("significant") == 2
        await pilot.press("ctrl+e")
        await until(pilot, lambda: "min effect 2%" in _panel(app))
        # again, stopped by the key this time
        app.alternation.every = 5.0
        await pilot.press("ctrl+a")
        live = app.alternation
        await until(pilot, lambda: live.live is not None and live.live.running)
        await pilot.press("ctrl+a")
        await until(pilot, lambda: "ended: stopped" in _panel(app))
        assert app.alternation.live is not None and not app.alternation.live.running


async def test_the_verdict_line_counts_the_blocks_still_needed(
        monkeypatch: pytest.MonkeyPatch) -> None:
    """Before the rule can decide (its first looks ask for overwhelming evidence), each line
    says about how many more blocks would resolve min_effect (seen as the panel changes: on a
    fast stream the verdict may follow within the same flush); the header names the seed of
    the order."""
    ctl = ReplayController(synthetic_profile(1), speed=400)
    app = AbtuiApp(ctl, title="abtui — test")
    async with app.run_test(size=(140, 45)) as pilot:
        await until(pilot, lambda: app.state.running)
        app.alternation.every = 0.05
        app.alternation.last_knob = "cc"  # bbr: 7 % below reno on the synthetic stream
        seen: list[str] = []
        show = VerdictPanel.show

        def shown(panel: VerdictPanel, lines: Sequence[str] | None,
                  ended: bool = False) -> None:  # every panel update, as the panel draws it
            show(panel, lines, ended)
            seen.append(_panel(app))

        monkeypatch.setattr(VerdictPanel, "show", shown)
        await pilot.press("ctrl+a")
        await until(pilot, lambda: any("more block" in t for t in seen), timeout=20)
        # bbr's Δ lies past 1 %: how many more blocks it needs if it holds, at its spread
        assert any(re.search(r"about \d+ more blocks? to be significant if Δ holds, at ±[\d.]+% "
                             r"a block", t) for t in seen)
        assert all(re.search(r"blocks, seed \d+, min effect", t.splitlines()[0]) for t in seen)
        if app.alternation.live is not None and app.alternation.live.running:
            await pilot.press("ctrl+a")  # stop it (a second press would start another)
        await until(pilot, lambda: "ended:" in _panel(app))


async def test_a_flip_by_hand_of_the_alternated_knob_ends_the_alternation() -> None:
    """The knob's key while it is being alternated: the alternation stops first (the two
    would fight over the hosts' value), then the key's flip is made."""
    ctl = ReplayController(synthetic_profile(1), speed=400)
    app = AbtuiApp(ctl, title="abtui — test")
    async with app.run_test(size=(140, 45)) as pilot:
        await alternating(pilot, 5.0)
        alt = app.alternation
        await until(pilot, lambda: alt.live is not None and alt.live.running)
        # the first stretch holds the base or the other value, as the order was drawn
        held = app.state.pairs["A"].config.get("tcp_wmem")
        await pilot.press("w")
        await until(pilot, lambda: alt.live is not None and alt.live.why == "stopped")
        await until(pilot, lambda: app.state.pairs["A"].config.get("tcp_wmem") not in
                    (None, held))
        assert "stopped: flipped by hand" in "\n".join(app.log_lines)


async def test_leaving_while_alternating_ends_the_alternation_before_restoring() -> None:
    """ctrl+q during an alternation: it flips no more once the hosts are being restored (a
    flip after the restore would leave a host changed)."""

    class Watched(ReplayController):
        def __init__(self, *args, **kwargs) -> None:  # type: ignore[no-untyped-def]
            super().__init__(*args, **kwargs)
            self.restoring = False
            self.late: list[str] = []

        async def set_knob(self, knob: str, value: str, pairs=None) -> None:  # type: ignore[no-untyped-def]
            if self.restoring:
                self.late.append(value)
            await super().set_knob(knob, value, pairs)

        async def shutdown(self, reason: str = "shutdown") -> None:
            self.restoring = True
            await super().shutdown(reason)

    ctl = Watched(synthetic_profile(1), speed=400)
    app = AbtuiApp(ctl, title="abtui — test")
    async with app.run_test(size=(140, 45)) as pilot:
        await until(pilot, lambda: app.state.running)
        # a flip a second: ctrl+q comes before the verdict could (tso off cuts throughput
        # 60 % on this stream: a few stretches of each would tell)
        app.alternation.every = 1.0
        app.alternation.last_knob = "tso"
        await pilot.press("ctrl+a")
        alt = app.alternation
        await until(pilot, lambda: alt.live is not None and alt.live.running, timeout=20)
        await pilot.press("ctrl+q")
        await until(pilot, lambda: ctl.restoring, timeout=10)
    # its flipping task is over (no flip can follow) and none came once restoring began
    assert alt.live is not None and not alt.live.running
    assert ctl.late == []


async def test_ctrl_a_after_p_alternates_the_plan_s_knob_and_stopping_sets_it_back(
        monkeypatch) -> None:  # type: ignore[no-untyped-def]
    """`u` flips the tunnel by key, then `p` runs the plan, whose steps flip tso and tcp_wmem
    (tso last): ctrl+a alternates the knob the plan flipped last, not the tunnel; ctrl+a
    again stops it and sets tso back to the value it had before the alternation began (not
    the value it held when stopped); the log says so."""
    from abtui.core.model import DEFAULT_MAX_RUNS
    from abtui.measure.alternate import verdicts
    from abtui.measure.alternate.design import schedule

    # an order whose first stretch holds the other value: the stop has something to undo
    seed = next(s for s in range(100)
                if schedule(("off", "on"), DEFAULT_MAX_RUNS, s)[0] == "on")
    monkeypatch.setattr(verdicts, "new_seed", lambda: seed)
    ctl = ReplayController(synthetic_profile(1), speed=400)
    app = AbtuiApp(ctl, title="abtui — test")
    async with app.run_test(size=(140, 45)) as pilot:
        await until(pilot, lambda: app.state.running)
        app.alternation.every = 5.0
        await pilot.press("u")  # tunnel: none -> wireguard, by key
        await until(pilot, lambda: app.state.pairs["A"].config.get("tunnel") == "wireguard")
        await pilot.press("p")  # the plan: tcp_wmem × tso, its last step tso=off
        await until(pilot, lambda: (app.state.progress or {}).get("done") == 4)
        assert app.state.pairs["A"].config["tso"] == "off"
        await pilot.press("ctrl+a")
        alt = app.alternation
        await until(pilot, lambda: alt.live is not None and alt.live.running
                    and app.state.pairs["A"].config.get("tso") == "on")
        assert alt.live is not None and alt.live.alt.knob == "tso"
        assert _panel(app).startswith("alternating tso every 5 s")
        await pilot.press("ctrl+a")
        await until(pilot, lambda: "ended: stopped" in _panel(app))
        await until(pilot, lambda: app.state.pairs["A"].config.get("tso") == "off")
        assert ctl.configs["A"]["tso"] == "off"
        assert ctl.configs["A"]["tunnel"] == "wireguard"  # not touched
        assert "alternation of tso stopped; tso back to off" in "\n".join(app.log_lines)
