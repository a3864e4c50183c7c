"""ping's output, line by line: Linux iputils (with `-D` epoch prefixes or without), FreeBSD,
macOS and busybox. Replies come back as they arrive; the summary is ping's own last lines.

A duplicate reply (`(DUP!)`) is counted, not repeated; a timeout or an unreachable report is a
reply with no RTT. Summary fields ping did not print (busybox has no stddev) stay None.
"""

from __future__ import annotations

import math
import re
from dataclasses import dataclass, field
from typing import Any

from abtui.core.model import PingReply, PingSummary

_NUM = r"\d{1,12}(?:\.\d{1,12})?"
_STAMP = re.compile(rf"\[({_NUM})\]\s*")
_REPLY = re.compile(rf" bytes from .*?\b(?:icmp_[sr]eq|seq)=(\d{{1,12}}).*?\btime[=<]\s*({_NUM})"
                    r"\s*ms(.*)$")
_NO_REPLY = re.compile(r"(?:Request timeout for icmp_seq|no answer yet for icmp_seq=)\s*"
                       r"(\d{1,12})")
_UNREACHABLE = re.compile(r"^From .*?\bicmp_seq=(\d{1,12})\b")
_STATS = re.compile(r"(\d{1,12}) packets transmitted, (\d{1,12}) (?:packets )?received"
                    r"(?:, \+(\d{1,12}) duplicates)?(?:, \+\d{1,12} corrupted)?"
                    r"(?:, \+(\d{1,12}) errors)?"
                    rf"(?:, ({_NUM})% packet loss)?")
_RTT = re.compile(rf"(?:rtt|round-trip) min/avg/max(?:/(?:mdev|stddev))? = ({_NUM})/({_NUM})/"
                  rf"({_NUM})(?:/({_NUM}))? ms")
_HEADER = re.compile(r"PING ([^\s(]+)")


@dataclass(slots=True)
class PingResult:
    replies: list[PingReply] = field(default_factory=list)
    summary: PingSummary = field(default_factory=PingSummary)
    error: str | None = None  # ping's own message when nothing came back
    parse_error: str | None = None
    target: str | None = None
    duplicates: int = 0
    errors: int = 0  # unreachable reports and the like
    complete: bool = False  # ping's statistics were seen

    def to_json(self) -> dict[str, Any]:
        s = self.summary
        return {
            "summary": {"sent": s.sent, "received": s.received,
                        "loss_percent": s.loss_percent, "rtt_min_ms": s.rtt_min_ms,
                        "rtt_avg_ms": s.rtt_avg_ms, "rtt_max_ms": s.rtt_max_ms,
                        "rtt_stddev_ms": s.rtt_stddev_ms},
            "replies": [{"seq": r.seq, "rtt_ms": r.rtt_ms} for r in self.replies],
            "error": self.error or self.parse_error,
        }


class PingParser:
    """Feed ping's output line by line; each reply (or announced loss) comes back once."""

    def __init__(self) -> None:
        self._result = PingResult()
        self._known = 0
        self._lines = 0
        self._message: str | None = None

    def feed(self, line: str) -> list[PingReply]:
        self._lines += 1
        try:
            return self._feed(line.strip())
        except Exception:  # never raise on input
            return []

    def _feed(self, line: str) -> list[PingReply]:
        if not line:
            return []
        ts = None
        if line[0] == "[":
            m = _STAMP.match(line)
            if m:
                ts = _finite(float(m.group(1)))
                line = line[m.end():]
        r = self._result
        m = _REPLY.search(line)
        if m:
            self._known += 1
            if "(DUP!)" in m.group(3):
                r.duplicates += 1
                return []
            reply = PingReply(int(m.group(1)), _finite(float(m.group(2))), ts)
            r.replies.append(reply)
            return [reply]
        m = _NO_REPLY.search(line) or _UNREACHABLE.match(line)
        if m:
            self._known += 1
            if line.startswith("From "):
                r.errors += 1
            reply = PingReply(int(m.group(1)), None, ts)
            r.replies.append(reply)
            return [reply]
        m = _STATS.search(line)
        if m:
            self._known += 1
            r.complete = True
            s = r.summary
            s.sent, s.received = int(m.group(1)), int(m.group(2))
            r.duplicates = int(m.group(3) or r.duplicates)
            r.errors = int(m.group(4) or r.errors)
            s.loss_percent = (_finite(float(m.group(5))) if m.group(5) is not None
                              else None)
            return []
        m = _RTT.search(line)
        if m:
            self._known += 1
            s = r.summary
            s.rtt_min_ms, s.rtt_avg_ms, s.rtt_max_ms = (_finite(float(x))
                                                        for x in m.group(1, 2, 3))
            s.rtt_stddev_ms = _finite(float(m.group(4))) if m.group(4) else None
            return []
        if line.startswith("PING "):
            self._known += 1
            h = _HEADER.match(line)
            r.target = h.group(1) if h else None
        elif line.startswith("ping: ") or line.startswith("ping6: "):
            self._known += 1
            if self._message is None:
                self._message = line.split(": ", 1)[1].strip() or line
        elif line.startswith("---") and "statistics" in line:
            self._known += 1
        return []

    def finish(self) -> PingResult:
        r = self._result
        out = PingResult(replies=list(r.replies), summary=PingSummary(**_fields(r.summary)),
                         target=r.target, duplicates=r.duplicates, errors=r.errors,
                         complete=r.complete)
        answered = any(x.rtt_ms is not None for x in r.replies) or bool(r.summary.received)
        if self._message and not answered:
            out.error = self._message
        if not self._known:
            out.parse_error = (f"no ping output found in {self._lines} lines" if self._lines
                               else "empty input")
        return out


def _fields(s: PingSummary) -> dict[str, Any]:
    return {k: getattr(s, k) for k in PingSummary.__slots__}  # type: ignore[attr-defined]


def _finite(x: float) -> float | None:
    return x if math.isfinite(x) else None


def parse_ping(text: str) -> PingResult:
    """Parse a whole saved ping output."""
    p = PingParser()
    for line in text.splitlines():
        p.feed(line)
    return p.finish()
