"""Session store at scale: 24 h of 2 pairs at 1 s intervals (plus pings every 0.2 s, the
profile default), written then loaded into a Session in a fresh subprocess; and what the
fsync policy costs per event."""

from __future__ import annotations

import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from tests.bench.judge import measures

ROOT = Path(__file__).resolve().parents[2]
HOURS = float(os.environ.get("ABTUI_BENCH_SESSION_HOURS", "24"))

CHILD = """
import json, sys, time
from tests.bench.memory import peak_rss_kb
from tests import synth
from abtui.sessions.writer import SessionWriter
from abtui.sessions.session import Session
hours, path = float(sys.argv[1]), sys.argv[2]
phases = [{"tcp_wmem": "default" if h % 2 == 0 else "64k"} for h in range(max(1, round(hours)))]
secs = round(hours * 3600 / len(phases))
rates = {"A": [10e9 if h % 2 == 0 else 5e9 for h in range(len(phases))],
         "B": [11e9 if h % 2 == 0 else 5.5e9 for h in range(len(phases))]}
t = time.perf_counter()
with SessionWriter(path, profile="bench", pairs=["A", "B"]) as w:
    for ev in synth.continuous(phases, rates, seconds=secs, ping_interval=0.2):
        w.write(ev)
written = time.perf_counter() - t
t = time.perf_counter()
s = Session.load(w.final_path)
loaded = time.perf_counter() - t
print(json.dumps({"file": str(w.final_path), "events": w.events, "write_s": written,
                  "load_s": loaded, "intervals": sum(len(c) for c in s.intervals.values()),
                  "pings": sum(len(c) for c in s.pings.values()),
                  "maxrss_kb": peak_rss_kb()}))
"""


def _day() -> dict:  # type: ignore[type-arg]
    with tempfile.TemporaryDirectory() as tmp:
        out = subprocess.run([sys.executable, "-c", CHILD, str(HOURS),
                              str(Path(tmp) / "day.abtui.jsonl")], cwd=ROOT, check=True,
                             capture_output=True, text=True)
        res = json.loads(out.stdout)
        res["file_mb"] = Path(res["file"]).stat().st_size / 1e6
    return res


@measures("session_24h_rss_mb", "session_24h_file_mb")
def session_24h() -> list[dict]:  # type: ignore[type-arg]
    r = _day()
    note = (f"{HOURS:g} h, {r['intervals']} intervals + {r['pings']} pings = {r['events']} "
            f"events; write {r['write_s']:.1f} s, load {r['load_s']:.1f} s")
    return [{"name": "session_24h_rss_mb", "value": round(r["maxrss_kb"] / 1024, 1),
             "unit": "MB", "note": "peak RSS, write+load, " + note},
            {"name": "session_24h_file_mb", "value": round(r["file_mb"], 2), "unit": "MB",
             "note": "compacted .abtui.jsonl.gz"}]


@measures("session_write_us_per_event")
def session_fsync_cost() -> list[dict]:  # type: ignore[type-arg]
    """µs per interval event: the default policy (fsync ≤ 1/s) vs fsync on every record."""
    from abtui.core.events import Event, IntervalMeasured
    from abtui.sessions.writer import SessionWriter

    payload = IntervalMeasured(run=1, phase=0, start=0.0, end=1.0, bytes=1250000000,
                               bits_per_second=1e10, retransmits=0, cwnd_bytes=1000000,
                               omitted=False, straddles=False)
    n = 2000
    results: dict[float, list[float]] = {1.0: [], 0.0: []}
    with tempfile.TemporaryDirectory(dir=ROOT) as tmp:
        for rep in range(3):
            for interval in (1.0, 0.0):  # alternated, side by side
                w = SessionWriter(Path(tmp) / f"f{rep}-{interval}.abtui.jsonl",
                                  fsync_interval=interval, compact=False)
                t = time.perf_counter()
                for i in range(n):
                    w.write(Event.of(payload, float(i), pair="A"))
                results[interval].append((time.perf_counter() - t) / n * 1e6)
                w.close()
    policy, every = statistics.median(results[1.0]), statistics.median(results[0.0])
    return [{"name": "session_write_us_per_event", "value": round(policy, 1), "unit": "us",
             "note": f"fsync ≤ 1/s; fsync every record: {every:.0f} us "
                                     f"({every / policy:.0f}x), median of 3 × {n}"}]


RECORDS = [session_24h, session_fsync_cost]
