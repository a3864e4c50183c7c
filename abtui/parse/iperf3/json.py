"""iperf3's JSON: `--json-stream` events (3.17+) line by line, and whole `-J` documents.

One parser takes both: a line that is a complete `{"event": ...}` object is a stream event;
anything else is buffered and read as one `-J` document at `finish()`. The end-of-test summary
comes from the iperf3 wrapper's `TestResult` where it can read the JSON (it insists on keys that
servers and failed tests leave out), completed and corrected from the JSON itself.
iperf3 3.11-3.13 put a failed test's message in `"error"` and still exit 0: that is `error` here.
"""

from __future__ import annotations

import json
import math
from typing import Any

from abtui.core.model import CpuUtil, Interval, IperfSummary
from abtui.parse.iperf3.result import Iperf3Result, forget_unheard, local_sends, place_cpu


class Iperf3JsonParser:
    """Feed `--json-stream` lines (or the lines of a `-J` document); intervals come back live."""

    def __init__(self, keep_intervals: bool = True) -> None:
        self._keep = keep_intervals  # False: a live reader; see Iperf3TextParser
        self._intervals: list[Interval] = []
        self._start: dict[str, Any] = {}
        self._end: dict[str, Any] = {}
        self._error: str | None = None
        self._buffer: list[str] = []
        self._events = 0
        self._noise = 0
        self._bad: str | None = None

    def feed(self, line: str) -> list[Interval]:
        try:
            return self._feed(line)
        except Exception as exc:  # never raise on input
            self._bad = self._bad or f"{type(exc).__name__}: {line[:80]!r}"
            return []

    def _feed(self, line: str) -> list[Interval]:
        s = line.strip()
        if not s:
            return []
        if self._buffer:  # inside a -J document
            self._buffer.append(s)
            return []
        if s[0] == "{" and s[-1] == "}" and '"event"' in s:
            try:
                obj = json.loads(s)
            except ValueError:
                obj = None
            if isinstance(obj, dict) and "event" in obj:
                return self._event(obj)
        if s[0] == "{" and not self._events:
            self._buffer.append(s)  # a -J document starts
        else:
            self._noise += 1  # a warning line, or a broken event: skip it, keep the stream
        return []

    def _event(self, obj: dict[str, Any]) -> list[Interval]:
        self._events += 1
        kind, data = obj.get("event"), obj.get("data")
        if kind == "interval" and isinstance(data, dict):
            ivs = intervals_of(data)
            if self._keep:
                self._intervals.extend(ivs)
            return ivs
        if kind == "start" and isinstance(data, dict):
            self._start = data
        elif kind == "end" and isinstance(data, dict):
            self._end = data
        elif kind == "error" and self._error is None:
            self._error = str(data)
        return []

    def finish(self) -> Iperf3Result:
        """Everything read so far as one result (callable more than once)."""
        if self._buffer:
            return self._document("\n".join(self._buffer))
        parse_error = None if self._events else (self._bad or "no iperf3 JSON found")
        return _result_of("json-stream", self._start, self._end, self._error,
                            self._intervals, None, parse_error)

    @property
    def error(self) -> str | None:
        """iperf3's error message as soon as one has been read (json-stream)."""
        return self._error

    def _document(self, text: str) -> Iperf3Result:
        doc = _load(text)
        if not (isinstance(doc, dict) and {"start", "intervals", "end", "error"} & doc.keys()):
            why = "not iperf3 JSON output" + ("" if doc is not None else " (invalid JSON)")
            return _result_of("json", {}, {}, None, [], None, why)
        ivs = doc.get("intervals")
        intervals = [iv for d in ivs if isinstance(d, dict)
                     for iv in intervals_of(d)] if isinstance(ivs, list) else []
        error = str(doc["error"]) if doc.get("error") is not None else None
        return _result_of("json", _dict(doc.get("start")), _dict(doc.get("end")), error,
                            intervals, text, None)


def _result_of(fmt: str, start: dict[str, Any], end: dict[str, Any], error: str | None,
            intervals: list[Interval], doc_text: str | None,
            parse_error: str | None) -> Iperf3Result:
    test = _dict(start.get("test_start"))
    res = Iperf3Result(intervals=list(intervals), error=error,
                       parse_error=parse_error, format=fmt,
                       timestamps=[None] * len(intervals))
    res.role = ("client" if "connecting_to" in start else
                "server" if "accepted_connection" in start else None)
    version = start.get("version")
    if isinstance(version, str):
        res.version = version.removeprefix("iperf ").strip() or None
    res.streams = _int(test.get("num_streams"))
    if "reverse" in test:
        res.reverse = bool(test.get("reverse"))
    res.bidir = bool(test.get("bidir")) or "sum_sent_bidir_reverse" in end or any(
        iv.direction for iv in intervals)
    res.summary, res.reverse_summary, wrapped = summaries(start, end, res.role,
                                                          doc_text)
    res.summary_source = "iperf3.TestResult" if wrapped else "json"
    if not res.bidir:
        res.reverse_summary = None
    res.complete = bool(end.get("sum_sent") or end.get("sum")
                        or end.get("sum_received"))
    cpu = _dict(end.get("cpu_utilization_percent"))
    if res.role is not None:
        place_cpu(res, _cpu(cpu, "host"), _cpu(cpu, "remote"), local_sends(res))
    forget_unheard(res)
    return res


def _cpu(cpu: dict[str, Any], side: str) -> CpuUtil | None:
    """One side of `cpu_utilization_percent` ("host" or "remote"), None unless all three
    figures are numbers."""
    got = [_num(cpu.get(f"{side}_{k}")) for k in ("total", "user", "system")]
    return CpuUtil(*got) if None not in got else None  # type: ignore[arg-type]


def intervals_of(data: dict[str, Any]) -> list[Interval]:
    """The aggregate interval(s) of one JSON interval: "sum", and "sum_bidir_reverse" if any."""
    bidir = isinstance(data.get("sum_bidir_reverse"), dict)
    streams = data.get("streams")
    streams = [s for s in streams if isinstance(s, dict)] if isinstance(streams, list) else []
    out = []
    for key, direction in (("sum", "tx"), ("sum_bidir_reverse", "rx")):
        s = data.get(key)
        if not isinstance(s, dict):
            continue
        mine = [st for st in streams if st.get("sender") == s.get("sender")] if bidir else streams
        cwnd = _int(mine[0].get("snd_cwnd")) if len(mine) == 1 else None
        start, end = _num(s.get("start")), _num(s.get("end"))
        nbytes, bps = _int(s.get("bytes")), _num(s.get("bits_per_second"))
        if start is None or end is None or nbytes is None or bps is None:
            continue
        out.append(Interval(start, end, nbytes, bps, _int(s.get("retransmits")), cwnd,
                            bool(s.get("omitted", False)), _num(s.get("jitter_ms")),
                            _int(s.get("lost_packets")), _int(s.get("packets")),
                            direction if bidir else None))
    return out


def summaries(start: dict[str, Any], end: dict[str, Any], role: str | None,
              doc_text: str | None = None) -> tuple[IperfSummary, IperfSummary | None, bool]:
    """The forward summary (and the --bidir reverse one) from the JSON's "start" and "end",
    and whether the iperf3 wrapper's TestResult could read it."""
    test = _dict(start.get("test_start"))
    proto = test.get("protocol")
    udp_sum = _dict(end.get("sum"))
    protocol = (proto.lower() if isinstance(proto, str) and proto
                else "udp" if "jitter_ms" in udp_sum else "tcp")
    forward = _summary(protocol, _dict(end.get("sum_sent")) or udp_sum,
                       _dict(end.get("sum_received")) or (udp_sum if protocol == "udp" else {}),
                       role)
    wrapped = bool(end) and _from_wrapper(forward, protocol, start, end, doc_text)
    reverse = None
    if "sum_sent_bidir_reverse" in end or "sum_received_bidir_reverse" in end:
        reverse = _summary(protocol, _dict(end.get("sum_sent_bidir_reverse")),
                           _dict(end.get("sum_received_bidir_reverse")), role)
    return forward, reverse, wrapped


def _summary(protocol: str, sent: dict[str, Any], received: dict[str, Any],
             role: str | None) -> IperfSummary:
    s = IperfSummary(protocol=protocol)
    if role == "server":
        # a server fills the side it did not run with zeros
        if _int(sent.get("bytes")) == 0 and (_int(received.get("bytes")) or 0) > 0:
            sent = {}
        elif _int(received.get("bytes")) == 0 and (_int(sent.get("bytes")) or 0) > 0:
            received = {}
    if sent:
        s.sender_bits_per_second = _num(sent.get("bits_per_second"))
        s.sender_bytes = _int(sent.get("bytes"))
        s.retransmits = _int(sent.get("retransmits")) if protocol != "udp" else None
        s.duration = _num(sent.get("seconds"))
    if received:
        s.receiver_bits_per_second = _num(received.get("bits_per_second"))
        s.receiver_bytes = _int(received.get("bytes"))
        if s.duration is None:
            s.duration = _num(received.get("seconds"))
        if protocol == "udp":
            s.jitter_ms = _num(received.get("jitter_ms"))
            s.lost_percent = _num(received.get("lost_percent"))
    return s


def _from_wrapper(s: IperfSummary, protocol: str, start: dict[str, Any], end: dict[str, Any],
                  doc_text: str | None) -> bool:
    """Take what the iperf3 wrapper's TestResult reads; keep ours where it cannot.

    True when the wrapper read the result."""
    try:
        from iperf3.iperf3 import TestResult

        text = doc_text or json.dumps({"start": start, "intervals": [], "end": end})
        tr = TestResult(text)
        if tr.error is not None:
            return False
        if protocol == "tcp":
            if s.sender_bits_per_second is not None:
                s.sender_bits_per_second = _num(tr.sent_bps)
                s.sender_bytes = _int(tr.sent_bytes)
                s.retransmits = _int(tr.retransmits)
            if s.receiver_bits_per_second is not None:
                s.receiver_bits_per_second = _num(tr.received_bps)
                s.receiver_bytes = _int(tr.received_bytes)
        elif protocol == "udp" and s.jitter_ms is not None:
            s.jitter_ms = _num(tr.jitter_ms)
            s.lost_percent = _num(tr.lost_percent)
    except Exception:  # KeyError, TypeError...: the wrapper wants a complete client result
        return False
    return True


def parse_iperf3_json(text: str) -> Iperf3Result:
    """Parse a saved `-J` document or `--json-stream` log."""
    p = Iperf3JsonParser()
    for line in text.splitlines():
        p.feed(line)
    return p.finish()


def _load(text: str) -> Any:
    try:
        return json.loads(text)
    except (ValueError, RecursionError):
        return None


def _dict(v: Any) -> dict[str, Any]:
    return v if isinstance(v, dict) else {}


def _num(v: Any) -> float | None:
    if isinstance(v, bool) or not isinstance(v, int | float):
        return None
    f = float(v) if not isinstance(v, int) or abs(v) < 2**1023 else math.inf
    return f if math.isfinite(f) else None


def _int(v: Any) -> int | None:
    if isinstance(v, bool):
        return None
    if isinstance(v, int):
        return v
    if isinstance(v, float) and math.isfinite(v) and v.is_integer():
        return int(v)
    return None
