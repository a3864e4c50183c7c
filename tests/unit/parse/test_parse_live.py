"""The machine's own iperf3 and ping on loopback, read live line by line as the engine will:
the parsed intervals equal the lines iperf3 printed, and each arrives while the test runs.

iperf3 3.12's `--forceflush` flushes after the stream lines but not after a [SUM] line, which
then waits in stdio's buffer for the next interval (the last one until exit). `stdbuf -oL`
(line-buffered stdout) makes every line arrive when printed; a pty would too.
"""

from __future__ import annotations

import shutil
import socket
import subprocess
import time

import pytest

from abtui.parse.iperf3.text import Iperf3TextParser
from abtui.parse.ping import PingParser

BITS = {"": 1.0, "K": 1e3, "M": 1e6, "G": 1e9, "T": 1e12}
BYTES = {"": 1, "K": 1024, "M": 1024**2, "G": 1024**3, "T": 1024**4}


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def _printed(line: str) -> tuple[float, float, int, float, str]:
    """A [SUM] line read by splitting it, independently of the parser's regex."""
    tok = line.split()
    start, end = tok[1].split("-")
    size, size_unit, rate, rate_unit = tok[3], tok[4], tok[5], tok[6]
    return (float(start), float(end), round(float(size) * BYTES[size_unit[:-5]]),
            float(rate) * BITS[rate_unit[:-8]], tok[-1])


@pytest.mark.skipif(shutil.which("iperf3") is None or shutil.which("stdbuf") is None,
                    reason="iperf3 or stdbuf (coreutils) is not installed")
def test_live_iperf3_parallel_intervals_equal_the_printed_lines() -> None:
    port = _free_port()
    server = subprocess.Popen(["iperf3", "-s", "-1", "-B", "127.0.0.1", "-p", str(port)],
                              stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    client = None
    try:
        time.sleep(0.3)
        client = subprocess.Popen(["stdbuf", "-oL", "iperf3", "-c", "127.0.0.1", "-p",
                                   str(port), "-t", "2", "-P", "2", "--forceflush",
                                   # paced: at the loopback's full speed the two seconds
                                   # cost a second of CPU, and the lines are the same
                                   "-b", "200M"],
                                  stdout=subprocess.PIPE,
                                  text=True, env={"LC_ALL": "C", "PATH": "/usr/bin:/bin"})
        parser = Iperf3TextParser()
        lines: list[str] = []
        arrivals: list[tuple[str, float]] = []  # (line, when it was parsed)
        assert client.stdout is not None
        for line in iter(client.stdout.readline, ""):
            lines.append(line)
            for _ in parser.feed(line):
                arrivals.append((line, time.monotonic()))
        eof = time.monotonic()
        assert client.wait(timeout=30) == 0
    finally:
        for proc in (client, server):
            if proc is not None and proc.poll() is None:
                proc.kill()
                proc.wait()
    result = parser.finish()
    sums = [ln for ln in lines if ln.startswith("[SUM]")]
    interval_lines = [ln for ln in sums if not ln.rstrip().endswith(("sender", "receiver"))]
    assert len(interval_lines) == 2  # -t 2, -i 1
    assert [a[0] for a in arrivals] == interval_lines
    # live: the first interval was parsed about a second (one -i) before the output ended
    assert eof - arrivals[0][1] > 0.5, "the first interval came back only at the end"
    got = [(i.start, i.end, i.bytes, i.bits_per_second) for i in result.intervals]
    assert got == [pytest.approx(_printed(ln)[:4]) for ln in interval_lines]
    ends = {(_printed(ln)[4]): _printed(ln) for ln in sums if ln.rstrip()[-1] == "r"}
    assert result.summary.sender_bits_per_second == pytest.approx(ends["sender"][3])
    assert result.summary.receiver_bits_per_second == pytest.approx(ends["receiver"][3])
    assert result.summary.sender_bytes == ends["sender"][2]
    assert result.error is None and result.streams == 2 and result.complete


@pytest.mark.skipif(shutil.which("ping") is None, reason="ping is not installed")
def test_live_ping_with_timestamps() -> None:
    out = subprocess.run(["ping", "-D", "-c", "3", "-i", "0.2", "127.0.0.1"],
                         capture_output=True, text=True, timeout=30,
                         env={"LC_ALL": "C", "PATH": "/usr/bin:/bin"})
    if out.returncode != 0 and "Operation not permitted" in out.stderr:
        pytest.skip(f"ping may not send here: {out.stderr.strip()}")
    p = PingParser()
    replies = [r for line in out.stdout.splitlines() for r in p.feed(line)]
    printed = [ln for ln in out.stdout.splitlines() if " bytes from " in ln]
    assert [r.seq for r in replies] == [1, 2, 3]
    assert [r.rtt_ms for r in replies] == [float(ln.split("time=")[1].split()[0])
                                           for ln in printed]
    assert all(r.timestamp and abs(r.timestamp - time.time()) < 60 for r in replies)
    res = p.finish()
    assert (res.summary.sent, res.summary.received) == (3, 3)
