"""The console's memory stays bounded: what it keeps of a long session is a window and folded
state, whatever the session's length; the events themselves are read back from the journal."""

from __future__ import annotations

import gc
import tracemalloc
from collections.abc import Iterator

import pytest

from abtui.core.events import Event
from abtui.measure.replay.synthetic import T0, Synth, synthetic_profile
from abtui.ui.flow.on_disk import EventsOnDisk
from abtui.ui.flow.record import WINDOW, SessionRecord
from abtui.ui.model.state import ConsoleState
from abtui.ui.render.eventlog import EventLog

HOUR = 3600


def _stream(synth: Synth, start: int, seconds: int) -> Iterator[list[Event]]:
    """`seconds` more of a 2-pair session at 1 s, one tick's events at a time."""
    phase = {p.label: 0 for p in synth.profile.pairs}
    configs = {p.label: {k.name: k.values[0] for k in synth.profile.knobs}
               for p in synth.profile.pairs}
    for k in range(start, start + seconds):
        yield synth.tick(T0 + k, 0, phase, configs)


def _fold(record: SessionRecord, synth: Synth, start: int, seconds: int) -> None:
    for batch in _stream(synth, start, seconds):
        record.fold([(e, 0.0) for e in batch])


@pytest.mark.sim
def test_the_record_s_memory_is_flat_over_three_simulated_hours() -> None:
    """After an hour's warm-up, three more simulated hours (2 pairs at 1 s, a ping each)
    add no memory that grows with them: it used to keep every event (~2.6 MB per 1000 s)."""
    profile = synthetic_profile(2, 1.0)
    synth = Synth(profile, seed=1)
    record = SessionRecord(ConsoleState(profile), EventLog())
    tracemalloc.start()  # before the warm-up: what it keeps is traced from the start
    try:
        _fold(record, synth, 0, HOUR)  # warm-up: the window fills, the log's lines too
        gc.collect()
        before = tracemalloc.get_traced_memory()[0]
        _fold(record, synth, HOUR, 3 * HOUR)
        gc.collect()
        grown = tracemalloc.get_traced_memory()[0] - before
    finally:
        tracemalloc.stop()
    assert record.received >= 4 * HOUR * 2  # every interval was taken in...
    assert len(record.recent) == WINDOW  # ...and only the latest are kept
    assert grown < 100_000, f"grew {grown} bytes over 3 simulated hours"


def test_the_journal_has_every_event_the_window_has_let_go(tmp_path) -> None:  # type: ignore[no-untyped-def]
    """A controller that journals nothing: the console's own spool has every event (what
    save and export write), in order, and is removed when the console closes."""
    profile = synthetic_profile(2, 1.0)
    on_disk = EventsOnDisk(None, profile.name, [p.label for p in profile.pairs])
    record = SessionRecord(ConsoleState(profile), EventLog(), window=10)
    sent = []
    for batch in _stream(Synth(profile, seed=2), 0, 50):
        for e in batch:
            on_disk.write(e)
            sent.append(e)
        record.fold([(e, 0.0) for e in batch])
    assert on_disk.spooled and len(record.recent) == 10
    assert [e.to_json() for e in on_disk.events()] == [e.to_json() for e in sent]
    folder = on_disk.path.parent
    on_disk.close()
    assert not folder.exists()
    on_disk.write(sent[0])  # after the console has closed (the guard's restore): nothing


def test_the_engine_s_journal_is_read_not_copied(tmp_path) -> None:  # type: ignore[no-untyped-def]
    """When the controller journals the session (the engine's file is there), the console
    writes no spool of its own and reads that file."""
    from abtui.sessions.writer import SessionWriter

    profile = synthetic_profile(1, 1.0)
    live = tmp_path / "s.abtui.jsonl"
    writer = SessionWriter(live, profile=profile.name, compact=False)
    on_disk = EventsOnDisk(live, profile.name, ["A"])
    events = [e for batch in _stream(Synth(profile), 0, 3) for e in batch]
    for e in events:
        writer.write(e)
        on_disk.write(e)  # a no-op: the engine's writer has it
    assert not on_disk.spooled and on_disk.path == live
    assert len(on_disk.events()) == len(events)
    on_disk.close()
    assert live.exists()  # the engine's to finish
    writer.close()


def test_a_spool_that_could_not_be_written_is_never_saved_as_the_whole(tmp_path) -> None:  # type: ignore[no-untyped-def]
    """The console's own spool meets a write error (a real one: a file size limit): save and
    export refuse in one line naming the spool and the error, rather than write part of the
    session as if it were all of it."""
    import pytest

    from abtui.core.errors import WriteFailed
    from tests.unit.filelimit import file_size_limit

    profile = synthetic_profile(2, 1.0)
    on_disk = EventsOnDisk(None, profile.name, [p.label for p in profile.pairs])
    with file_size_limit(on_disk.path.stat().st_size + 2000):
        for batch in _stream(Synth(profile, seed=2), 0, 50):
            for e in batch:
                on_disk.write(e)
    with pytest.raises(WriteFailed, match=r"could not write the session \(File too large\)"):
        on_disk.events()
    on_disk.close()
