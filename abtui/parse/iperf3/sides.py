"""Which side's iperf3 lines measure a pair, and which side's CPU line a run reads.

TCP takes the client's lines (iperf3's convention: the sender's, the receiver's with -R). UDP
takes the receiving side's, because a UDP sender prints the rate it offered, not what arrived:
the server's lines when the client sends (forward, and --bidir's forward direction), the
client's own with -R (and --bidir's way back). See `measured`. The rules on their own, apart
from the run that follows them (abtui.reports.report.SIDES says them to the report's reader).
"""

from __future__ import annotations

from abtui.core.model import Interval, IperfSummary, TestOptions

# An interval shorter than this share of the interval setting is the stub a server prints as
# the test ends (`2.00-2.00 sec`): its rate is no measurement of its own.
STUB_FRACTION = 0.1


def measured(interval: Interval, opts: TestOptions) -> bool:
    """Whether an interval iperf3 printed (on either side) is a measurement of the pair: UDP
    intervals only from the receiving side (those carry jitter and loss; the sending side's
    are the rate offered), and no end-of-test stub (see STUB_FRACTION)."""
    if opts.udp and interval.jitter_ms is None:
        return False
    return interval.end - interval.start >= STUB_FRACTION * opts.interval


def reads_server(opts: TestOptions) -> bool:
    """UDP the client sends (forward, --bidir): what arrived is in the server's lines."""
    return opts.udp and not opts.reverse


def reads_server_cpu(opts: TestOptions, json_stream: bool) -> bool:
    """-R in text mode: the client prints no `CPU Utilization:` line when it receives, the
    server (the sender, run with -V) prints the sender's."""
    return opts.reverse and not json_stream


def fill_cpu(summary: IperfSummary | None, other: IperfSummary | None) -> None:
    """Take the CPU figures `summary` lacks from the other side's log."""
    if summary is None or other is None:
        return
    summary.sender_cpu = summary.sender_cpu or other.sender_cpu
    summary.receiver_cpu = summary.receiver_cpu or other.receiver_cpu

