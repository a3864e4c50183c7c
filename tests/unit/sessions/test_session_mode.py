"""A session file says who ran what against which hosts: the live journal and the finished
file are their owner's only (0600), whatever the umask; a file kept over keeps its mode."""

from __future__ import annotations

import os
import stat
from pathlib import Path

import pytest

from abtui.core.events import Event, Mark
from abtui.sessions.writer import SessionWriter
from tests.reliability import Reliability


@pytest.mark.reliability(
    "46p", "session files under a umask of 022",
    "the live journal and the finished (compacted) file are created 0600 (they were 0644)")
def test_the_journal_and_the_finished_session_are_0600(tmp_path: Path,
                                                       reliability: Reliability) -> None:
    old = os.umask(0o022)
    try:
        w = SessionWriter(tmp_path / "s.abtui.jsonl", profile="t", compact=False)
        w.write(Event.of(Mark(text="hello"), 1.0))
        assert stat.S_IMODE(os.stat(w.path).st_mode) == 0o600
        done = w.close()
    finally:
        os.umask(old)
    assert stat.S_IMODE(os.stat(done).st_mode) == 0o600
    reliability.row(journal_mode="0600", finished_mode="0600")
