"""Console benchmarks: the real `abtui tui --replay` in a real terminal (tmux), no network.

The app writes what it measured to $ABTUI_BENCH_FILE: when its first frame was shown, and on
exit how many intervals it received and showed and each one's latency (arrival in the
controller callback -> the screen refresh that shows it completed). CPU is the process's own
utime+stime from /proc over a window after warm-up. ABTUI_BENCH_SECONDS shortens the window.
"""

from __future__ import annotations

import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
TMUX = shutil.which("tmux")
WINDOW = float(os.environ.get("ABTUI_BENCH_SECONDS", "20"))
TICK = os.sysconf("SC_CLK_TCK")


def _cpu_seconds(pid: int) -> float:
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / TICK  # utime, stime


def _records(path: Path) -> list[dict]:
    if not path.exists():
        return []
    return [json.loads(line) for line in path.read_text().splitlines() if line.strip()]


def _wait(cond, timeout: float, what: str):  # type: ignore[no-untyped-def]
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        got = cond()
        if got:
            return got
        time.sleep(0.01)
    raise RuntimeError(f"timed out waiting for {what}")


def run_console(pairs: int, interval: float, window: float) -> dict:
    """Start the console on a live synthetic replay in tmux, measure, quit; the numbers."""
    if TMUX is None:
        raise RuntimeError("tmux is needed for the UI benchmarks (apt-get install tmux)")
    tmp = Path(tempfile.mkdtemp(prefix="abtui-bench-"))
    bench = tmp / "bench.jsonl"
    socket = f"abtui-bench-{os.getpid()}"
    cmd = (f"cd {ROOT} && ABTUI_BENCH_FILE={bench} exec {sys.executable} -m abtui tui "
           f"--replay --pairs {pairs} --interval {interval}")
    t0 = time.time()
    try:
        subprocess.run([TMUX, "-L", socket, "new-session", "-d", "-s", "b", "-x", "160", "-y",
                        "48", cmd], check=True)
        pid = int(subprocess.run([TMUX, "-L", socket, "display", "-p", "-t", "b",
                                  "#{pane_pid}"], capture_output=True, text=True,
                                 check=True).stdout)
        first = _wait(lambda: next((r for r in _records(bench) if "first_frame" in r), None),
                      20, "the first frame")
        time.sleep(3)  # warm-up: imports done, panes filled
        c0, w0, since = _cpu_seconds(pid), time.monotonic(), time.time()
        time.sleep(window)
        c1, w1 = _cpu_seconds(pid), time.monotonic()
        subprocess.run([TMUX, "-L", socket, "send-keys", "-t", "b", "C-q"], check=True)
        last = _wait(lambda: next((r for r in _records(bench) if "shown" in r), None), 20,
                     "the console to quit")
    finally:
        subprocess.run([TMUX, "-L", socket, "kill-server"], capture_output=True)
        shutil.rmtree(tmp, ignore_errors=True)
    span = last["exit_at"] - last["first_interval_at"]
    return {"cpu_pct": 100 * (c1 - c0) / (w1 - w0), "first_frame_s": first["first_frame"] - t0,
            "received": last["received"], "shown": last["shown"],
            "expected": pairs * (span / interval + 1),
            "latencies": [lat for at, lat in last["latencies"] if at >= since]}


def _p99(values: list[float]) -> float:
    return statistics.quantiles(values, n=100)[98] if len(values) >= 2 else float("nan")


def _latency(name: str, lat_s: list[float], what: str) -> dict:
    lat = [x * 1000 for x in lat_s]
    return {"name": name, "value": round(_p99(lat), 2), "unit": "ms", "budget": "<= 50",
            "note": f"arrival -> refresh shown, {what}, {len(lat)} intervals, median "
            f"{statistics.median(lat):.1f} ms, load {os.getloadavg()[0]:.1f}"}


def ui_cpu_2pairs() -> list[dict]:
    r = run_console(2, 1.0, WINDOW)
    return [
        {"name": "ui_cpu_2pairs_pct", "value": round(r["cpu_pct"], 2), "unit": "%",
         "budget": "<= 2", "note": f"2 pairs at 1 s replayed, {WINDOW:.0f} s window, tmux "
         f"160x48; shown {r['shown']} of {r['received']} received"},
        _latency("ui_latency_p99_ms", r["latencies"], "2 pairs at 1 s"),
        {"name": "first_frame_s", "value": round(r["first_frame_s"], 3), "unit": "s",
         "budget": "<= 1", "note": "tmux spawn + `python -m abtui tui --replay` to first frame"},
    ]


def ui_cpu_8pairs() -> list[dict]:
    r = run_console(8, 0.1, WINDOW)
    backlog = r["received"] - r["shown"]
    return [
        {"name": "ui_cpu_8pairs_pct", "value": round(r["cpu_pct"], 2), "unit": "%",
         "budget": "<= 25", "note": f"8 pairs at 0.1 s; shown {r['shown']}, received "
         f"{r['received']}, due by the clock {r['expected']:.0f} (backlog {backlog})"},
        _latency("ui_latency_p99_8pairs_ms", r["latencies"], "stress: 8 pairs at 0.1 s"),
    ]


RECORDS = [ui_cpu_2pairs, ui_cpu_8pairs]
