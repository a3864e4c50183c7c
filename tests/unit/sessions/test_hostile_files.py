"""Random bytes into the session loader and into `abtui import` (hypothesis): a result or
one clear line with exit code 1/2, never a traceback, and nothing runs while reading.

Parsers and the profile loader have their own property tests (test_parse_properties.py,
test_profile_fuzz.py); these cover the two file readers that were left."""

from __future__ import annotations

import gzip
import json
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from abtui.cli import main
from abtui.core.errors import AbtuiError
from abtui.sessions.reader import load_events
from tests.reliability import Reliability
from tests.unit.sandbox import nothing_runs

SETTINGS = settings(max_examples=150, deadline=None,
                    suppress_health_check=[HealthCheck.too_slow,
                                           HealthCheck.function_scoped_fixture])
HEADER = json.dumps({"abtui_session": 1, "profile": "p", "pairs": ["A"]})
SESSION_LIKE = st.one_of(
    st.binary(max_size=2000),
    st.builds(lambda lines: ("\n".join([HEADER, *lines]) + "\n").encode(),
              st.lists(st.text(max_size=200), max_size=10)),
    st.builds(lambda recs: "\n".join([HEADER, *map(json.dumps, recs)]).encode(),
              st.lists(st.dictionaries(st.sampled_from(["kind", "t", "pair", "data", "x"]),
                                       st.one_of(st.text(max_size=20), st.integers(),
                                                 st.none(), st.floats()), max_size=5),
                       max_size=8)),
)
RAN: dict[str, int] = {"session": 0, "import": 0}


@pytest.fixture(scope="module")
def files(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The examples' files: one folder, pytest's, for the module (it was a folder of its own
    in /tmp that nothing removed)."""
    return tmp_path_factory.mktemp("hostile")


@pytest.mark.sim
@SETTINGS
@given(data=SESSION_LIKE, zipped=st.booleans())
def test_random_session_files_load_or_fail_in_one_line(files: Path, data: bytes,
                                                        zipped: bool) -> None:
    path = files / ("s.abtui" if zipped else "s.jsonl")
    path.write_bytes(gzip.compress(data) if zipped else data)
    with nothing_runs():
        try:
            events = load_events(path)
        except AbtuiError as exc:
            assert "\n" not in str(exc) and str(exc)
        else:
            assert isinstance(events, list)
    RAN["session"] += 1


@pytest.mark.sim
@SETTINGS
@given(data=st.one_of(st.binary(max_size=3000), st.text(max_size=3000).map(str.encode)),
       as_json=st.booleans())
def test_abtui_import_on_random_files(files: Path, data: bytes, as_json: bool,
                                      capsys: pytest.CaptureFixture[str]) -> None:
    path = files / "random.log"
    path.write_bytes(data)
    with nothing_runs():
        rc = main(["import", str(path), *(["--json"] if as_json else [])])
    out, err = capsys.readouterr()
    assert rc in (0, 1, 2), rc
    assert "Traceback" not in out + err
    if rc == 2:
        assert len(err.strip().splitlines()) == 1 and str(path) in err
    if as_json and rc != 2:
        (result,) = json.loads(out)["results"]
        assert result["source"] == str(path)
    RAN["import"] += 1


@pytest.mark.reliability(
    "7", "hostile input: random bytes into the session loader and `abtui import`",
    "a result or one line with exit 1/2, never a traceback, no process started (parsers and "
    "profile loader: test_parse_properties.py, test_profile_fuzz.py, "
    "tests/lab/test_hostile_input.py)")
def test_the_table_row(reliability: Reliability) -> None:
    """Runs after the two properties above (file order): their example counts."""
    if not all(RAN.values()):
        pytest.skip("run with the property tests above (selected alone here)")
    reliability.row(
        session_files=RAN["session"], import_files=RAN["import"])
