"""CSV for a spreadsheet (issue 49): a file starts with a BOM (`Δgeo` reads as UTF-8), the
interval CSV has a column per knob, and an interval the live rule could not bound yet is two
empty cells and the reason, never `-100.0,inf`."""

from __future__ import annotations

import csv
import io
import json
import math
from pathlib import Path

from abtui.cli import main
from abtui.core import events
from abtui.core.events import Event
from abtui.reports import alternation
from abtui.reports.exports import BOM, render
from abtui.reports.formatting import UNBOUNDED
from abtui.sessions.session import Session
from tests import synth

ROWS = [{"pair": "A", "knob": "rmem", "value": "16k", "base": "6M", "delta": "Δgeo",
         "pct": 40.2, "low": -100.0, "high": math.inf, "verdict": "~", "blocks": 2,
         "dead": 0, "seed": 5, "design": "blocks"},
        {"pair": "B", "knob": "rmem", "value": "16k", "base": "6M", "delta": "Δgeo",
         "pct": -1.4, "low": -3.0, "high": 0.3, "verdict": "no difference", "blocks": 10,
         "dead": 0, "seed": 5, "design": "blocks"}]


def _session(tmp_path: Path) -> Session:
    from abtui.sessions.writer import SessionWriter

    evs = list(synth.continuous([{"rmem": "6M", "tso": "on"}, {"rmem": "16k", "tso": "on"}],
                                {"A": [10e9, 1.3e9], "B": [10e9, 9.9e9]}, seconds=4))
    evs.insert(-1, Event.of(events.Mark(text="stopped", verdicts=ROWS), evs[-1].t))
    with SessionWriter(tmp_path / "alt.abtui.jsonl", profile="synth") as w:
        for ev in evs:
            w.write(ev)
    assert w.final_path is not None
    return Session.load(w.final_path)


def test_an_unbounded_interval_is_empty_cells_and_the_reason(tmp_path: Path) -> None:
    session = _session(tmp_path)
    text = alternation.to_csv(session)
    assert "inf" not in text and "-100.0" not in text
    rows = list(csv.DictReader(io.StringIO(text)))
    assert (rows[0]["low"], rows[0]["high"], rows[0]["interval_note"]) == ("", "", UNBOUNDED)
    assert (rows[1]["low"], rows[1]["high"], rows[1]["interval_note"]) == ("-3.0", "0.3", "")
    doc = json.loads(render(session, "json"))["alternation"]
    assert doc[0]["low"] is None and doc[0]["interval_note"] == UNBOUNDED


def test_a_csv_file_starts_with_a_bom_stdout_does_not(tmp_path: Path, capsys) -> None:
    session = _session(tmp_path)
    out = tmp_path / "v.csv"
    assert main(["export", str(session.path), "--format", "csv", "--table", "verdicts",
                 "--out", str(out)]) == 0
    data = out.read_bytes()
    assert data.startswith(BOM.encode("utf-8")) and "Δgeo".encode() in data
    assert main(["export", str(session.path), "--format", "csv"]) == 0
    assert not capsys.readouterr().out.startswith(BOM)


def test_the_interval_csv_has_a_column_per_knob(tmp_path: Path) -> None:
    rows = list(csv.DictReader(io.StringIO(render(_session(tmp_path), "csv"))))
    assert "rmem" in rows[0] and "tso" in rows[0]
    measured = [r for r in rows if r["phase"]]
    assert {r["rmem"] for r in measured} == {"6M", "16k"}
    assert {r["tso"] for r in measured} == {"on"}
    assert all(r["rmem"] == "" for r in rows if r["straddles"] == "True")
