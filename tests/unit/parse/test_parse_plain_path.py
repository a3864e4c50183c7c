"""The text parser's plain path (`Iperf3TextParser._plain`, the common TCP interval line read
with `str.split`) reads what the regex reads, the same way: every recorded log, and lines
built to break it, give the same result with the plain path as without it."""

from __future__ import annotations

from pathlib import Path

import pytest

from abtui.parse.iperf3.text import Iperf3TextParser

FIXTURES = Path(__file__).resolve().parents[2] / "fixtures"
LOGS = sorted(p for p in FIXTURES.rglob("*.txt"))


class RegexOnly(Iperf3TextParser):
    def _plain(self, line: str) -> None:  # type: ignore[override]
        return None


class Counting(Iperf3TextParser):
    taken = 0

    def _plain(self, line: str):  # type: ignore[no-untyped-def]
        got = super()._plain(line)
        self.taken += got is not None
        return got


def _both(text: str) -> tuple[object, object, int]:
    plain, regex = Counting(), RegexOnly()
    for line in text.splitlines():
        assert plain.feed(line) == regex.feed(line), line
    return plain.finish(), regex.finish(), plain.taken


@pytest.mark.parametrize("log", LOGS, ids=lambda p: str(p.relative_to(FIXTURES)))
def test_every_recorded_log_reads_the_same_with_the_plain_path(log: Path) -> None:
    plain, regex, _ = _both(log.read_text())
    assert plain == regex


def test_the_plain_path_takes_the_common_lines() -> None:
    """Not vacuous: most TCP logs' interval lines go the plain way."""
    taken = sum(_both(log.read_text())[2] for log in LOGS)
    assert taken > 50


HEAD = ("Connecting to host 198.18.1.2, port 5201\n"
        "[  5] local 198.18.1.1 port 40001 connected to 198.18.1.2 port 5201\n"
        "[ ID] Interval           Transfer     Bitrate         Retr  Cwnd\n")


@pytest.mark.parametrize("line", [
    "[  5]   0.00-1.00   sec  2.03 GBytes  17.5 Gbits/sec    0    895 KBytes",
    "[  5]   0.00-1.00   sec  2.03 GBytes  -17.5 Gbits/sec    0    895 KBytes",
    "[  5]   0.00-1.00   sec  2.03 GBytes  1e5 Gbits/sec    0    895 KBytes",
    "[  5]   0.00-1.00   sec  2.03 GBytes  inf Gbits/sec    0    895 KBytes",
    "[  5]   0.00-1.00   sec  2.03 GBytes  1..5 Gbits/sec    0    895 KBytes",
    "[  5]   0.00-1.00   sec  2.03 GBytes  17.5 Gbits/sec    0.5    895 KBytes",
    "[  5]   0.00-1.00   sec  2.03 GBytes  17.5 Gbits/sec    0    895 Kbytes",
    "[  5]   0.00-1.00   sec  2.03 QBytes  17.5 Gbits/sec    0    895 KBytes",
    "[  5]   0.00-1.00   sec  2.03 GBytes  17.5 GBytes/sec    0    895 KBytes",
    "[  5]   0.00-1.00   sec  2.03 GBytes  17.5 Gbits/sec    0    895 KBytes  (omitted)",
    "[  5]   0.00-1.00   sec  2.03 GBytes  17.5 Gbits/sec    0             sender",
    "[  5]   0.00-  1.00 sec  2.03 GBytes  17.5 Gbits/sec    0    895 KBytes",
    "[  5]   0.00:1.00   sec  2.03 GBytes  17.5 Gbits/sec    0    895 KBytes",
    "[  x]   0.00-1.00   sec  2.03 GBytes  17.5 Gbits/sec    0    895 KBytes",
    "[  5.]  0.00-1.00   sec  2.03 GBytes  17.5 Gbits/sec    0    895 KBytes",
    "[SUM]   0.00-1.00   sec  2.03 GBytes  17.5 Gbits/sec    0",
    "[SUM]   0.00-1.00   sec  2.03 GBytes  17.5 Gbits/sec",
    "[  5]   0.00-1.00   sec  2.03 GBytes  17.5 Gbits/sec",
    "[  5]   0.00-1.00   sec  2.03 GBytes  17.5 Gbits/sec    7",
    "[  5]   0.00-1.00   msec  2.03 GBytes  17.5 Gbits/sec    0    895 KBytes",
    "[  5]   0.00-1.00   sec  ٢.03 GBytes  17.5 Gbits/sec    0    895 KBytes",
])
def test_a_line_built_to_break_it_reads_as_the_regex_reads_it(line: str) -> None:
    plain, regex, _ = _both(HEAD + line + "\n" + line.replace("0.00-1.00", "1.00-2.00") + "\n")
    assert plain == regex
