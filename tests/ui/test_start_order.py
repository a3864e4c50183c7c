"""The console draws its first frame before it starts measuring: starting connects to the
hosts, which imports asyncssh (a quarter of a second of CPU, more on a busy machine) and
would otherwise delay the first frame (docs/performance.md: `first_frame_s`)."""

from __future__ import annotations

import gc
import math
from pathlib import Path

import pytest

from abtui.core.controller import Mode
from abtui.measure.replay.controller import ReplayController
from abtui.measure.replay.synthetic import synthetic_events, synthetic_profile
from abtui.ui.app import AbtuiApp
from tests.ui.console_kit import until

pytestmark = pytest.mark.ui


class StartSpy(ReplayController):
    """Records, when the console starts it, whether the first frame had been shown."""

    def __init__(self, bench: Path) -> None:
        profile = synthetic_profile(2)
        super().__init__(profile, synthetic_events(profile, intervals=3, seed=7),
                         speed=math.inf)
        self.bench = bench
        self.starts: list[tuple[Mode, bool]] = []

    async def start(self, mode: Mode = "continuous") -> None:
        shown = self.bench.exists() and "first_frame" in self.bench.read_text()
        self.starts.append((mode, shown))
        await super().start(mode)


async def test_the_console_starts_measuring_after_its_first_frame(tmp_path: Path) -> None:
    bench = tmp_path / "bench.jsonl"
    ctl = StartSpy(bench)
    app = AbtuiApp(ctl, title="abtui — test", bench_file=str(bench))
    async with app.run_test(size=(160, 48)) as pilot:
        await until(pilot, lambda: bool(ctl.starts))
        assert ctl.starts == [("continuous", True)]
        await until(pilot, lambda: app.state.intervals_seen > 0)  # and it measures


async def test_without_autostart_it_never_starts(tmp_path: Path) -> None:
    bench = tmp_path / "bench.jsonl"
    ctl = StartSpy(bench)
    app = AbtuiApp(ctl, title="abtui — test", bench_file=str(bench), autostart=False)
    async with app.run_test(size=(80, 24)) as pilot:
        await until(pilot, lambda: "first_frame" in (bench.read_text() if bench.exists()
                                                      else ""))
        await app.settled()
        assert ctl.starts == []


async def test_the_collector_runs_again_from_the_first_frame(tmp_path: Path) -> None:
    """`abtui tui` builds the console with the garbage collector off (abtui.commands.tui):
    the console turns it back on once its first frame is shown, or a session's cycles would
    never be collected."""
    bench = tmp_path / "bench.jsonl"
    gc.disable()
    try:
        app = AbtuiApp(StartSpy(bench), title="abtui — test", bench_file=str(bench),
                       autostart=False)
        async with app.run_test(size=(80, 24)) as pilot:
            await until(pilot, lambda: "first_frame" in (bench.read_text() if bench.exists()
                                                          else ""))
            assert gc.isenabled()
    finally:
        gc.enable()
