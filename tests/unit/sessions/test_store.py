"""The session journal: crash safety, torn and damaged records, compaction, naming."""

from __future__ import annotations

import gzip
import json
import os
import signal
import subprocess
import sys
import threading
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from abtui.core import events
from abtui.core.errors import BadInput
from abtui.core.events import Event, EventKind, IntervalMeasured, KnobChanged, Mark
from abtui.sessions import paths, reader, writer
from abtui.sessions.session import Session
from tests import synth

ROOT = Path(__file__).resolve().parents[3]

WRITER = """
import sys
from abtui.core.events import Event, IntervalMeasured, KnobChanged, SessionStart
from abtui.sessions.writer import SessionWriter
w = SessionWriter(sys.argv[1], profile="kill", pairs=["A", "B"])
w.write(Event.of(SessionStart.from_data({"profile_text": ""}), 1.0))
w.write(Event.of(KnobChanged.from_data({"knob": "cc", "value": "bbr", "pairs": ["A", "B"]}),
                 1.0))
n = 0
while True:
    n += 1
    for pair in ("A", "B"):
        w.write(Event.of(IntervalMeasured(
            run=1, phase=0, start=n - 1.0, end=float(n), bytes=1, bits_per_second=1e9 + n,
            retransmits=0, cwnd_bytes=1, omitted=False, straddles=False), 1.0 + n, pair=pair))
    if n % 200 == 0:
        print(n, flush=True)
"""


def test_sigkill_mid_write_keeps_every_complete_record(tmp_path: Path) -> None:
    path = tmp_path / "kill.abtui.jsonl"
    proc = subprocess.Popen([sys.executable, "-c", WRITER, str(path)], stdout=subprocess.PIPE,
                            text=True, cwd=ROOT)
    try:
        reported = 0
        assert proc.stdout is not None
        while reported < 2000:
            reported = int(proc.stdout.readline())
    finally:
        os.kill(proc.pid, signal.SIGKILL)
        proc.wait()
    assert proc.returncode == -signal.SIGKILL
    assert path.exists() and not path.with_name(path.name + ".gz").exists()
    session = Session.load(path)
    n = len(session.intervals["A"])
    assert n >= reported  # every interval reported written is there
    assert len(session.intervals["B"]) in (n, n - 1)  # at most the one in flight is missing
    assert list(session.intervals["A"]["bps"][:3]) == [1e9 + 1, 1e9 + 2, 1e9 + 3]
    assert session.phases[0].config == {"cc": "bbr"}


def _live(tmp_path: Path, events: int = 5) -> Path:
    w = writer.SessionWriter(tmp_path / "s.abtui.jsonl", profile="p", compact=False)
    for i in range(events):
        w.write(Event.of(Mark(text=f"m{i}"), 10.0 + i))
    return w.close()


def test_torn_last_line_is_ignored(tmp_path: Path) -> None:
    path = _live(tmp_path)
    with open(path, "ab") as f:
        f.write(b'{"kind":"mark","t":99.0,"data":{"te')
    events = reader.load_events(path)
    assert [e.payload.text for e in events] == ["m0", "m1", "m2", "m3", "m4"]


def test_damaged_middle_line_names_file_and_line(tmp_path: Path) -> None:
    path = _live(tmp_path)
    lines = path.read_bytes().split(b"\n")
    lines[3] = b'{"kind":"mark","t":1'
    path.write_bytes(b"\n".join(lines))
    with pytest.raises(BadInput, match=rf"{path}:4: damaged session record"):
        reader.load_events(path)
    lines[3] = b"\xff\xfe garbage"
    path.write_bytes(b"\n".join(lines))
    with pytest.raises(BadInput, match=r":4: damaged session record \(not UTF-8\)"):
        reader.load_events(path)


def test_close_compacts_atomically_with_a_complete_header(tmp_path: Path) -> None:
    live = tmp_path / "x.abtui.jsonl"
    with writer.SessionWriter(live, profile="synth", pairs=["A"]) as w:
        for ev in synth.continuous([{"k": "1"}, {"k": "2"}], {"A": [1e9, 2e9]}, seconds=3,
                                   pairs=("A",)):
            w.write(ev)
    final = tmp_path / "x.abtui.jsonl.gz"
    assert w.final_path == final and final.exists() and not live.exists()
    assert not list(tmp_path.glob("*.tmp"))
    with gzip.open(final) as f:
        header = json.loads(f.readline())
    assert header["format"] == "abtui-session" and header["version"] == reader.VERSION
    assert header["events"] == w.events and header["pairs"] == ["A"]
    assert header["start"] == synth.T0 and header["end"] > synth.T0
    assert len(reader.load_events(final)) == w.events


def test_compact_recovers_a_crashed_journal(tmp_path: Path) -> None:
    path = _live(tmp_path, events=3)
    with pytest.raises(BadInput, match="a session file exists there already"):
        writer.SessionWriter(path)
    final = writer.compact(path)
    assert reader.read_header(final)["events"] == 3 and not path.exists()


def test_not_a_session_and_newer_version_are_one_line_errors(tmp_path: Path) -> None:
    bad = tmp_path / "bad.abtui.jsonl"
    bad.write_text("hello\n")
    with pytest.raises(BadInput, match=r"bad\.abtui\.jsonl:1: not an abtui session"):
        reader.load_events(bad)
    bad.write_text(json.dumps({"format": "abtui-session", "version": 99}) + "\n")
    with pytest.raises(BadInput, match="version 99 is newer"):
        reader.load_events(bad)
    with pytest.raises(BadInput, match="no such session file"):
        reader.load_events(tmp_path / "missing")


def test_unknown_kind_is_skipped_with_a_warning(tmp_path: Path, capsys) -> None:  # type: ignore[no-untyped-def]
    path = _live(tmp_path, events=1)
    with open(path, "a") as f:
        f.write('{"kind":"hologram","t":1}\n{"kind":"mark","t":2,"data":{"text":"z"}}\n')
    assert [e.payload.text for e in reader.load_events(path)] == ["m0", "z"]
    assert "unknown event kind 'hologram'" in capsys.readouterr().err


def test_names_and_locations(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv(paths.ENV_DIR, str(tmp_path / "env"))
    assert paths.sessions_dir() == tmp_path / "env"
    assert paths.sessions_dir(tmp_path / "opt") == tmp_path / "opt"
    assert paths.session_name("my lab/1", 0) == "my_lab_1-19700101T000000Z"
    first = paths.new_session_path("p", when=0)
    first.parent.mkdir(parents=True)
    first.with_name(first.name + ".gz").write_text("")
    assert paths.new_session_path("p", when=0).name == "p-19700101T000000Z-2.abtui.jsonl"
    monkeypatch.delenv(paths.ENV_DIR)
    assert paths.sessions_dir().parts[-2:] == ("abtui", "sessions")


def test_fsync_policy_syncs_knobs_at_once_and_intervals_at_most_per_interval(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    synced: list[int] = []
    real = os.fsync
    monkeypatch.setattr(writer.os, "fsync", lambda fd: (synced.append(fd), real(fd)))
    w = writer.SessionWriter(tmp_path / "f.abtui.jsonl", fsync_interval=3600, compact=False)
    base = len(synced)
    for i in range(100):
        w.write(Event.of(IntervalMeasured.from_data({"run": 1, "phase": 0}), float(i), pair="A"))
    assert len(synced) == base  # bulk records: flushed to the kernel, not fsync'ed each
    w.write(Event.of(KnobChanged.from_data({"knob": "k", "value": "1"}), 100.0))
    assert len(synced) == base + 1
    w.close()


def test_the_periodic_fsync_leaves_the_caller_free_and_its_error_is_raised_next(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """The once-a-second fsync of high-rate records runs in the writer's thread (on the
    console's event loop it held the screen up); records that restore hosts are still
    fsync'ed by the caller, at once; close() waits for a sync in flight, and says its
    error."""
    synced: list[str] = []
    real = os.fsync

    def spy(fd: int) -> None:
        synced.append(threading.current_thread().name)
        real(fd)

    monkeypatch.setattr(writer.os, "fsync", spy)
    w = writer.SessionWriter(tmp_path / "f.abtui.jsonl", fsync_interval=0.0, compact=False)
    caller = threading.current_thread().name
    del synced[:]  # the header's
    w.write(Event.of(IntervalMeasured.from_data({"run": 1, "phase": 0}), 1.0, pair="A"))
    w.write(Event.of(KnobChanged.from_data({"knob": "k", "value": "1"}), 2.0))
    w.close()
    assert synced[0].startswith("abtui-fsync") and caller in synced[1:]

    def failing(fd: int) -> None:
        raise OSError(5, "Input/output error")

    w = writer.SessionWriter(tmp_path / "g.abtui.jsonl", fsync_interval=0.0, compact=False)
    monkeypatch.setattr(writer.os, "fsync", failing)
    w.write(Event.of(IntervalMeasured.from_data({"run": 1, "phase": 0}), 1.0, pair="A"))
    w.close()  # its error said (or by the next write, once the sync failed), never raised
    assert w.error is not None and "(Input/output error)" in w.error
    w.discard()


def test_malformed_records_never_raise_a_traceback(tmp_path: Path) -> None:
    path = _live(tmp_path, events=1)
    with open(path, "a") as f:
        f.write('{"kind":"mark","t":"soon"}\n')
    with pytest.raises(BadInput, match=r":3: malformed mark record"):
        reader.load_events(path)


@pytest.mark.sim
@given(st.lists(st.fixed_dictionaries({
    "kind": st.sampled_from([str(k) for k in EventKind]),
    "pair": st.sampled_from(["A", "B", None]),
    "data": st.dictionaries(st.sampled_from(
        ["run", "phase", "config", "start", "end", "bits_per_second", "rtt_ms", "seq", "knob",
         "value", "pairs", "facts", "straddles", "summary", "name", "skew_ms"]),
        st.one_of(st.none(), st.integers(), st.floats(allow_nan=True), st.text(max_size=3),
                  st.lists(st.text(max_size=2), max_size=2),
                  st.dictionaries(st.text(max_size=2), st.text(max_size=2), max_size=2)))}),
    max_size=30))
@settings(max_examples=150, deadline=None)
def test_session_takes_arbitrary_event_data(records: list[dict]) -> None:  # type: ignore[type-arg]
    from abtui.reports import exports, report

    events = [Event.from_json({**r, "t": 1.0 + i}) for i, r in enumerate(records)]
    session = Session.from_events(events)
    for cols in (*session.intervals.values(), *session.pings.values()):
        assert len({len(c) for c in cols.cols.values()}) == 1  # columns stay aligned
    report.markdown(session, chart=False)
    json.loads(exports.dumps(exports.to_json(session)))


def test_a_journal_path_finds_the_finished_session(tmp_path: Path) -> None:
    """A session written to X.abtui.jsonl (or X.jsonl) ends as X.abtui.jsonl.gz; the path
    it was written to still finds it, and a finished session is never overwritten."""
    for typed in ("run.abtui.jsonl", "other.jsonl"):
        path = tmp_path / typed
        with writer.SessionWriter(path, profile="p") as w:
            w.write(Event.of(Mark(text="x"), 1.0))
        final = paths.finished_path(path)
        assert final.name == typed.split(".")[0] + ".abtui.jsonl.gz"
        assert w.final_path == final and final.is_file() and not path.exists()
        assert paths.find_session(str(path)) == final
        with pytest.raises(BadInput, match="exists there already"):
            writer.SessionWriter(path, profile="p")
    assert paths.name_of(tmp_path / "x.jsonl.gz") == "x"


def test_a_ping_record_is_written_byte_for_byte_as_before(tmp_path: Path) -> None:
    """Sessions are read back by older code: the journal's encoder (made once) writes the
    same bytes `json.dumps` with the journal's options wrote, keys in the same order and
    non-ASCII text as is."""
    ping = Event.of(events.Ping(run="A-3", phase=2, seq=1234, rtt_ms=0.052), t=1796195154.25,
                    pair="Ä→B")
    w = writer.SessionWriter(tmp_path / "s.abtui.jsonl", compact=False)
    w.write(ping)
    w.close()
    line = (tmp_path / "s.abtui.jsonl").read_bytes().splitlines()[1]
    assert line == ('{"kind":"ping","t":1796195154.25,"pair":"Ä→B","data":{"run":"A-3",'
                    '"phase":2,"seq":1234,"rtt_ms":0.052}}').encode()
    assert line == json.dumps(ping.to_json(), separators=(",", ":"),
                              ensure_ascii=False).encode()
