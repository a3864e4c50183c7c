"""`abtui view --follow`: a read-only console on a session file as another abtui writes it
(abtui.measure.replay.follow over abtui.sessions.follow): the panes fill as the journal
grows, the compaction into NAME.abtui.jsonl.gz is followed to the end, a knob key is refused
and nothing is written."""

from __future__ import annotations

from pathlib import Path

import pytest

from abtui.core.events import Event, EventKind, Mark
from abtui.measure.replay.follow import FollowController
from abtui.measure.replay.synthetic import synthetic_events, synthetic_profile
from abtui.sessions.writer import SessionWriter
from abtui.ui.app import AbtuiApp
from abtui.ui.render.verdict_panel import VerdictPanel
from abtui.ui.render.widgets import PairPane
from tests.ui.console_kit import settle, until

pytestmark = pytest.mark.ui


def _split(events):  # type: ignore[no-untyped-def]
    """The recording cut after the 4th interval of each pair, and its end."""
    n, cut = 0, len(events)
    for i, e in enumerate(events):
        n += e.kind is EventKind.INTERVAL
        if n == 8:
            cut = i + 1
            break
    return events[:cut], events[cut:]


def _verdict_mark(pct: float, verdict: str, blocks: int):  # type: ignore[no-untyped-def]
    row = {"pair": "A", "knob": "tso", "value": "off", "base": "on", "delta": "Δgeo",
           "pct": pct, "low": pct - 2.5, "high": pct + 2.5, "verdict": verdict,
           "blocks": blocks, "dead": 0, "seed": 7, "design": "blocks"}
    return Event.of(Mark(text=f"alternation of tso ended after {blocks} blocks",
                         verdicts=[row]))


async def test_view_follow_shows_a_growing_session_and_refuses_knobs(tmp_path: Path) -> None:
    profile = synthetic_profile(2)
    events = synthetic_events(profile, intervals=10, seed=7)
    first, rest = _split(events)
    journal = tmp_path / "live.abtui.jsonl"
    writer = SessionWriter(journal, profile=profile.name)
    for e in first:
        writer.write(e)
    ctl = FollowController(profile, journal, poll_s=0.05)
    app = AbtuiApp(ctl, title="abtui — test — following live.abtui.jsonl (read-only)")
    try:
        async with app.run_test(size=(100, 30)) as pilot:
            await until(pilot, lambda: app.state.intervals_seen >= 8)
            pane = app.query_one("#pane-A", PairPane)
            assert len(pane.state.bps) == 4 and not ctl.finished
            # a knob key: refused in one line, nothing changes, nothing is written
            size = journal.stat().st_size
            before = dict(app.state.pairs["A"].config)
            await pilot.press("t")
            await until(pilot, lambda: any("read-only" in line for line in app.log_lines))
            assert app.state.pairs["A"].config == before
            assert journal.stat().st_size == size
            # the recording goes on: the panes follow
            for e in rest[: len(rest) // 2]:
                writer.write(e)
            await until(pilot, lambda: app.state.intervals_seen > 8)
            # an alternation's verdicts journalled: the verdict panel shows them, then the next
            panel = app.query_one("#verdicts", VerdictPanel)
            assert not panel.shown
            writer.write(_verdict_mark(-12.5, "significant", 6))
            await until(pilot, lambda: bool(panel.shown))
            assert "Δgeo -12.5% [-15.0, -10.0] significant, 6 blocks" in panel.shown[1]
            assert panel.shown[0].startswith("alternation of tso ended")
            writer.write(_verdict_mark(-12.0, "significant", 8))
            await until(pilot, lambda: "8 blocks" in " ".join(panel.shown))
            # it ends: the journal is compacted into .gz, the rest read from there
            for e in rest[len(rest) // 2:]:
                writer.write(e)
            writer.close()
            assert not journal.exists()
            await until(pilot, lambda: ctl.finished and app.state.intervals_seen >= 20)
            await settle(pilot)
            assert len(pane.state.bps) == 10
            assert list(pane.state.bps) == [
                e.payload.bits_per_second for e in events
                if e.kind is EventKind.INTERVAL and e.pair == "A"]
    finally:
        writer.close()
