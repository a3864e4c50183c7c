"""`abtui view [--follow] SESSION`: the read-only controller it opens the console on, its
title, and bad input in one line (the console itself: tests/ui/test_view_follow.py)."""

from __future__ import annotations

import asyncio
from pathlib import Path

import pytest

from abtui.cli import main
from abtui.commands.view import controller_for
from abtui.core.errors import KnobRefused
from abtui.measure.replay.synthetic import synthetic_events, synthetic_profile
from abtui.sessions.writer import SessionWriter


def test_live_journal_is_followed_a_finished_one_viewed(tmp_path: Path) -> None:
    profile = synthetic_profile(2)
    journal = tmp_path / "s.abtui.jsonl"
    writer = SessionWriter(journal, profile=profile.name)
    for e in synthetic_events(profile, intervals=2, seed=1):
        writer.write(e)
    ctl, title = controller_for(journal, follow=True)
    assert "following s.abtui.jsonl (read-only)" in title and not ctl.finished
    assert [p.label for p in ctl.profile.pairs] == ["A", "B"]
    with pytest.raises(KnobRefused, match="read-only"):
        asyncio.run(ctl.set_knob("tso", "off"))
    with pytest.raises(KnobRefused, match="read-only"):
        asyncio.run(ctl.start("plan"))
    once, title = controller_for(journal, follow=False)
    assert "viewing" in title and once.finished
    writer.close()
    assert writer.final_path is not None
    done, title = controller_for(writer.final_path, follow=True)
    assert "viewing" in title and done.finished


def test_no_such_session_exits_2_in_one_line(tmp_path: Path,
                                             capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["view", "--follow", str(tmp_path / "nothing.abtui.jsonl")]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "nothing" in err[0]
