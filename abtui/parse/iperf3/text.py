"""iperf3's human-readable output (3.1 .. 3.18+), parsed line by line as it arrives.

The aggregate of an interval is the stream line with one stream, the [SUM] line with several
(`-P N`), and one of each per direction with `--bidir` ([TX-C]/[RX-C], or [RX-S]/[TX-S] on the
server). The stream count comes from the "connected to" lines before the first header; a log
cut before them is read as single-stream until a [SUM] line or a second stream id says
otherwise. Bits are 1000-based, bytes 1024-based, as iperf3 prints them. The end-of-test lines
are kept here and made into summaries by text_summary.

Live use: iperf3 3.12's `--forceflush` does not flush after a [SUM] line, so over a pipe the
aggregate of a `-P N` interval arrives one interval late; run iperf3 under `stdbuf -oL` (or on a
pty) and every line arrives when printed.
"""

from __future__ import annotations

import re
import time
from typing import Any

from abtui.core.model import CpuUtil, Interval
from abtui.parse.iperf3.result import Iperf3Result, forget_unheard, local_sends, place_cpu
from abtui.parse.iperf3.text_summary import EndLine, Ends, place_summaries

_BITS = {"": 1.0, "K": 1e3, "M": 1e6, "G": 1e9, "T": 1e12}
_BYTES = {"": 1, "K": 1024, "M": 1024**2, "G": 1024**3, "T": 1024**4}

# unbounded digits are faster to match; absurd numbers fail in float()/round(), which feed()
# turns into a warning
_NUM = r"\d+(?:\.\d+)?"
# One data line: interval or end-of-test summary, any protocol, any side. Groups:
# 1 id, 2 TX/RX, 3 C/S, 4 start, 5 end, 6 transfer, 7 its unit, 8 rate, 9 its unit, 10 bits|Bytes,
# 11 jitter, 12 lost, 13 total, 14 lost %, 15 Retr or datagrams, 16 cwnd, 17 its unit, 18 label.
_LINE = re.compile(
    r"\[\s*(\d+|SUM)\](?:\[([TR]X)-([CS])\])?"
    rf"\s+({_NUM})-\s*({_NUM})\s+sec"
    rf"\s+({_NUM})\s+([KMGT]?)Bytes"
    rf"\s+({_NUM})\s+([KMGT]?)(bits|Bytes)/sec"
    r"(?:"
    rf"\s+({_NUM})\s+ms\s+(-?\d+)/(-?\d+)\s+\(([^)]{{0,24}})%\)"
    rf"|\s+(\d+)(?:\s+({_NUM})\s+([KMGT]?)Bytes)?"
    r")?"
    r"\s*(sender|receiver|\(omitted\))?\s*$"
)
# `--timestamps` with its default format "%c " under LC_ALL=C
_CTIME = re.compile(r"((?:Mon|Tue|Wed|Thu|Fri|Sat|Sun) (?:Jan|Feb|Mar|Apr|May|Jun|Jul|Aug|Sep|"
                    r"Oct|Nov|Dec) [ \d]\d \d\d:\d\d:\d\d \d{4}) ")
_VERSION = re.compile(r"iperf (3\.\d+\S*)")
# -V's end-of-test line; --bidir prints a second one with the roles swapped (same figures)
_CPU = re.compile(rf"CPU Utilization: local/(sender|receiver) ({_NUM})% \(({_NUM})%u/({_NUM})%s\), "
                  rf"remote/(?:sender|receiver) ({_NUM})% \(({_NUM})%u/({_NUM})%s\)")
_MAX_WARNINGS = 20
# the plain path's units (Iperf3TextParser._plain): bytes, and bits a second
_BYTES_OF = {f"{p}Bytes": n for p, n in _BYTES.items()}
_BITS_OF = {f"{p}bits/sec": n for p, n in _BITS.items()}


class Iperf3TextParser:
    """Feed iperf3 text output line by line; each complete aggregate interval comes back once."""

    def __init__(self, keep_intervals: bool = True) -> None:
        # a live reader (the engine) passes False: the intervals it is handed go to the session
        # file, and finish() then carries the summary without them (memory stays flat)
        self._keep = keep_intervals
        self._emitted = 0
        self._intervals: list[Interval] = []
        self._timestamps: list[float | None] = []
        self._ends: Ends = {}
        self._error: str | None = None
        self._warnings: list[str] = []
        self._known = 0
        self._lines = 0
        self._protocol = "tcp"
        self._role: str | None = None
        self._reverse: bool | None = None
        self._version: str | None = None
        self._done = False
        self._server_output = False
        self._ts_text = ""
        self._ts_value: float | None = None
        # -V's CPU line: (local sends, local, remote)
        self._cpu: tuple[bool, CpuUtil, CpuUtil] | None = None
        self._new_test()

    def _new_test(self) -> None:
        self._n_conn = 0
        self._bidir = False
        self._multi: bool | None = None  # several streams per direction: aggregate = [SUM]
        self._streams: int | None = None
        self._first_id: dict[str | None, str] = {}
        self._last: dict[tuple[str, str | None], tuple[str, str, bool]] = {}
        self._cols = ""
        self._seen_data = False
        self._in_summary = False

    # -- feeding -------------------------------------------------------------------------------

    def feed(self, line: str) -> list[Interval]:
        """Take one line (with or without its newline); return the intervals it completed."""
        self._lines += 1
        try:
            line = line.rstrip()
            if self._server_output:  # the server's log, echoed by --get-server-output
                return [] if "iperf Done." not in line else self._dispatch(line, None, True)
            if line[:1] == "[":  # the hot path: a data line with no prefix
                if self._multi and line[1:2] != "S" and line[2:3] != "I" and line[-1] != "r":
                    # one stream's interval when the aggregate is [SUM]: nothing to take
                    self._known += 1
                    return []
                if self._cols != "udp" and self._cols != "udp_sender" and not (
                        self._in_summary or self._bidir):
                    got = self._plain(line)
                    if got is not None:
                        return got
                m = _LINE.match(line)
                if m is not None:
                    return self._data(m, None)
            return self._dispatch(line, None, True)
        except Exception as exc:  # never raise on input: note the line and go on
            self._warn(f"line {self._lines}: {type(exc).__name__}: {line[:80]!r}")
            return []

    def feed_text(self, text: str) -> list[Interval]:
        out: list[Interval] = []
        for line in text.splitlines():
            out.extend(self.feed(line))
        return out

    def _dispatch(self, line: str, ts: float | None, top: bool) -> list[Interval]:
        if not line:
            return []
        c = line[0]
        if c != "[" and c != "-":
            m = _CTIME.match(line)
            if m is not None:
                ts = self._timestamp(m.group(1))
                line = line[m.end():]
                if not line:
                    return []
                c = line[0]
        if c == "[":
            m = _LINE.match(line)
            if m is not None:
                return self._data(m, ts)
            if line.startswith("[ ID]"):
                self._header(line)
            elif " connected to " in line:
                self._known += 1
                self._n_conn += 1
            elif " sec " in line and "/sec" in line:
                self._warn(f"line {self._lines}: not understood: {line[:80]!r}")
            return []
        if line.startswith("- - -"):
            self._known += 1
            return []
        return self._other(line, ts, top)

    def _other(self, line: str, ts: float | None, top: bool) -> list[Interval]:
        if line.startswith("iperf3: "):
            self._known += 1
            msg = line[8:].strip()
            if msg.startswith("error - "):
                msg = msg[8:]
            if self._error is None and msg:
                self._error = msg
        elif line.startswith("Connecting to host"):
            self._start_test("client")
        elif line.startswith(("Accepted connection from", "Server listening on")):
            self._start_test("server")
        elif line.startswith("Reverse mode"):
            self._known += 1
            self._reverse = True
        elif line.startswith("Server output:"):
            self._known += 1
            self._server_output = True
        elif line.startswith("CPU Utilization: "):
            m = _CPU.match(line)
            if m is not None and self._cpu is None:
                self._known += 1
                g = [float(x) for x in m.groups()[1:]]
                self._cpu = (m.group(1) == "sender", CpuUtil(*g[:3]), CpuUtil(*g[3:]))
        elif line.startswith("iperf Done."):
            self._known += 1
            self._done = True
        elif line.startswith("iperf 3"):
            m = _VERSION.match(line)
            if m:
                self._known += 1
                self._version = m.group(1)
        elif top and "[" in line:
            # another prefix: --timestamps=FORMAT (epoch seconds are read), or -T title
            i = line.find("[")
            if ts is None:
                ts = _number(line[:i].strip().rstrip(":"))
            return self._dispatch(line[i:], ts, False)
        return []

    def _start_test(self, role: str) -> None:
        self._known += 1
        if self._seen_data:
            self._warn(f"line {self._lines}: another test starts; intervals accumulate")
            self._new_test()
            self._ends.clear()
        self._role = role

    def _header(self, line: str) -> None:
        self._known += 1
        self._bidir = line.startswith("[ ID][Role]")
        if "Jitter" in line:
            self._cols = "udp"
        elif "Total Datagrams" in line:
            self._cols = "udp_sender"
        elif "Retr" in line:
            self._cols = "retr"
        else:
            self._cols = "plain"
        if self._cols.startswith("udp"):
            self._protocol = "udp"
        if self._seen_data:
            self._in_summary = True
        elif self._n_conn:
            per_direction = self._n_conn // 2 if self._bidir else self._n_conn
            self._streams = max(per_direction, 1)
            self._multi = per_direction > 1

    def _data(self, m: re.Match[str], ts: float | None) -> list[Interval]:
        self._known += 1
        g = m.groups()
        sid, role, side, start, end = g[:5]
        label = g[17]
        direction = None
        if role is not None:
            self._bidir = True
            # seen from the client: what the client sends is "tx", on either side's log
            direction = "tx" if (role == "TX") == (side == "C") else "rx"
        if label == "sender" or label == "receiver" or (self._in_summary and label is None):
            self._end_line(g, sid, direction, label)
            return []
        omitted = label is not None
        if not self._takes(sid, direction, (start, end, omitted)):
            return []
        return self._emit(self._interval(g, omitted, direction), ts)

    def _takes(self, sid: str, direction: str | None, key: tuple[str, str, bool]) -> bool:
        """Whether an interval line of stream `sid` is the aggregate's, seen for the first
        time (a dying test repeats its last interval); what it says of the stream count."""
        self._seen_data = True
        skey = (sid, direction)
        if self._last.get(skey) == key:
            return False
        self._last[skey] = key
        if sid == "SUM":
            if self._multi is not True:
                if self._multi is None:  # what we took for single-stream was not
                    self._intervals.clear()
                    self._timestamps.clear()
                self._multi = True
        elif self._multi is True:
            return False
        elif self._multi is None and self._first_id.setdefault(direction, sid) != sid:
            self._multi = True
            self._intervals.clear()
            self._timestamps.clear()
            return False
        return True

    def _emit(self, iv: Interval, ts: float | None) -> list[Interval]:
        self._emitted += 1
        if self._keep:
            self._intervals.append(iv)
            self._timestamps.append(ts)
        return [iv]

    def _plain(self, line: str) -> list[Interval] | None:
        """The common line read without the regex: a TCP interval of one stream or [SUM], no
        label, no prefix, figures in bits: what every second of a live run is, read in about
        half the regex's time (docs/performance.md: the parse rate against a `str.split`
        loop). None when the line is anything else, and _LINE then reads it: both read the
        same lines the same (tests/unit/parse/test_parse_plain_path.py), except that this one also
        takes a figure with its point first or last ("1.", ".5"), which iperf3 never prints."""
        f = line.split()
        i = 2 if f[0] == "[" else 1 if f[0] == "[SUM]" else 0
        n = len(f) - i
        if not i or (n != 9 and n != 6 and n != 7) or f[i + 1] != "sec":
            return None
        sid = "SUM" if i == 1 else f[1][:-1]
        start, _, end = f[i].partition("-")
        transfer, unit, rate, rate_unit = f[i + 2:i + 6]
        scale, rate_scale = _BYTES_OF.get(unit), _BITS_OF.get(rate_unit)
        tail = f[i + 6:i + 8]  # Retr, Cwnd
        if (scale is None or rate_scale is None or f[1][-1] != "]"
                or (i == 2 and not sid.isdecimal()) or (n == 9 and f[i + 8] not in _BYTES_OF)
                # _NUM's figures: digits and points (float() takes signs, exponents, "inf")
                or not "".join((start, end, transfer, rate, *tail)).replace(".", "").isdecimal()):
            return None
        try:  # a figure with two points
            iv = Interval(float(start), float(end), round(float(transfer) * scale),
                          float(round(float(rate) * rate_scale)),
                          int(tail[0]) if tail else None,
                          round(float(tail[1]) * _BYTES_OF[f[i + 8]]) if n == 9 else None)
        except ValueError:
            return None
        self._known += 1
        if not self._takes(sid, None, (start, end, False)):
            return []
        return self._emit(iv, None)

    def _interval(self, g: tuple[Any, ...], omitted: bool, direction: str | None) -> Interval:
        rate = _rate(g[7], g[8], g[9])
        retr = cwnd = lost = packets = None
        jitter = None
        if g[10] is not None:
            jitter = float(g[10])
            lost = int(g[11])
            packets = int(g[12])
        elif g[14] is not None:
            n = int(g[14])
            if self._cols.startswith("udp"):  # datagrams sent (with --bidir, under "Jitter")
                packets = n
            else:
                retr = n
            if g[15] is not None:
                cwnd = round(float(g[15]) * _BYTES[g[16]])
        return Interval(float(g[3]), float(g[4]), round(float(g[5]) * _BYTES[g[6]]), rate,
                        retr, cwnd, omitted, jitter, lost, packets, direction)

    def _end_line(self, g: tuple[Any, ...], sid: str, direction: str | None,
                  label: str | None) -> None:
        rate = _rate(g[7], g[8], g[9])
        end = EndLine(float(g[3]), float(g[4]), round(float(g[5]) * _BYTES[g[6]]), rate,
                   None, None, None, None, None)
        if g[10] is not None:
            end.jitter_ms = float(g[10])
            end.lost, end.total = int(g[11]), int(g[12])
            end.lost_pct = _float(g[13])
        elif g[14] is not None and self._cols == "retr":
            end.count = int(g[14])
        # iperf3 3.1 printed the UDP receiver report with no label
        self._ends[(sid, direction, label or "receiver")] = end

    # -- results -------------------------------------------------------------------------------

    def finish(self) -> Iperf3Result:
        """Everything read so far as one result (callable more than once)."""
        res = Iperf3Result(intervals=list(self._intervals), timestamps=list(self._timestamps),
                           error=self._error, streams=self._streams, bidir=self._bidir,
                           reverse=self._reverse, role=self._role, version=self._version,
                           format="text")
        place_summaries(res, self._ends, self._multi, self._protocol)
        res.complete = self._done or bool(self._ends)
        if self._cpu is not None:
            sends = self._cpu[0] if res.role is None or not res.bidir else local_sends(res)
            place_cpu(res, self._cpu[1], self._cpu[2], sends)
        forget_unheard(res)
        res.warnings = list(self._warnings)
        if not self._known:
            res.parse_error = (f"no iperf3 output found in {self._lines} lines"
                               if self._lines else "empty input")
        elif self._warnings and not self._emitted and not res.complete and not res.error:
            res.parse_error = self._warnings[0]
        return res


    # -- helpers -------------------------------------------------------------------------------

    def _timestamp(self, text: str) -> float | None:
        if text != self._ts_text:
            self._ts_text = text
            try:
                self._ts_value = time.mktime(time.strptime(text, "%a %b %d %H:%M:%S %Y"))
            except (ValueError, OverflowError):
                self._ts_value = None
        return self._ts_value

    def _warn(self, message: str) -> None:
        if len(self._warnings) < _MAX_WARNINGS:
            self._warnings.append(message)

    @property
    def warnings(self) -> list[str]:
        return list(self._warnings)

    @property
    def error(self) -> str | None:
        """iperf3's error message as soon as its line has been fed."""
        return self._error

    @property
    def last_timestamp(self) -> float | None:
        """The --timestamps value of the last interval returned (None without prefixes)."""
        return self._timestamps[-1] if self._timestamps else None


def _rate(value: str, unit: str, kind: str) -> float:
    """Bits per second, whole (iperf3 prints 3 significant digits; no float noise added)."""
    return float(round(float(value) * (_BITS[unit] if kind == "bits" else _BYTES[unit] * 8)))


def _number(text: str) -> float | None:
    """An epoch-seconds prefix (`--timestamps='%s '`), or None."""
    if not text or len(text) > 20 or not text.replace(".", "", 1).isdigit():
        return None
    return float(text)


def _float(text: str) -> float | None:
    try:
        return float(text)
    except ValueError:
        return None


def parse_iperf3_text(text: str) -> Iperf3Result:
    """Parse a whole saved log."""
    p = Iperf3TextParser()
    p.feed_text(text)
    return p.finish()
