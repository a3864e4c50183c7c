"""`abtui sessions` marks a saved copy as such (issue 49): the console's `s` saves a copy of
the live session, which listed like a separate session."""

from __future__ import annotations

import json
from pathlib import Path

from abtui.cli import main
from abtui.sessions import paths
from abtui.sessions.writer import SessionWriter, save_events
from tests import synth


def test_a_saved_copy_is_listed_as_a_copy_of_its_session(tmp_path: Path, capsys) -> None:
    evs = list(synth.continuous([{"rmem": "6M"}], {"A": [10e9], "B": [9e9]}, seconds=3))
    with SessionWriter(tmp_path / "lab-1.jsonl", profile="lab") as w:
        for ev in evs:
            w.write(ev)
    save_events(paths.saved_path(tmp_path / "copy"), evs, profile="lab", pairs=["A", "B"],
                copy_of="lab-1")
    assert main(["sessions", "--sessions-dir", str(tmp_path)]) == 0
    lines = capsys.readouterr().out.splitlines()
    copy = next(ln for ln in lines if ln.startswith("copy "))
    original = next(ln for ln in lines if ln.startswith("lab-1 "))
    assert copy.endswith("(saved copy of lab-1)")
    assert "copy of" not in original
    assert main(["sessions", "--sessions-dir", str(tmp_path), "--json"]) == 0
    doc = json.loads(capsys.readouterr().out)
    assert {e["name"]: e["copy_of"] for e in doc["sessions"]} == {"lab-1": None,
                                                                  "copy": "lab-1"}
