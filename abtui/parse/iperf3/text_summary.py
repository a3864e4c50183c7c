"""The end of an iperf3 text log: its sender and receiver lines, kept as they are read, made
into the result's summaries (one per direction, one per stream).

Apart from the line-by-line parser (text), whose feeding is the hot path: this runs only
when a result is asked for, and sees only end-of-test lines.
"""

from __future__ import annotations

from dataclasses import dataclass

from abtui.core.model import IperfSummary
from abtui.parse.iperf3.result import Iperf3Result


@dataclass(slots=True)
class EndLine:
    """One end-of-test line (sender or receiver) before it becomes part of a summary."""

    start: float
    end: float
    bytes: int
    bits_per_second: float
    count: int | None  # Retr (TCP)
    jitter_ms: float | None
    lost: int | None
    total: int | None
    lost_pct: float | None


# (stream id or "SUM", direction or None, "sender" or "receiver") -> its line
Ends = dict[tuple[str, str | None, str], EndLine]


def place_summaries(res: Iperf3Result, ends: Ends, multi: bool | None, protocol: str) -> None:
    """Fill `res`'s summary, reverse summary and per-stream summaries from the end-of-test
    lines; `multi` is whether the aggregate is the [SUM] line (several streams a direction)."""
    directions = sorted({d for (_, d, _) in ends}, key=lambda d: d or "")
    for d in directions:
        summary = _summary(ends, d, multi, protocol)
        if d == "rx":
            res.reverse_summary = summary
        elif summary is not None:
            res.summary = summary
    res.summary.protocol = protocol
    if res.reverse_summary is not None:
        res.reverse_summary.protocol = protocol
    for (sid, d, _) in ends:
        if sid != "SUM":
            name = sid if d is None else f"{sid}/{d}"
            s = _summary_of(ends, sid, d, protocol)
            if s is not None:
                res.stream_summaries[name] = s


def _summary(ends: Ends, direction: str | None, multi: bool | None,
             protocol: str) -> IperfSummary | None:
    if any(k[0] == "SUM" and k[1] == direction for k in ends):
        return _summary_of(ends, "SUM", direction, protocol)
    ids = {k[0] for k in ends if k[1] == direction}
    if len(ids) == 1 and multi is not True:
        return _summary_of(ends, ids.pop(), direction, protocol)
    return None


def _summary_of(ends: Ends, sid: str, direction: str | None,
                protocol: str) -> IperfSummary | None:
    snd = ends.get((sid, direction, "sender"))
    rcv = ends.get((sid, direction, "receiver"))
    if snd is None and rcv is None:
        return None
    s = IperfSummary(protocol=protocol)
    if snd is not None:
        s.sender_bits_per_second = snd.bits_per_second
        s.sender_bytes = snd.bytes
        s.retransmits = snd.count
        s.duration = snd.end - snd.start
    if rcv is not None:
        s.receiver_bits_per_second = rcv.bits_per_second
        s.receiver_bytes = rcv.bytes
        if s.duration is None:
            s.duration = rcv.end - rcv.start
        if rcv.jitter_ms is not None:
            s.jitter_ms = rcv.jitter_ms
            s.lost_percent = _lost_percent(rcv)
    return s


def _lost_percent(end: EndLine) -> float | None:
    """From the counts when there are any (iperf3 prints the percentage with 2 digits)."""
    if end.total and end.lost is not None and end.total > 0:
        return 100.0 * end.lost / end.total
    return end.lost_pct
