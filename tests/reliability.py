"""The reliability table: fault scenarios record what they checked; the run writes the table.

A scenario test takes the `reliability` fixture and calls `row(...)` once its assertions
passed (so a row is an outcome, never a hope). At the end of a run that recorded rows,
reliability.md at the repository root is written; scenarios that did not run keep the row of
the last run that ran them, marked with that run's date.
"""

from __future__ import annotations

import re
import time
from dataclasses import dataclass
from pathlib import Path

import pytest

TABLE = Path(__file__).resolve().parents[1] / "reliability.md"
HEADER = ("| # | scenario | what was checked | outcome | figures | run |\n"
          "|---|---|---|---|---|---|\n")
ROW = re.compile(r"^\| (\d+[a-z]?) \|")


@dataclass(slots=True)
class Row:
    number: str
    scenario: str
    checked: str
    figures: str
    outcome: str = "pass"


class Reliability:
    """The rows of this run."""

    def __init__(self) -> None:
        self.rows: dict[str, Row] = {}

    def row(self, number: str, scenario: str, checked: str, **figures: object) -> None:
        shown = ", ".join(f"{k.replace('_', ' ')} {_fmt(v)}" for k, v in figures.items())
        self.rows[number] = Row(number, scenario, checked, shown)


def _fmt(value: object) -> str:
    return f"{value:.2f}" if isinstance(value, float) else str(value)


_TABLE = Reliability()


@pytest.fixture(scope="session")
def reliability() -> Reliability:
    return _TABLE


def write_table(rows: dict[str, Row], path: Path = TABLE) -> None:
    """Merge this run's rows into the table (rows of scenarios not run this time are kept)."""
    today = time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime())
    lines: dict[str, str] = {}
    if path.exists():
        for line in path.read_text().splitlines():
            m = ROW.match(line)
            if m:
                lines[m[1]] = line
    for r in rows.values():
        cells = [r.number, r.scenario, r.checked, r.outcome, r.figures, today]
        lines[r.number] = "| " + " | ".join(c.replace("|", "/") for c in cells) + " |"
    order = sorted(lines, key=lambda n: (int(re.match(r"\d+", n)[0]), n))  # type: ignore[index]
    path.write_text(
        "# Reliability\n\n"
        "Written by the test run (`make test`; the soak at full length with `make soak`), from\n"
        "the fault scenarios in tests/lab/test_faults.py and the tests that cover them\n"
        "elsewhere (issue 7, DESIGN.md section 6). A row is written only when its test passed.\n\n"
        + HEADER + "\n".join(lines[n] for n in order) + "\n")


def pytest_sessionfinish(session: pytest.Session, exitstatus: int) -> None:
    if _TABLE.rows:
        write_table(_TABLE.rows)
