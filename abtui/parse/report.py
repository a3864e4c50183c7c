"""A few readable lines per imported file, for `abtui import` without `--json`."""

from __future__ import annotations

from statistics import fmean

from abtui.core import numbers
from abtui.core.model import CpuUtil, IperfSummary
from abtui.parse.importer import ImportResult
from abtui.parse.iperf3.result import Iperf3Result
from abtui.parse.ping import PingResult

rate = numbers.rate  # 3 significant digits, iperf3's 1000-based units (`19.0 Gbit/s`)
_ms = numbers.ms


def describe(item: ImportResult) -> list[str]:
    r = item.result
    if isinstance(r, PingResult):
        lines = [f"{item.source}: ping{' ' + r.target if r.target else ''}"]
        lines.extend(_ping(r))
    else:
        lines = [f"{item.source}: iperf3 {item.format}{_traits(r)}"]
        lines.extend(_iperf(r))
    if item.error:
        lines.append(f"  error: {item.error}")
    return lines


def _traits(r: Iperf3Result) -> str:
    bits = [x for x in (r.role, r.summary.protocol, r.version and f"iperf {r.version}") if x]
    if r.streams and r.streams > 1:
        bits.append(f"{r.streams} streams")
    if r.reverse:
        bits.append("reverse")
    if r.bidir:
        bits.append("bidir")
    return f" ({', '.join(bits)})" if bits else ""


def _iperf(r: Iperf3Result) -> list[str]:
    out = []
    for direction, s in (("tx", r.summary), ("rx", r.reverse_summary)):
        if s is None:
            continue
        mine = [i for i in r.intervals if not r.bidir or i.direction == direction]
        ivs = [i for i in mine if not i.omitted]
        omitted = len(mine) - len(ivs)
        label = f"  [{direction}] " if r.bidir else "  "
        if ivs:
            out.append(f"{label}{len(ivs)} intervals {ivs[0].start:.2f}-{ivs[-1].end:.2f} s, "
                       f"mean {rate(fmean(i.bits_per_second for i in ivs))}"
                       + (f", {omitted} omitted" if omitted else ""))
        if _has_summary(s):
            out.append(f"{label}sender {rate(s.sender_bits_per_second)}, receiver "
                       f"{rate(s.receiver_bits_per_second)}" + _extras(s))
        if s.sender_cpu or s.receiver_cpu:
            out.append(f"{label}CPU (iperf3's own): sender {_cpu(s.sender_cpu)}, receiver "
                       f"{_cpu(s.receiver_cpu)}")
        if not r.bidir:
            break
    return out


def _cpu(c: CpuUtil | None) -> str:
    return "-" if c is None else f"{c.total:.1f}% ({c.user:.1f}%u/{c.system:.1f}%s)"


def _has_summary(s: IperfSummary) -> bool:
    return s.sender_bits_per_second is not None or s.receiver_bits_per_second is not None


def _extras(s: IperfSummary) -> str:
    parts = []
    if s.retransmits is not None:
        parts.append(f"retransmits {s.retransmits}")
    if s.jitter_ms is not None:
        parts.append(f"jitter {_ms(s.jitter_ms)} ms")
    if s.lost_percent is not None:
        parts.append(f"lost {numbers.sig(s.lost_percent)} %")
    return "".join(f", {p}" for p in parts)


def _ping(r: PingResult) -> list[str]:
    s = r.summary
    out = []
    if s.sent is not None:
        loss = "-" if s.loss_percent is None else f"{s.loss_percent:g} %"
        out.append(f"  {s.sent} sent, {s.received} received, {loss} loss"
                   + (f", {r.duplicates} duplicates" if r.duplicates else ""))
    else:
        answered = sum(x.rtt_ms is not None for x in r.replies)
        out.append(f"  {len(r.replies)} replies read, {answered} answered (no statistics)")
    if s.rtt_avg_ms is not None:
        out.append(f"  rtt min/avg/max/stddev {_ms(s.rtt_min_ms)}/{_ms(s.rtt_avg_ms)}/"
                   f"{_ms(s.rtt_max_ms)}/{_ms(s.rtt_stddev_ms)} ms")
    return out
