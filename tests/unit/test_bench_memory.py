"""The memory benches' children report their own peak, not the bench process's."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
CHILD = "from tests.bench.memory import peak_rss_kb\nprint(peak_rss_kb())"


def test_a_child_of_a_grown_process_reports_its_own_peak() -> None:
    grown = bytearray(256 * 2**20)
    grown[::4096] = b"\1" * len(grown[::4096])  # touched: resident
    own = int(subprocess.run([sys.executable, "-c", CHILD], cwd=ROOT, check=True,
                             capture_output=True, text=True).stdout)
    # ru_maxrss, kept across fork and exec, reads 256 MiB and more here
    assert own < 128 * 1024, f"the child's own peak read {own} KiB"
    del grown
