"""`abtui run --headless --duration S` on the lab: with S shorter than the profile's runs,
iperf3 runs S seconds (`-t S`) and ends by itself, so the report's command line is what ran
and its figures are whole runs; with S longer, the runs keep the profile's length."""

from __future__ import annotations

from pathlib import Path

import pytest

from abtui.core.events import EventKind
from abtui.hosts.undo import UndoJournal
from abtui.lab.netns import Lab
from abtui.measure.headless import run_headless
from abtui.reports.report import markdown
from abtui.sessions.reader import iter_events
from abtui.sessions.session import Session
from tests.lab.engine_kit import lab_profile

pytestmark = [pytest.mark.lab, pytest.mark.usefixtures("no_strays")]


class _Quiet:
    def write(self, s: str) -> None:
        pass

    def flush(self) -> None:
        pass


async def _run(lab: Lab, tmp_path: Path, profile_s: float, duration: float) -> Path:
    out = tmp_path / f"d{duration:g}.jsonl"
    profile = lab_profile(lab, duration=profile_s, interval=1.0)
    rc = await run_headless(profile, out, duration=duration, progress=_Quiet(),
                            journal=UndoJournal(tmp_path / "undo"))
    assert rc == 0
    return out


async def test_a_duration_shorter_than_a_run_runs_that_long(lab: Lab, tmp_path: Path) -> None:
    out = await _run(lab, tmp_path, 10, 3)
    events = list(iter_events(out))
    starts = [e for e in events if e.kind is EventKind.RUN_START]
    assert len(starts) == 2  # one run a pair, none begun after the duration
    for start in starts:
        argv = start.payload.argv
        assert argv[argv.index("-t") + 1] == "3"
        end = next(e for e in events if e.kind is EventKind.RUN_END
                   and e.payload.run == start.payload.run)
        assert end.payload.status == "ok"  # ended by itself, not stopped
        intervals = [e for e in events if e.kind is EventKind.INTERVAL
                     and e.payload.run == start.payload.run]
        assert len(intervals) == 3
    report = markdown(Session.load(str(out)), chart=False)
    options = report.split("## Test options", 1)[1].split("\n## ", 1)[0]
    assert "-t 3 -i 1" in options and "-t 10" not in options


async def test_a_duration_longer_than_a_run_keeps_the_runs_length(lab: Lab,
                                                                  tmp_path: Path) -> None:
    out = await _run(lab, tmp_path, 2, 5)
    starts = [e for e in iter_events(out) if e.kind is EventKind.RUN_START]
    assert len(starts) >= 4
    assert all(s.payload.argv[s.payload.argv.index("-t") + 1] == "2" for s in starts)
