"""A session, a saved copy or a report that cannot be written (the disk full, an I/O error, no
folder): contained in one line, nothing torn, nothing glued, the old file kept. The write
errors are real ones (tests/unit/filelimit.py: a file size limit, the kernel's own short write
and EFBIG); the full disk itself is the lab's (tests/lab/test_full_disk.py)."""

from __future__ import annotations

import json
import signal
from pathlib import Path

import pytest

from abtui.core.errors import CannotWrite, WriteFailed
from abtui.core.events import AnyEvent
from abtui.core.files import write_atomic
from abtui.sessions import reader
from abtui.sessions.session import Session
from abtui.sessions.writer import SessionWriter, save_events
from tests import synth
from tests.reliability import Reliability
from tests.unit.filelimit import abtui_limited, file_size_limit


def _events(seconds: int = 30) -> list[AnyEvent]:
    return list(synth.continuous([{"cc": "bbr"}, {"cc": "reno"}],
                                 {"A": [1e9, 2e9], "B": [3e9, 4e9]}, seconds=seconds))


def _session(tmp_path: Path) -> Path:
    with SessionWriter(tmp_path / "s.abtui.jsonl", profile="synth", pairs=["A", "B"]) as w:
        for e in _events():
            w.write(e)
    assert w.final_path is not None
    return w.final_path


def test_a_write_cut_short_is_truncated_to_the_last_whole_record(tmp_path: Path) -> None:
    """The kernel writes part of a record, then refuses: the part is cut away (no two records
    glued in one line), the writer says so once in a line naming the file, writes nothing
    more (even once space is back), and leaves the journal readable, not compacted."""
    path = tmp_path / "s.abtui.jsonl"
    events = _events()
    w = SessionWriter(path, profile="synth", pairs=["A", "B"])
    told: list[str] = []
    w.on_error = told.append
    for e in events[:40]:
        w.write(e)
    whole = path.stat().st_size
    with file_size_limit(whole + 25):  # the 41st record crosses it: a short write
        for e in events[40:60]:
            w.write(e)
    for e in events[60:]:  # room again: still nothing, the session is not whole
        w.write(e)
    assert len(told) == 1 and told[0] == w.error
    assert told[0].startswith(f"{path}: could not write the session (File too large)")
    assert "\n" not in told[0]
    assert path.stat().st_size == whole and path.read_bytes().endswith(b"\n")
    assert w.close() == path and not (tmp_path / "s.abtui.jsonl.gz").exists()
    assert len(reader.load_events(path)) == 40
    assert Session.load(path).pairs == ["A", "B"]  # what export reads


def test_a_session_that_cannot_be_compacted_stays_whole_as_its_journal(tmp_path: Path) -> None:
    path = tmp_path / "s.abtui.jsonl"
    w = SessionWriter(path, profile="synth", pairs=["A", "B"])
    for e in _events():
        w.write(e)
    with file_size_limit(256):
        closed = w.close()
    assert closed == path and w.error is not None
    assert w.error.startswith(f"{tmp_path / 's.abtui.jsonl.gz'}: could not finish the session")
    assert w.error.endswith(f"it is whole in {path}")
    assert sorted(p.name for p in tmp_path.iterdir()) == ["s.abtui.jsonl"]  # no temporary
    assert len(reader.load_events(path)) == len(_events())


def test_a_session_whose_header_cannot_be_written_is_one_line(tmp_path: Path) -> None:
    with file_size_limit(20), pytest.raises(WriteFailed, match="cannot write the session"):
        SessionWriter(tmp_path / "s.abtui.jsonl", profile="synth")
    assert list(tmp_path.iterdir()) == []


def test_a_save_that_cannot_be_written_leaves_nothing(tmp_path: Path) -> None:
    """The console's save: one line naming the file; no torn copy, no `.part` left."""
    target = tmp_path / "copy.abtui.jsonl.gz"
    with file_size_limit(4096), pytest.raises(CannotWrite) as err:
        save_events(target, _events(), profile="synth", pairs=["A", "B"])
    assert str(err.value).startswith(f"{target}: not saved: ") and "\n" not in str(err.value)
    assert list(tmp_path.iterdir()) == []


def test_an_atomic_write_refuses_a_folder_and_a_missing_folder(tmp_path: Path) -> None:
    with pytest.raises(CannotWrite, match="is a folder; give a file name"):
        write_atomic(tmp_path, "x")
    with pytest.raises(CannotWrite, match=f"no such folder {tmp_path / 'nope'}"):
        write_atomic(tmp_path / "nope" / "r.md", "x")
    old = tmp_path / "r.md"
    old.write_text("old report\n")
    old.chmod(0o640)
    write_atomic(old, "new report\n")
    assert old.read_text() == "new report\n" and old.stat().st_mode & 0o777 == 0o640
    assert [p.name for p in tmp_path.iterdir()] == ["r.md"]


OLD = "# the old report\n"


@pytest.mark.parametrize("fmt", ["md", "json", "plot"])
def test_an_export_that_cannot_be_written_keeps_the_old_report(tmp_path: Path,
                                                               fmt: str) -> None:
    """`export --out` on a disk that refuses the write: exit 2, one line naming the file, the
    report that was there intact, no temporary file left."""
    session = _session(tmp_path)
    out = tmp_path / ("report.txt" if fmt == "plot" else f"report.{fmt}")
    out.write_text(OLD)
    done = abtui_limited(["export", str(session), "--format", fmt, "--out", str(out)], 600)
    assert done.returncode == 2, done.stderr
    assert done.stderr.count("\n") == 1 and "Traceback" not in done.stderr
    assert done.stderr.startswith(f"abtui: {out}: cannot write (File too large)")
    assert out.read_text() == OLD
    assert sorted(p.name for p in tmp_path.iterdir()) == sorted([session.name, out.name])


@pytest.mark.reliability(
    "19", "`abtui export --out` over a report, killed while writing it (SIGXFSZ at 600 "
    "bytes), or refused the write (EFBIG, as a full disk)",
    "the old report intact (killed and refused); refused: exit 2, one line naming the file, "
    "no temporary file left; a missing folder or a folder as --out: one line, exit 2")
def test_a_killed_export_leaves_the_old_report(tmp_path: Path,
                                               reliability: Reliability) -> None:
    """SIGXFSZ kills the export in the middle of writing its report: the report that was
    there is the old one, whole (before: truncated, then torn)."""
    session = _session(tmp_path)
    out = tmp_path / "report.md"
    out.write_text(OLD)
    done = abtui_limited(["export", str(session), "--out", str(out)], 600, killed=True)
    assert done.returncode == -signal.SIGXFSZ, (done.returncode, done.stderr)
    assert out.read_text() == OLD
    reliability.row(killed_by=signal.Signals(-done.returncode).name,
                    old_report_bytes=len(OLD))


@pytest.mark.parametrize("where", ["folder", "missing"])
def test_export_and_compare_out_refuse_a_bad_path_in_one_line(
        tmp_path: Path, where: str, capsys: pytest.CaptureFixture[str]) -> None:
    from abtui.cli import main

    session = _session(tmp_path)
    folder = tmp_path if where == "missing" else tmp_path / "no"
    for args in (["export", str(session)], ["compare", str(session), str(session)],
                 ["export", str(session), "--format", "plot"]):
        target = folder / "no" / ("r.txt" if args[-1] == "plot" else "r.md")
        if where == "folder":
            target.mkdir(parents=True, exist_ok=True)
        assert main([*args, "--out", str(target)]) == 2
        err = capsys.readouterr().err
        assert err.count("\n") == 1 and str(target) in err, err
        assert ("is a folder" if where == "folder" else "no such folder") in err


def test_a_report_is_replaced_whole(tmp_path: Path) -> None:
    session = _session(tmp_path)
    out = tmp_path / "r.json"
    out.write_text(OLD)
    from abtui.cli import main

    assert main(["export", str(session), "--format", "json", "--out", str(out)]) == 0
    assert json.loads(out.read_text())["pairs"] == ["A", "B"]
    assert len(reader.load_events(session)) == len(_events())  # the session untouched


def test_sessions_lists_what_it_cannot_read_and_the_saves_cut_short(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """`abtui sessions` says which files it cannot read and why, and finds a save the console
    did not finish (killed: its `.part` journal is all there is) with the command that makes
    it a session `abtui export` reads."""
    import shlex
    import subprocess

    from abtui.cli import main
    from abtui.sessions.paths import part_path

    _session(tmp_path)
    (tmp_path / "junk.abtui.jsonl").write_text("not a session\n")
    target = tmp_path / "copy.abtui.jsonl.gz"
    cut = SessionWriter(part_path(target), profile="synth", pairs=["A", "B"], final=target)
    for e in _events()[:50]:  # what a save killed half way leaves
        cut.write(e)
    assert main(["sessions", "--sessions-dir", str(tmp_path)]) == 0
    lines = capsys.readouterr().out.splitlines()
    assert lines[1].startswith("s ") and len(lines) == 4, lines
    assert lines[2] == (f"cannot read: {tmp_path / 'junk.abtui.jsonl'}:1: not an abtui "
                        'session (no "format": "abtui-session" header)')
    part = tmp_path / ".copy.abtui.jsonl.gz.part"
    assert lines[3].startswith(f"cut short: {part}: a save cut short: mv ")
    command = lines[3].split(": a save cut short: ")[1].split(" makes it")[0]
    subprocess.run(shlex.split(command), check=True)
    assert main(["export", str(tmp_path / "copy.abtui.jsonl"), "--format", "json"]) == 0
    assert json.loads(capsys.readouterr().out)["pairs"] == ["A", "B"]
    assert main(["sessions", "--sessions-dir", str(tmp_path), "--json"]) == 0
    listed = json.loads(capsys.readouterr().out)
    assert listed["cut_short"] == [] and [u["path"] for u in listed["unreadable"]] == \
        [str(tmp_path / "junk.abtui.jsonl")]
    assert {s["name"] for s in listed["sessions"]} == {"s", "copy"}
    cut.discard()  # its descriptor (the file was moved)


def test_a_writer_used_as_a_block_raises_what_failed_on_leaving(tmp_path: Path) -> None:
    """`abtui import`'s sessions and tests write in a `with` block: a failure inside is raised
    when the block is left, never passed over."""
    with file_size_limit(2000), pytest.raises(WriteFailed, match="could not write the"), \
            SessionWriter(tmp_path / "s.abtui.jsonl", profile="synth") as w:
        for e in _events():
            w.write(e)
    assert sorted(p.name for p in tmp_path.iterdir()) == ["s.abtui.jsonl"]


def test_an_event_after_the_close_is_counted_not_raised(tmp_path: Path) -> None:
    """A sampler's last reading can race a stop: written after the session closed, it used to
    raise ValueError out of the sampler and print a traceback on ctrl+c. The closed file stays
    whole and reads back; the late event is counted."""
    events = _events(5)
    writer = SessionWriter(tmp_path / "s.abtui.jsonl", profile="synth", pairs=["A", "B"])
    for e in events[:-1]:
        writer.write(e)
    path = writer.close()
    writer.write(events[-1])
    assert writer.late == 1
    assert len(reader.load_events(path)) == len(events) - 1
