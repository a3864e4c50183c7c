"""The reliability table: what this run found for each fault scenario, and nothing older.

A scenario test is marked `@pytest.mark.reliability(NUMBER, SCENARIO, CHECKED)` and takes the
`reliability` fixture; once its assertions passed it calls `reliability.row(**figures)`. A run
asked to (ABTUI_RELIABILITY_TABLE=1: `make reliability`, `make soak`) that selected at least one
scenario test rewrites docs/reliability.md,
one row per scenario with this run's outcome: pass (with its figures), fail (with the error), or
skipped (with the reason: skipped by the test, not run because the run stopped first, or not
selected in this run). No earlier outcome survives a run that did not pass the scenario.
"""

from __future__ import annotations

import os
import re
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest

TABLE = Path(__file__).resolve().parents[1] / "docs" / "reliability.md"
HEADER = ("| # | scenario | what was checked | outcome | figures |\n"
          "|---|---|---|---|---|\n")
_ROW = re.compile(r"^\| (\d+[a-z]?) \| (.*?) \| (.*?) \|")
_RANK = {"pass": 0, "skipped": 1, "fail": 2}  # several tests of one scenario: the worst wins


@dataclass(slots=True)
class Scenario:
    number: str
    scenario: str
    checked: str
    outcome: str = ""  # pass | fail | skipped; "" while it has not run
    detail: str = ""  # pass: the figures; fail: the error; skipped: the reason


class Reliability:
    """What one scenario test hands the table: its figures, once its assertions passed."""

    def __init__(self) -> None:
        self.figures: str | None = None

    def row(self, **figures: object) -> None:
        self.figures = ", ".join(f"{k.replace('_', ' ')} {_fmt(v)}" for k, v in figures.items())


def _fmt(value: object) -> str:
    return f"{value:.2f}" if isinstance(value, float) else str(value)


class Run:
    """The scenarios this run selected, and what became of each."""

    def __init__(self) -> None:
        self.scenarios: dict[str, Scenario] = {}
        self.rows: dict[str, Reliability] = {}  # by test node id

    def select(self, items: list[pytest.Item]) -> None:
        for item in items:
            mark = item.get_closest_marker("reliability")
            if mark is not None:
                number, scenario, checked = (str(a) for a in mark.args)
                self.scenarios.setdefault(number, Scenario(number, scenario, checked))

    def outcome(self, item: pytest.Item, outcome: str, detail: str) -> None:
        mark = item.get_closest_marker("reliability")
        if mark is None:
            return
        sc = self.scenarios.setdefault(str(mark.args[0]), Scenario(*(str(a) for a in mark.args)))
        if not sc.outcome or _RANK[outcome] > _RANK[sc.outcome]:
            sc.outcome, sc.detail = outcome, detail


_RUN = Run()


@pytest.fixture
def reliability(request: pytest.FixtureRequest) -> Reliability:
    if request.node.get_closest_marker("reliability") is None:
        raise pytest.UsageError(f"{request.node.nodeid}: a test taking `reliability` is marked "
                                "@pytest.mark.reliability(NUMBER, SCENARIO, CHECKED)")
    return _RUN.rows.setdefault(request.node.nodeid, Reliability())


def _first_line(text: str, limit: int = 200) -> str:
    line = next((ln.strip() for ln in text.strip().splitlines() if ln.strip()), "")
    return line if len(line) <= limit else line[:limit - 1] + "…"


def pytest_collection_finish(session: pytest.Session) -> None:
    _RUN.select(session.items)


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_makereport(item: pytest.Item, call: pytest.CallInfo[None]
                              ) -> Iterator[None]:
    outcome = yield
    report: pytest.TestReport = outcome.get_result()
    if item.get_closest_marker("reliability") is None:
        return
    if report.skipped:
        reason = report.longrepr[2] if isinstance(report.longrepr, tuple) else str(
            report.longrepr)
        _RUN.outcome(item, "skipped", _first_line(reason.removeprefix("Skipped: ")))
    elif report.failed:
        exc = call.excinfo
        error = f"{exc.typename}: {_first_line(str(exc.value))}" if exc else _first_line(
            report.longreprtext)
        where = "" if report.when == "call" else f" (in {report.when})"
        _RUN.outcome(item, "fail", error.rstrip(": ") + where)
    elif report.when == "call":
        row = _RUN.rows.get(item.nodeid)
        if row is None or row.figures is None:
            _RUN.outcome(item, "fail", "passed without recording its figures "
                                       "(reliability.row was not called)")
        else:
            _RUN.outcome(item, "pass", row.figures)


def _earlier(path: Path) -> dict[str, Scenario]:
    """The scenarios an earlier table names (their outcomes are not kept)."""
    out: dict[str, Scenario] = {}
    if path.exists():
        for line in path.read_text().splitlines():
            m = _ROW.match(line)
            if m:
                out[m[1]] = Scenario(m[1], m[2], m[3])
    return out


def write_table(scenarios: dict[str, Scenario], command: str, path: Path = TABLE,
                stopped: bool = False) -> None:
    """reliability.md for this run: every scenario it selected with its outcome; scenarios an
    earlier table named that this run did not select, as skipped."""
    rows = _earlier(path)
    for sc in rows.values():
        sc.outcome, sc.detail = "skipped", "not selected in this run"
    for number, sc in scenarios.items():
        if not sc.outcome:
            sc.outcome = "skipped"
            sc.detail = "not run: the run stopped before it" if stopped else "not run"
        rows[number] = sc
    order = sorted(rows, key=lambda n: (int(re.match(r"\d+", n)[0]), n))  # type: ignore[index]
    lines = []
    for n in order:
        sc = rows[n]
        outcome, figures = sc.outcome, ""
        if sc.outcome == "pass":
            figures = sc.detail
        else:
            outcome = f"**{sc.outcome}**: {sc.detail}"
        cells = [sc.number, sc.scenario, sc.checked, outcome, figures]
        lines.append("| " + " | ".join(c.replace("|", "/").replace("\n", " ")
                                       for c in cells) + " |")
    when = time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime())
    path.write_text(
        "# Reliability\n\n"
        f"Written by the test run of {when}:\n`{command}`\n\n"
        "The fault scenarios are in tests/lab/test_faults.py and the tests that cover them\n"
        "elsewhere (`make reliability` runs them all, the soak for 40 s; `make soak` runs the\n"
        "soak for 600 s). Every row is that run's outcome: pass with the figures measured, fail\n"
        "with the error, or skipped with the reason (a scenario the run did not select says\n"
        "so).\n\n"
        + HEADER + "\n".join(lines) + "\n")


ASK = "ABTUI_RELIABILITY_TABLE"  # "1": this run writes the table


def pytest_sessionfinish(session: pytest.Session, exitstatus: int) -> None:
    if _RUN.scenarios and os.environ.get(ASK) == "1":
        args = " ".join(session.config.invocation_params.args)
        stopped = bool(session.shouldstop or session.shouldfail) or \
            exitstatus == pytest.ExitCode.INTERRUPTED
        write_table(_RUN.scenarios, f"pytest {args}".strip(), TABLE, stopped=stopped)
