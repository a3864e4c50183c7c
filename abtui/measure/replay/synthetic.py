"""Synthetic sessions: a profile of made-up pairs and knobs, and a deterministic stream of
events whose throughput level follows the knob values (KNOWN_FACTORS), for a seed.

What the replay Controller (abtui.measure.replay.controller) streams when it has no recording,
and what the console's tests, benches and demos replay; kept apart from the Controller because
they use it without one. No Textual here: this is domain code.
"""

from __future__ import annotations

import random
import zlib

from abtui.core import events
from abtui.core.errors import BadInput
from abtui.core.events import AnyEvent, Event
from abtui.core.model import Knob, KnobKind, LinkState, Pair, Plan, Profile, Scope, TestOptions

T0 = 1_767_225_600.0  # 2026-01-01 00:00 UTC: synthetic sessions' fixed start (no clocks)
LABELS = "ABCDEFGH"

# Throughput factor per knob value for names the lab uses (measured on the lab: a 64 KiB tcp_wmem
# about halves throughput, tso+gso off cut veth TCP ~30 -> ~11 Gbit/s, wireguard-go ~0.6).
KNOWN_FACTORS: dict[str, dict[str, float]] = {
    "tcp_wmem": {"4096 16384 65536": 0.5},
    "tso": {"off": 0.4},
    "cc": {"bbr": 0.93, "cubic": 1.02},
    "tunnel": {"wireguard": 0.2, "vxlan": 0.85, "ipsec": 0.3, "gre": 0.9},
}


def synthetic_profile(pairs: int = 2, interval: float = 1.0, name: str = "synthetic") -> Profile:
    """A profile shaped like the lab's: `pairs` pairs A, B, ... and the lab's four knobs."""
    if not 1 <= pairs <= len(LABELS):
        raise BadInput(f"--pairs must be between 1 and {len(LABELS)}, not {pairs}")
    plist = [Pair(label=LABELS[i], sender=f"{LABELS[i].lower()}-snd",
                  receiver=f"{LABELS[i].lower()}-rcv", target=f"198.19.{i + 1}.2",
                  sender_device="data0", receiver_device="data0") for i in range(pairs)]
    knobs = [
        Knob("tcp_wmem", KnobKind.SYSCTL, ("4096 16384 4194304", "4096 16384 65536"),
             key="net.ipv4.tcp_wmem", scope=Scope.SENDER, binding="w"),
        Knob("tso", KnobKind.ETHTOOL_FEATURE, ("on", "off"), key="tso", scope=Scope.SENDER,
             binding="t"),
        Knob("cc", KnobKind.SYSCTL, ("reno", "bbr"), key="net.ipv4.tcp_congestion_control",
             scope=Scope.SENDER, binding="c"),
        Knob("tunnel", KnobKind.TUNNEL, ("none", "wireguard", "vxlan"), binding="u"),
    ]
    return Profile(name=name, pairs=plist, knobs=knobs,
                   test=TestOptions(duration=0, interval=interval),
                   tunnels=("none", "wireguard", "vxlan"), base_pair=plist[0].label,
                   plan=Plan(matrix=("tcp_wmem", "tso"), shuffle=False))


def _stable(text: str) -> int:
    return zlib.crc32(text.encode())


class Synth:
    """Realistic interval numbers per pair: a few Gbit/s with noise, RTT, retransmits, cwnd."""

    def __init__(self, profile: Profile, seed: int = 0, base_gbps: float = 3.0) -> None:
        self.profile = profile
        self.rng = random.Random(seed)
        self.interval = profile.test.interval or 1.0
        # each pair its own level (the "patched kernel" a little faster)
        self.level = {p.label: base_gbps * 1e9 * (1 + 0.04 * i)
                      for i, p in enumerate(profile.pairs)}
        self.cwnd = {p.label: 1_200_000.0 for p in profile.pairs}

    def factor(self, config: dict[str, str]) -> float:
        f = 1.0
        for name, value in config.items():
            known = KNOWN_FACTORS.get(name)
            if known is not None:
                f *= known.get(value, 1.0)
                continue
            try:
                idx = self.profile.knob(name).values.index(value)
            except (KeyError, ValueError):
                idx = 0
            if idx:
                f *= 1.0 - 0.08 * idx - 0.02 * (_stable(name + value) % 5)
        return max(f, 0.02)

    def preamble(self, t: float) -> list[AnyEvent]:
        """What connect() reports: session start, every host's link and facts, originals."""
        out: list[AnyEvent] = [Event.of(events.SessionStart(
            profile_text=self.profile.source_text or "", abtui_version="replay",
            profile_path=self.profile.source_path or ""), t)]
        for i, pair in enumerate(self.profile.pairs):
            for host in (pair.sender, pair.receiver):
                out.append(Event.of(events.Link(state=str(LinkState.CONNECTED), message=""), t,
                                    host=host))
                out.append(Event.of(events.Facts(facts={
                    "alias": host, "os": "Linux", "hostname": host,
                    "kernel_release": f"6.1.0-{18 + i}-amd64", "iperf3_version": "3.12",
                    "nic_driver": "veth"}), t, host=host))
        for knob in self.profile.knobs:
            for pair in self.profile.pairs:
                out.append(Event.of(events.Original(
                    knob=knob.name, key=knob.key, value=knob.values[0], device=None,
                    kind=str(knob.kind)), t, host=pair.sender))
        for pair in self.profile.pairs:  # the hosts "have" each knob's first value
            out.append(Event.of(events.Config(
                config={k.name: k.values[0] for k in self.profile.knobs}), t, pair=pair.label))
        return out

    def tick(self, t: float, run: int, phase: dict[str, int],
             configs: dict[str, dict[str, str]]) -> list[AnyEvent]:
        """One interval ending at `t` for every pair, with a ping each."""
        out: list[AnyEvent] = []
        dt = self.interval
        for pair in self.profile.pairs:
            label = pair.label
            target = self.level[label] * self.factor(configs[label])
            bps = max(target * (1 + self.rng.gauss(0, 0.03)), 1e6)
            cw = self.cwnd[label] = 0.8 * self.cwnd[label] + 0.2 * (bps / 8 * 0.004)
            retr = self.rng.choice((0, 0, 0, 0, 1, 2, 5, 12))
            out.append(Event.of(events.IntervalMeasured(
                run=run, phase=phase[label], start=round(t - T0 - dt, 6),
                end=round(t - T0, 6), bytes=int(bps / 8 * dt), bits_per_second=bps,
                retransmits=retr, cwnd_bytes=int(cw), omitted=False,
                straddles=False), t, pair=label))
            rtt = 0.05 + 0.3 * (1 - min(bps / 1e10, 1)) + abs(self.rng.gauss(0, 0.02))
            out.append(Event.of(events.Ping(
                run=run, phase=phase[label], seq=int((t - T0) / dt),
                rtt_ms=round(rtt, 3)), t, pair=label))
        return out


def synthetic_events(profile: Profile | None = None, *, pairs: int = 2, intervals: int = 30,
                     interval: float = 1.0, seed: int = 0,
                     flip_at: int | None = None) -> list[AnyEvent]:
    """A fixed, deterministic recording: preamble, RUN_START, `intervals` intervals per pair;
    at `flip_at` (default: half-way) the first knob takes its second value on every pair."""
    profile = profile or synthetic_profile(pairs, interval)
    synth = Synth(profile, seed)
    configs = {p.label: {k.name: k.values[0] for k in profile.knobs} for p in profile.pairs}
    phase = {p.label: 0 for p in profile.pairs}
    out = synth.preamble(T0)
    for pair in profile.pairs:
        out.append(Event.of(events.RunStart(
            run=0, config=dict(configs[pair.label]), host_clock=T0, skew_ms=0.0,
            options={"interval": synth.interval}), T0, pair=pair.label))
    flip = intervals // 2 if flip_at is None else flip_at
    for k in range(1, intervals + 1):
        t = T0 + k * synth.interval
        if k == flip + 1 and profile.knobs and len(profile.knobs[0].values) > 1:
            knob = profile.knobs[0]
            for pair in profile.pairs:
                out.append(Event.of(events.Phase(
                    phase=phase[pair.label], config=dict(configs[pair.label]),
                    start=T0, end=t - synth.interval), t - synth.interval, pair=pair.label))
                configs[pair.label][knob.name] = knob.values[1]
                phase[pair.label] += 1
            out.append(Event.of(events.KnobChanged(
                knob=knob.name, value=knob.values[1],
                pairs=[p.label for p in profile.pairs],
                hosts=[p.sender for p in profile.pairs]), t - synth.interval))
        out.extend(synth.tick(t, 0, phase, configs))
    return out

