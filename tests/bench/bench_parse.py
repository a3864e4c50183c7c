"""`parse_lines_per_s`: iperf3 text lines parsed per second, single stream: every line an
interval, the parser's worst case (100 000 lines); its reference, alternated with it: a plain
`str.split` loop over the same lines taking each interval's start, end, transfer and rate
(`split_lines_per_s`: what the least a reader of the same text does costs on this machine now).

Beside it, in the note, the `-P 2` case: iperf3 3.12's exact layout (two stream lines, the
[SUM] line and a separator per interval, then the summary), 250 000+ lines, of which only the
[SUM] lines are intervals. Each log is fed line by line as the engine does, median of 5, the two
alternated; the intervals found are checked so a parser that skips work fails.
"""

from __future__ import annotations

import statistics
import time

from abtui.core.model import Interval
from abtui.parse.iperf3.text import Iperf3TextParser
from tests.bench.judge import measures

INTERVALS = 62_500  # -P 2: 4 lines each
SINGLE = 100_000  # single stream: 1 line each
REPEATS = 5
CHUNK = 5_000


def generate_log(intervals: int = INTERVALS) -> list[str]:
    lines = ["Connecting to host 198.18.1.2, port 5201",
             "[  5] local 198.18.1.1 port 40001 connected to 198.18.1.2 port 5201",
             "[  7] local 198.18.1.1 port 40002 connected to 198.18.1.2 port 5201",
             "[ ID] Interval           Transfer     Bitrate         Retr  Cwnd"]
    for k in range(intervals):
        t0, t1 = f"{k:6.2f}", f"{k + 1:<6.2f}"
        a, b = 500 + k % 97, 480 + k % 89
        lines.append(f"[  5] {t0}-{t1} sec   {a} MBytes  {a * 8.389 / 1000:.2f} Gbits/sec"
                     f"  {k % 7:3d}   1023 KBytes       ")
        lines.append(f"[  7] {t0}-{t1} sec   {b} MBytes  {b * 8.389 / 1000:.2f} Gbits/sec"
                     f"  {k % 5:3d}    895 KBytes       ")
        lines.append(f"[SUM] {t0}-{t1} sec  {(a + b) / 1024:.2f} GBytes"
                     f"  {(a + b) * 8.389 / 1000:.1f} Gbits/sec  {k % 7 + k % 5:3d}             ")
        lines.append("- - - - - - - - - - - - - - - - - - - - - - - - -")
    lines += ["[ ID] Interval           Transfer     Bitrate         Retr",
              f"[SUM]   0.00-{intervals:<6.2f} sec  1.00 TBytes  9.00 Gbits/sec  100"
              "             sender",
              "", "iperf Done."]
    return lines


def single_stream_log(intervals: int = SINGLE) -> list[str]:
    """The worst case: every line is an interval (one stream, no [SUM])."""
    lines = ["[  5] local 198.18.1.1 port 40001 connected to 198.18.1.2 port 5201",
             "[ ID] Interval           Transfer     Bitrate         Retr  Cwnd"]
    lines += [f"[  5] {k:6.2f}-{k + 1:<6.2f} sec  2.03 GBytes  17.5 Gbits/sec  {k % 9:3d}"
              f"    895 KBytes       " for k in range(intervals)]
    return lines


def _once(lines: list[str], want: int) -> float:
    return _parsed(lines, want)[0]


def _parsed(lines: list[str], want: int) -> tuple[float, list[Interval]]:
    parser = Iperf3TextParser()
    feed = parser.feed
    t0 = time.perf_counter()
    for line in lines:
        feed(line)
    elapsed = time.perf_counter() - t0
    result = parser.finish()
    if len(result.intervals) != want:
        raise AssertionError(f"parsed {len(result.intervals)} intervals, want {want}")
    return len(lines) / elapsed, result.intervals


_BYTES = {f"{p}Bytes": n for p, n in {"": 1, "K": 1024, "M": 1024**2, "G": 1024**3}.items()}
_BITS = {f"{p}bits/sec": n for p, n in {"": 1.0, "K": 1e3, "M": 1e6, "G": 1e9}.items()}


def split_intervals(lines: list[str]) -> list[Interval]:
    """The reference: the least a reader of the same lines does to hand back the same
    intervals: each line split on white space, an interval line's figures scaled by their
    units, nothing checked."""
    got = []
    append = got.append
    for line in lines:
        f = line.split()
        if len(f) == 11 and f[3] == "sec":
            start, _, end = f[2].partition("-")
            append(Interval(float(start), float(end), round(float(f[4]) * _BYTES[f[5]]),
                            float(round(float(f[6]) * _BITS[f[7]])), int(f[8]),
                            round(float(f[9]) * _BYTES[f[10]])))
    return got


def _interleaved(lines: list[str], want: int) -> tuple[list[float], list[float]]:
    """Lines a second of the parser and of the reference, chunk by chunk (CHUNK lines), the
    two alternated chunk by chunk: what the other jobs on the machine take, they take from
    both alike. One parser is fed every chunk, as the engine feeds one a run."""
    parser = Iperf3TextParser()
    feed = parser.feed
    ours, ref, split = [], [], []
    for k in range(0, len(lines), CHUNK):
        chunk = lines[k:k + CHUNK]
        for arm in (0, 1) if (k // CHUNK) % 2 == 0 else (1, 0):
            t0 = time.perf_counter()
            if arm == 0:
                for line in chunk:
                    feed(line)
            else:
                split += split_intervals(chunk)
            (ours if arm == 0 else ref).append(len(chunk) / (time.perf_counter() - t0))
    parsed = parser.finish().intervals
    if len(parsed) != want or split != parsed:
        raise AssertionError(f"parsed {len(parsed)} intervals, want {want}; the split loop "
                             f"read {len(split)}" + ("" if len(split) != len(parsed) else
                                                     ", not the same"))
    return ours, ref


@measures("parse_lines_per_s")
def parse_lines_per_s() -> dict:
    mixed, single = generate_log(INTERVALS), single_stream_log(SINGLE)
    runs, multi, split = [], [], []
    for _ in range(REPEATS):
        ours, ref = _interleaved(single, SINGLE)
        runs += ours
        split += ref
        multi.append(_once(mixed, INTERVALS))
    return {"name": "parse_lines_per_s", "value": round(statistics.median(runs)),
            "unit": "lines/s", "reference": round(statistics.median(split)),
            "reference_note": "a plain str.split loop over the same lines making the same "
                              f"intervals, nothing checked, alternated with the parser every "
                              f"{CHUNK} lines, median of {len(split)} chunks",
            "note": f"single stream (every line an interval), {len(single)} lines fed one by "
                    f"one, {REPEATS} times, median of {len(runs)} chunks (min {min(runs):.0f}, "
                    f"max {max(runs):.0f}); iperf3 -P 2 text ({len(mixed)} lines, 1 in 4 an "
                    f"interval): {statistics.median(multi):.0f} lines/s"}


RECORDS = [parse_lines_per_s]
