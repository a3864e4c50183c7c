"""Session files whose lines are well-formed JSON of the wrong shape: a field of another type,
a field missing, in the header, the envelope (`t`, `pair`, `host`, `data`) or the payload.
Every reader entry point gives a result or one line with exit 1/2, never a traceback: the
reader (header, events, the listing's times, compaction's facts), the session, and `abtui
export` (every format), `compare` (every format) and `sessions`.

Each example is a real recorded session (tests/fixtures/sessions) with hypothesis's changes
made to it, so the changed records reach the reports as the whole session does; random bytes
are test_hostile_files.py's."""

from __future__ import annotations

import gzip
import json
import shutil
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from abtui.cli import main
from abtui.core.errors import AbtuiError
from abtui.core.events import PAYLOADS, EventKind
from abtui.sessions import reader, writer
from abtui.sessions.session import Session
from tests.reliability import Reliability
from tests.unit.sandbox import nothing_runs

FIXTURES = Path(__file__).resolve().parents[2] / "fixtures" / "sessions"
BASES = {p.name: [json.loads(line) for line in gzip.decompress(p.read_bytes()).splitlines()]
         for p in sorted(FIXTURES.glob("*.abtui.jsonl.gz"))}
FIELDS = {str(k): [*(name for name, _ in cls._SPEC)] for k, cls in PAYLOADS.items()}
HEADER_KEYS = ["format", "version", "name", "profile", "created", "start", "end", "events",
               "pairs"]
ENVELOPE_KEYS = ["kind", "t", "pair", "host", "data"]

SCALARS = st.one_of(st.none(), st.booleans(), st.integers(), st.integers(10**300, 10**310),
                    st.floats(), st.text(max_size=12), st.sampled_from(["A", "B", "", "ok"]))
VALUES = st.recursive(SCALARS, lambda inner: st.one_of(
    st.lists(inner, max_size=3), st.dictionaries(st.text(max_size=8), inner, max_size=3)),
    max_leaves=6)
# one change: (which record, 0 the header; where; which key; None: remove it, else the value)
CHANGE = st.tuples(st.integers(0, 10_000), st.sampled_from(["header", "envelope", "data"]),
                   st.integers(0, 50), st.one_of(st.none(), VALUES))


def _changed(base: list[dict[str, Any]], changes: list[tuple[int, str, int, Any]]
             ) -> list[dict[str, Any]]:
    records = json.loads(json.dumps(base))
    for index, where, key_ix, value in changes:
        if where == "header":
            rec, keys = records[0], HEADER_KEYS
        else:
            rec = records[1 + index % (len(records) - 1)]
            keys = ENVELOPE_KEYS
            if where == "data":
                keys = FIELDS.get(str(rec.get("kind")), []) or ["x"]
                if not isinstance(rec.get("data"), dict):
                    rec["data"] = {}
                rec = rec["data"]
        key = keys[key_ix % len(keys)]
        if value is None:
            rec.pop(key, None)
        else:
            rec[key] = value
    return records


def _write(path: Path, records: list[dict[str, Any]], zipped: bool) -> None:
    text = "".join(json.dumps(r) + "\n" for r in records)
    path.write_bytes(gzip.compress(text.encode()) if zipped else text.encode())


COMMANDS = [["export", "{a}", "--format", "md"], ["export", "{a}", "--format", "csv"],
            ["export", "{a}", "--format", "json"], ["export", "{a}", "--format", "plot"],
            ["compare", "{a}", "{b}"], ["compare", "{a}", "{b}", "--format", "json"],
            ["compare", "{a}", "{b}", "--format", "junit"],
            ["sessions", "--sessions-dir", "{dir}"],
            ["sessions", "--sessions-dir", "{dir}", "--json"]]
RAN = {"files": 0, "commands": 0}
SETTINGS = settings(max_examples=120, deadline=None,
                    suppress_health_check=[HealthCheck.too_slow,
                                           HealthCheck.function_scoped_fixture])


def _readers(path: Path, zipped: bool) -> None:
    """Every reader function: a value, or BadInput (one line)."""
    for read in (reader.read_header, reader.load_events, Session.load,
                 *(() if zipped else (reader.head_time, reader.tail_time))):
        try:
            read(path)
        except AbtuiError as exc:
            assert str(exc) and "\n" not in str(exc)


@pytest.mark.sim
@SETTINGS
@given(base=st.sampled_from(sorted(BASES)), zipped=st.booleans(),
       changes=st.lists(CHANGE, min_size=1, max_size=4))
def test_wrong_shapes_give_a_result_or_one_line(
        tmp_path_factory: pytest.TempPathFactory, capsys: pytest.CaptureFixture[str],
        base: str, zipped: bool, changes: list[tuple[int, str, int, Any]]) -> None:
    folder = tmp_path_factory.mktemp("shapes")
    try:
        a = folder / ("a.abtui.jsonl.gz" if zipped else "a.abtui.jsonl")
        _write(a, _changed(BASES[base], changes), zipped)
        b = folder / "b.abtui.jsonl.gz"
        _write(b, BASES[base], True)
        with nothing_runs():
            _readers(a, zipped)
            for command in COMMANDS:
                args = [c.format(a=a, b=b, dir=folder) for c in command]
                rc = main(args)
                out, err = capsys.readouterr()
                assert rc in (0, 1, 2), (args, rc)
                assert "Traceback" not in out + err
                assert all(line.startswith("abtui: ") for line in err.splitlines()), err
                RAN["commands"] += 1
            if not zipped:  # compaction reads a journal cut short: its facts, one pass
                try:
                    writer.compact(a, None, folder / "c.abtui.jsonl.gz")
                except AbtuiError as exc:
                    assert "\n" not in str(exc)
        RAN["files"] += 1
    finally:
        shutil.rmtree(folder)


H = {"format": "abtui-session", "version": 1, "name": "x", "profile": "p", "created": 1.0,
     "pairs": ["A"]}


@pytest.mark.parametrize("records", [
    [H],  # a run killed right after it started
    [H, {"kind": "mark", "t": 2.0, "pair": 5, "data": {"text": "hi"}}],
    [{**H, "name": 7}, {"kind": "mark", "t": 2.0, "data": {"text": "hi"}}],
], ids=["header-only", "pair-a-number", "name-a-number"])
def test_the_three_damaged_sessions_export_and_compare(
        tmp_path: Path, capsys: pytest.CaptureFixture[str], records: list[dict[str, Any]]
        ) -> None:
    """The three files that gave tracebacks: each exports and compares, or is refused in one
    line naming the file and line."""
    path = tmp_path / "s.abtui.jsonl"
    _write(path, records, False)
    refused = records[1:2] and records[1].get("pair") == 5
    for command in COMMANDS:
        rc = main([c.format(a=path, b=path, dir=tmp_path) for c in command])
        err = capsys.readouterr().err
        if refused and command[0] != "sessions":
            assert rc == 2 and err == f"abtui: {path}:2: malformed mark record (\"pair\" " \
                                      "must be a string)\n"
        else:
            assert rc == 0, err
    if not refused:
        assert Session.load(path).name in ("x", "s")


@pytest.mark.reliability(
    "20", "session files of the wrong shape: a header only, a `pair` that is a number, a "
    "header `name` that is a number, and hypothesis's changes of type or missing fields",
    "every reader entry point (reader, session, export md/csv/json/plot, compare md/json/"
    "junit, sessions) gives a result or one line with exit 1/2, never a traceback")
def test_every_entry_point_ran(reliability: Reliability) -> None:
    """The property above really ran its commands (not only its setup); runs after it
    (file order)."""
    if RAN["files"] == 0:
        pytest.skip("run with the property test above (selected alone here)")
    assert RAN["commands"] >= RAN["files"] * len(COMMANDS)
    assert set(FIELDS) == {str(k) for k in EventKind}  # a payload for every kind
    reliability.row(changed_files=RAN["files"], commands_run=RAN["commands"])
