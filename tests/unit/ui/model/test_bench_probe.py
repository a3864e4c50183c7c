"""The console's bench probe (abtui.ui.model.bench) writes, on leaving, each full pass of the
garbage collector with when it began: the bench says how many fell in its window (one such pass was
the slowest interval of some live runs and not others)."""

from __future__ import annotations

import gc
import json
import time
from pathlib import Path

from abtui.ui.model.bench import BenchProbe


def _last(path: Path) -> dict:
    return json.loads(path.read_text().splitlines()[-1])


def test_the_collector_s_full_passes_are_written_with_when_they_began(tmp_path: Path) -> None:
    path = tmp_path / "bench.jsonl"
    probe = BenchProbe(str(path))
    gc.freeze()  # the test run's objects left out of the passes (each took 0.4 s of CPU)
    try:
        before = time.time()
        gc.collect(1)  # a younger pass is not one
        gc.collect(2)
        after = time.time()
        probe.leaving(received=0)
        gc.collect(2)  # the probe has left: nothing more is noted
    finally:
        gc.unfreeze()
    passes = _last(path)["full_passes"]
    assert len(passes) == 1
    ((began, seconds),) = passes
    assert before <= began <= after and 0 <= seconds <= after - before
    assert probe._collector not in gc.callbacks


def test_without_a_bench_file_nothing_is_hooked() -> None:
    hooks = list(gc.callbacks)
    BenchProbe(None)
    assert gc.callbacks == hooks
