"""The result of one iperf3 test, whichever output format it was read from."""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Any

from abtui.core.model import CpuUtil, Interval, IperfSummary


@dataclass(slots=True)
class Iperf3Result:
    """Aggregate intervals, the end-of-test summary and what went wrong, if anything.

    `intervals` hold the aggregate per interval (the [SUM] line with several streams); for
    --bidir both directions are in it, told apart by `Interval.direction` ("tx" is the client's
    sending direction, whichever side printed the log), and `reverse_summary` holds the "rx"
    direction's summary. `timestamps` is aligned with `intervals`: the --timestamps prefix as
    epoch seconds (read in this machine's time zone) or None. `error` is iperf3's own message
    for a failed test; `parse_error` says the input was not (or not entirely) iperf3 output.
    """

    intervals: list[Interval] = field(default_factory=list)
    summary: IperfSummary = field(default_factory=IperfSummary)
    error: str | None = None
    parse_error: str | None = None
    timestamps: list[float | None] = field(default_factory=list)
    reverse_summary: IperfSummary | None = None
    stream_summaries: dict[str, IperfSummary] = field(default_factory=dict)
    streams: int | None = None
    bidir: bool = False
    reverse: bool | None = None
    role: str | None = None  # "client" or "server"
    version: str | None = None
    complete: bool = False  # the end-of-test summary was seen
    format: str = "text"  # "text", "json" (-J) or "json-stream"
    summary_source: str = "text"  # "text", "json", or "iperf3.TestResult" (the wrapper read it)
    warnings: list[str] = field(default_factory=list)

    def to_json(self) -> dict[str, Any]:
        """The `abtui import --json` shape (docs/contracts.md): null where the input had nothing."""
        out: dict[str, Any] = {
            "summary": summary_json(self.summary),
            "intervals": [interval_json(i, self.bidir) for i in self.intervals],
            "error": self.error or self.parse_error,
        }
        if self.bidir:
            out["reverse_summary"] = (summary_json(self.reverse_summary)
                                      if self.reverse_summary else None)
        return out


INTERRUPTED = "interrupt - "


def forget_unheard(res: Iperf3Result) -> None:
    """Blank the side of the summary this iperf3 never heard from.

    Interrupted (a stopped run, Ctrl-C: iperf3's message starts "interrupt - "), iperf3 prints
    its summary before the other side sends its figures, and prints that side's line as zeros:
    the client's receiver line when it sends, its sender line with -R. Those are unknown, not
    0. The side this host measured itself stays."""
    if not (res.error or "").startswith(INTERRUPTED) or res.role not in ("client", "server"):
        return
    for summary, forward in ((res.summary, True), (res.reverse_summary, False)):
        if summary is None:
            continue
        # the client sends in the forward direction, unless -R
        client_sends = forward != bool(res.reverse)
        if client_sends == (res.role == "client"):
            summary.receiver_bits_per_second = summary.receiver_bytes = None
            summary.jitter_ms = summary.lost_percent = None
        else:
            summary.sender_bits_per_second = summary.sender_bytes = None
            summary.retransmits = None


def place_cpu(res: Iperf3Result, local: CpuUtil | None, remote: CpuUtil | None,
              local_sends: bool) -> None:
    """Put iperf3's local and remote CPU figures on the summary's sender and receiver.

    The remote side's figures are unknown, not 0, where iperf3 never heard them: on a server
    (it prints before the client's arrive), in a test interrupted before its end, and
    wherever iperf3 wrote all zeros (JSON fills what it lacks with 0)."""
    if remote is not None and (res.role == "server"
                               or (res.error or "").startswith(INTERRUPTED)
                               or remote.total == remote.user == remote.system == 0):
        remote = None
    sender, receiver = (local, remote) if local_sends else (remote, local)
    res.summary.sender_cpu, res.summary.receiver_cpu = sender, receiver


def local_sends(res: Iperf3Result) -> bool:
    """Whether the host that printed the log sent the data (--bidir: the client counts as
    the sender, its direction being the forward one)."""
    return (res.role == "client") != (bool(res.reverse) and not res.bidir)


def cpu_json(c: CpuUtil | None) -> dict[str, float | None] | None:
    if c is None:
        return None
    return {"total": finite(c.total), "user": finite(c.user), "system": finite(c.system)}


def summary_json(s: IperfSummary) -> dict[str, Any]:
    out: dict[str, Any] = {
        "protocol": s.protocol,
        "sender_bits_per_second": finite(s.sender_bits_per_second),
        "receiver_bits_per_second": finite(s.receiver_bits_per_second),
        "retransmits": s.retransmits,
        "sender_cpu": cpu_json(s.sender_cpu),
        "receiver_cpu": cpu_json(s.receiver_cpu),
    }
    if s.protocol == "udp":
        out["jitter_ms"] = finite(s.jitter_ms)
        out["lost_percent"] = finite(s.lost_percent)
    return out


def interval_json(i: Interval, with_direction: bool = False) -> dict[str, Any]:
    out = i.to_json()
    out["bits_per_second"] = finite(i.bits_per_second)
    if with_direction:
        out["direction"] = i.direction
    return out


def finite(x: float | None) -> float | None:
    """None for NaN and infinities, which JSON cannot carry and iperf3 prints as `-nan`."""
    if x is None or not math.isfinite(x):
        return None
    return x
