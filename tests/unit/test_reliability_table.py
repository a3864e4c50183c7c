"""reliability.md tells the truth of the run that wrote it: each scenario's row is this run's
pass, fail or skip (with the reason); no earlier pass survives."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

from tests.reliability import ASK

ROOT = Path(__file__).resolve().parents[2]

CONFTEST = """
from pathlib import Path
import tests.reliability as r
from tests.reliability import (pytest_collection_finish, pytest_runtest_makereport,
                               pytest_sessionfinish, reliability)
r.TABLE = Path(__file__).parent / "reliability.md"
"""

SCENARIOS = """
import pytest

@pytest.mark.reliability("1", "passes", "one was checked")
def test_one(reliability):
    reliability.row(recovery_s=1.234, port=5202)

@pytest.mark.reliability("2", "fails", "two was checked")
def test_two(reliability):
    assert 1 == 2, "the link stayed down | really"

@pytest.mark.reliability("3", "skips", "three was checked")
def test_three(reliability):
    pytest.skip("needs root")

@pytest.mark.reliability("4", "forgets its figures", "four was checked")
def test_four(reliability):
    pass

@pytest.fixture
def broken():
    raise OSError("no lab")

@pytest.mark.reliability("6", "setup fails", "six was checked")
def test_six(broken, reliability):
    reliability.row(x=1)
"""

EARLIER = """# Reliability

| # | scenario | what was checked | outcome | figures | run |
|---|---|---|---|---|---|
| 1 | passes | one was checked | pass | recovery s 0.50 | 2026-01-01 00:00 UTC |
| 2 | fails | two was checked | pass | recovery s 0.50 | 2026-01-01 00:00 UTC |
| 3 | skips | three was checked | pass | x 1 | 2026-01-01 00:00 UTC |
| 5 | not in this file | five was checked | pass | x 1 | 2026-01-01 00:00 UTC |
"""


def _run(tmp: Path, *args: str, ask: str = "1") -> dict[str, str]:
    (tmp / "conftest.py").write_text(CONFTEST)
    (tmp / "test_scenarios.py").write_text(SCENARIOS)
    # without the installed plugins (hypothesis's, Textual's snapshots with jinja2, syrupy,
    # asyncio's): their imports were two thirds of each inner run's CPU time
    subprocess.run([sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider",
                    "-p", "no:hypothesispytest", *args],
                   cwd=tmp, capture_output=True, text=True, timeout=120,
                   env={**os.environ, "PYTHONPATH": str(ROOT), ASK: ask,
                        "PYTEST_DISABLE_PLUGIN_AUTOLOAD": "1"})
    rows = {}
    for line in (tmp / "reliability.md").read_text().splitlines():
        if line.startswith("| ") and not line.startswith("| #"):
            cells = [c.strip() for c in line.strip("|").split(" | ")]
            rows[cells[0]] = cells[3] + (f" [{cells[4]}]" if cells[4] else "")
    return rows


def test_each_row_is_this_runs_outcome(tmp_path: Path) -> None:
    (tmp_path / "reliability.md").write_text(EARLIER)
    rows = _run(tmp_path)
    assert rows == {
        "1": "pass [recovery s 1.23, port 5202]",
        "2": "**fail**: AssertionError: the link stayed down / really",
        "3": "**skipped**: needs root",
        "4": "**fail**: passed without recording its figures (reliability.row was not called)",
        "5": "**skipped**: not selected in this run",
        "6": "**fail**: OSError: no lab (in setup)",
    }
    text = (tmp_path / "reliability.md").read_text()
    command = "`pytest -q -p no:cacheprovider -p no:hypothesispytest`"
    assert "2026-01-01" not in text and f"\n{command}\n" in text, text


def test_a_run_that_stops_early_or_selects_one_says_so(tmp_path: Path) -> None:
    rows = _run(tmp_path, "-x")
    assert rows["1"].startswith("pass") and rows["2"].startswith("**fail**")
    assert rows["3"] == rows["4"] == "**skipped**: not run: the run stopped before it"
    rows = _run(tmp_path, "-k", "one")
    assert rows["1"].startswith("pass")
    assert {rows[n] for n in "2346"} == {"**skipped**: not selected in this run"}
    assert "-k one" in (tmp_path / "reliability.md").read_text()


def test_a_run_not_asked_for_the_table_leaves_it_alone(tmp_path: Path) -> None:
    (tmp_path / "reliability.md").write_text(EARLIER)
    _run(tmp_path, ask="")
    assert (tmp_path / "reliability.md").read_text() == EARLIER
