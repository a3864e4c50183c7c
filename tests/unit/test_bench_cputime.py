"""The benches' CPU clock: nanoseconds from live threads, the ticks where a thread ended."""

from __future__ import annotations

import os
import subprocess
import sys
import threading
import time

from tests.bench.cputime import CpuReading, cpu_used, read_cpu


def _spin(seconds: float) -> None:
    end = time.process_time() + seconds
    while time.process_time() < end:
        pass


def test_a_busy_process_is_read_finer_than_a_tick() -> None:
    child = subprocess.Popen([sys.executable, "-c", "import sys; sys.stdin.read()\n"
                              "import time\nend = time.process_time() + 0.055\n"
                              "while time.process_time() < end: pass\nsys.stdin.read()"],
                             stdin=subprocess.PIPE, text=True)
    try:
        before = read_cpu([child.pid])
        assert child.stdin is not None
        child.stdin.close()  # the first read ends: it spins 55 ms, then waits again (EOF)
        time.sleep(0.5)
        after = read_cpu([child.pid])
    finally:
        child.kill()
        child.wait()
    used = cpu_used(before, after)
    assert 0.050 <= used <= 0.150
    assert used == after.precise - before.precise  # its threads' nanoseconds, not ticks


def test_a_thread_that_ended_is_counted_by_the_ticks() -> None:
    before = read_cpu([os.getpid()])
    thread = threading.Thread(target=_spin, args=(0.1,))
    thread.start()
    thread.join()
    after = read_cpu([os.getpid()])
    assert cpu_used(before, after) >= 0.08  # its schedstat left with it; its ticks stayed


def test_a_process_gone_counts_nothing_and_the_finer_figure_wins_within_two_ticks() -> None:
    assert read_cpu([2 ** 22 + 12345]) == CpuReading(0.0, 0.0)
    assert cpu_used(CpuReading(1.0, 1.0), CpuReading(1.0123, 1.02)) == 1.0123 - 1.0
