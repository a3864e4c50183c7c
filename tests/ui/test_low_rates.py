"""Low rates on screen (VM IPsec and WireGuard: a few Mbit/s): the panes and the phase table
print 3 significant digits in the unit that keeps them (Mbit/s below 1 Gbit/s), never
`0.02` or `min 0.00`, at 80×24 and at 160×48."""

from __future__ import annotations

import dataclasses

import pytest
from textual.widgets import DataTable

from abtui.core.events import Event, EventKind
from abtui.core.numbers import sig
from abtui.measure.replay.synthetic import synthetic_events, synthetic_profile
from abtui.ui.render.widgets import PairPane
from tests.ui.console_kit import make_app, until

pytestmark = pytest.mark.ui

INTERVALS = 6
SCALE = 0.005  # the synthetic pairs' few Gbit/s down to a few Mbit/s


def _slow() -> list[Event]:
    """The synthetic recording, every rate at ~0.5 % of itself."""
    out: list[Event] = []
    for e in synthetic_events(synthetic_profile(2), intervals=INTERVALS, seed=7):
        if e.kind is EventKind.INTERVAL:
            e = Event.of(dataclasses.replace(
                e.payload, bits_per_second=e.payload.bits_per_second * SCALE),
                e.t, e.pair, e.host)
        out.append(e)
    return out


def _three_digits(shown: str) -> bool:
    """A figure ≥ 1 printed to exactly 3 significant digits (`7.47`, `21.4`, `155`)."""
    return float(shown) >= 1 and sig(float(shown)) == shown


@pytest.mark.parametrize("size", [(80, 24), (160, 48)])
async def test_a_few_mbit_read_in_mbit_with_three_digits(size: tuple[int, int]) -> None:
    app = make_app(events=_slow())
    async with app.run_test(size=size) as pilot:
        await until(pilot, lambda: app.state.intervals_seen >= INTERVALS * 2
                    and not app.controller.running)  # type: ignore[attr-defined]
        await app.settled()
        for label in app.state.pairs:
            text = app.query_one(f"#pane-{label}", PairPane).text("bps-label")
            figures = text.replace("\n", "  ").split()
            assert "Mbit/s" in figures and "Gbit/s" not in figures, text
            for name in ("mean", "min", "max"):
                assert _three_digits(figures[figures.index(name) + 1]), text
        table = app.query_one("#phases", DataTable)
        titles = [str(c.label) for c in table.columns.values()]
        assert titles[1:] == ["A Mbit/s (base)", "B Mbit/s Δ%"], titles
        for i in range(table.row_count):
            cells = [str(c) for c in table.get_row_at(i)][1:]
            assert all(_three_digits(cell.split()[0]) for cell in cells), cells


async def test_a_crypto_profile_s_console_reads_megabytes_per_second() -> None:
    """A profile whose report is the crypto posts' (`[report] layout = "before-after"`,
    quoted in MB/s): the console's panes and phase table are in bytes per second too."""
    import math

    from abtui.ui.app import AbtuiApp
    from tests.ui.console_kit import SpyController

    profile = dataclasses.replace(synthetic_profile(2), layout="before-after")
    app = AbtuiApp(SpyController(profile, _slow(), speed=math.inf), title="abtui — test")
    async with app.run_test(size=(160, 48)) as pilot:
        await until(pilot, lambda: app.state.intervals_seen >= INTERVALS * 2
                    and not app.controller.running)  # type: ignore[attr-defined]
        await app.settled()
        text = app.query_one("#pane-A", PairPane).text("bps-label")
        assert " kB/s" in text or " MB/s" in text, text
        table = app.query_one("#phases", DataTable)
        titles = [str(c.label) for c in table.columns.values()]
        assert titles[1].endswith("B/s (base)") and "bit/s" not in titles[1], titles
