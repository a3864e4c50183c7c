"""TEST-ONLY stand-ins for modules built in parallel (abtui.parse, abtui.knobs).

They implement just enough of the seams in abtui.seams for the engine's tests: a text parser
for iperf3 3.12 client output (TCP, -R, -P N, UDP), a ping reply reader, and a sysctl-only knob
applier. Replace with the real modules as soon as those are on main.
"""

from __future__ import annotations

import re
import shlex
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field

from abtui.controller import KnobRefused
from abtui.errors import RemoteError
from abtui.model import (
    Event,
    EventKind,
    Interval,
    IperfSummary,
    Knob,
    KnobKind,
    Pair,
    PingReply,
    PingSummary,
    Scope,
)
from abtui.remote.link import HostLink
from abtui.seams import Emit

UNITS = {"": 1, "K": 1e3, "M": 1e6, "G": 1e9, "T": 1e12}
BYTE_UNITS = {"": 1, "K": 1024, "M": 1024**2, "G": 1024**3, "T": 1024**4}
LINE = re.compile(r"^\[\s*(?P<id>\d+|SUM)\]\s+(?P<a>[\d.]+)-\s*(?P<b>[\d.]+)\s+sec\s+"
                  r"(?P<bytes>[\d.]+)\s+(?P<bu>\w?)Bytes\s+(?P<bps>[\d.]+)\s+(?P<ru>\w?)bits/sec"
                  r"(?P<rest>.*)$")


@dataclass
class StandInResult:
    summary: IperfSummary | None = None
    error: str | None = None


@dataclass
class StandInTextParser:
    """iperf3 3.12 client text: one Interval per interval (the [SUM] line when streams > 1).

    The number of streams and UDP are read from iperf3's header lines."""

    streams: int = 0
    udp: bool = False
    summary: IperfSummary = field(default_factory=IperfSummary)
    error: str | None = None
    seen: set[tuple[str, float]] = field(default_factory=set)

    def feed(self, line: str) -> list[Interval]:
        if line.startswith("iperf3: error - "):
            self.error = line.removeprefix("iperf3: error - ").strip()
            return []
        if "connected to" in line:
            self.streams += 1
        if line.startswith("[ ID]") and "Datagrams" in line:
            self.udp = True
        m = LINE.match(line)
        if not m or (self.streams > 1) != (m["id"] == "SUM"):
            return []
        rest = m["rest"].split()
        nbytes = int(float(m["bytes"]) * BYTE_UNITS[m["bu"]])
        bps = float(m["bps"]) * UNITS[m["ru"]]
        if "sender" in rest or "receiver" in rest:
            role = "sender" if "sender" in rest else "receiver"
            setattr(self.summary, f"{role}_bits_per_second", bps)
            setattr(self.summary, f"{role}_bytes", nbytes)
            self.summary.protocol = "udp" if self.udp else "tcp"
            if role == "sender" and rest[0].isdigit() and not self.udp:
                self.summary.retransmits = int(rest[0])
            return []
        key = (m["id"], float(m["a"]))
        if key in self.seen:  # the last interval repeated when a test dies
            return []
        self.seen.add(key)
        iv = Interval(start=float(m["a"]), end=float(m["b"]), bytes=nbytes, bits_per_second=bps,
                      omitted="(omitted)" in line)
        if not self.udp and rest and rest[0].isdigit():
            iv.retransmits = int(rest[0])
        if self.udp and rest and rest[0].isdigit():
            iv.packets = int(rest[0])
        return [iv]

    def finish(self) -> StandInResult:
        has = self.summary.sender_bits_per_second is not None
        return StandInResult(self.summary if has else None, self.error)


PING = re.compile(r"icmp_seq=(\d+).*time=([\d.]+) ms")
PING_SUM = re.compile(r"(\d+) packets transmitted, (\d+) received")


class StandInPingParser:
    def __init__(self) -> None:
        self.summary = PingSummary()

    def feed(self, line: str) -> list[PingReply]:
        m = PING.search(line)
        if m:
            return [PingReply(int(m[1]), float(m[2]))]
        s = PING_SUM.search(line)
        if s:
            self.summary.sent, self.summary.received = int(s[1]), int(s[2])
        return []

    def finish(self) -> PingSummary:
        return self.summary


class SysctlStandInApplier:
    """Sysctl knobs only, through the links' control shells; restores originals at the end."""

    def __init__(self, links: Mapping[str, HostLink], emit: Emit) -> None:
        self.links = links
        self.emit = emit
        self.originals: dict[tuple[str, str], str] = {}

    def _hosts(self, knob: Knob, pairs: Sequence[Pair]) -> list[str]:
        out = []
        for p in pairs:
            if knob.scope in (Scope.SENDER, Scope.BOTH):
                out.append(p.sender)
            if knob.scope in (Scope.RECEIVER, Scope.BOTH):
                out.append(p.receiver)
        return list(dict.fromkeys(out))

    async def apply(self, knob: Knob, value: str, pairs: Sequence[Pair]) -> Mapping[str, str]:
        if knob.kind is not KnobKind.SYSCTL:
            raise KnobRefused(f"stand-in applier: {knob.kind} knobs are not supported")
        done: list[tuple[str, str]] = []
        try:
            for alias in self._hosts(knob, pairs):
                link = self.links[alias]
                if (alias, knob.key) not in self.originals:
                    old = (await link.check(f"sysctl -n {shlex.quote(knob.key)}")).strip()
                    self.originals[(alias, knob.key)] = old
                    self.emit(Event(EventKind.ORIGINAL, host=alias,
                                    data={"knob": knob.name, "key": knob.key, "value": old}))
                before = (await link.check(f"sysctl -n {shlex.quote(knob.key)}")).strip()
                await link.check(f"sysctl -w {shlex.quote(knob.key + '=' + value)} >/dev/null")
                done.append((alias, before))
        except RemoteError as exc:
            for alias, before in done:
                await self.links[alias].check(
                    f"sysctl -w {shlex.quote(knob.key + '=' + before)} >/dev/null")
            raise KnobRefused(str(exc)) from exc
        return {}

    async def restore(self) -> None:
        for (alias, key), value in self.originals.items():
            ok = True
            try:
                await self.links[alias].check(
                    f"sysctl -w {shlex.quote(key + '=' + value)} >/dev/null")
            except RemoteError:
                ok = False
            self.emit(Event(EventKind.RESTORE, host=alias,
                            data={"knob": key, "value": value, "ok": ok, "message": ""}))
        self.originals.clear()
