"""A session file read as it grows (abtui.sessions.follow): a line in flight waits for its
end, the compaction into .gz is followed, a finished file is read at once."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from abtui.core.errors import BadInput
from abtui.measure.replay.synthetic import synthetic_events, synthetic_profile
from abtui.sessions.follow import SessionTail
from abtui.sessions.writer import SessionWriter


def test_tail_reads_a_torn_line_once_whole_and_a_finished_file_at_once(tmp_path: Path) -> None:
    profile = synthetic_profile(1)
    events = synthetic_events(profile, intervals=3, seed=1)
    journal = tmp_path / "s.abtui.jsonl"
    writer = SessionWriter(journal, profile=profile.name)
    writer.write(events[0])
    tail = SessionTail(journal)
    assert [e.kind for e in tail.poll()] == [events[0].kind]
    # half a line (a write in flight): not yet an event
    line = json.dumps(events[1].to_json()) + "\n"
    with open(journal, "a") as f:
        f.write(line[:10])
    assert tail.poll() == []
    with open(journal, "a") as f:
        f.write(line[10:])
    got = tail.poll()
    assert [e.kind for e in got] == [events[1].kind] and got[0].t == events[1].t
    for e in events[2:]:
        writer.write(e)
    writer.close()
    rest = tail.poll()
    assert tail.finished and len(rest) == len(events) - 2
    assert tail.poll() == []
    whole = SessionTail(writer.final_path or journal)
    assert whole.finished and len(whole.poll()) == len(events)


def test_not_a_session_is_one_line(tmp_path: Path) -> None:
    bad = tmp_path / "x.abtui.jsonl"
    bad.write_text("hello\n")
    with pytest.raises(BadInput, match="not an abtui session"):
        SessionTail(bad)
