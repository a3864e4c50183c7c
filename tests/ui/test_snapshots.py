"""Snapshots of the console fed by a fixed replay (fixed timestamps, seed; no clocks shown).

Update them with `pytest tests/ui/test_snapshots.py --snapshot-update` after a deliberate
change, and look at the report it writes before committing."""

from __future__ import annotations

import pytest

from tests.ui.console_kit import make_app, replayed, settle

pytestmark = pytest.mark.ui


async def _settled(pilot) -> None:  # type: ignore[no-untyped-def]
    await replayed(pilot, 24)
    # the log follows its end lazily (after its next layout): pin it there, then settle
    pilot.app.query_one("#log").scroll_end(animate=False, immediate=True)
    await settle(pilot)


def test_main_screen_80x24(snap_compare) -> None:  # type: ignore[no-untyped-def]
    assert snap_compare(make_app(intervals=24), terminal_size=(80, 24), run_before=_settled)


def test_main_screen_80x24_four_pairs(snap_compare) -> None:  # type: ignore[no-untyped-def]
    """Four panes at 80×24: compact (no sparklines), pair D scoped and scrolled into view."""
    async def settled_on_d(pilot) -> None:  # type: ignore[no-untyped-def]
        await _settled(pilot)
        await pilot.press("tab", "tab", "tab", "tab")
        await settle(pilot)

    assert snap_compare(make_app(pairs=4, intervals=24), terminal_size=(80, 24),
                        run_before=settled_on_d)


def test_main_screen_160x48(snap_compare) -> None:  # type: ignore[no-untyped-def]
    assert snap_compare(make_app(pairs=4, intervals=24), terminal_size=(160, 48),
                        run_before=_settled)


def test_compare_screen(snap_compare) -> None:  # type: ignore[no-untyped-def]
    assert snap_compare(make_app(intervals=24), terminal_size=(120, 36), press=["ctrl+o"],
                        run_before=_settled)
