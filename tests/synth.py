"""Synthetic sessions shaped like a lab session's events, for store/stats/report tests and the
session benchmark (the engine's contract is EventKind's docstring in abtui.core.model)."""

from __future__ import annotations

import random
from collections.abc import Iterator, Sequence
from typing import Any

from abtui.core.events import (
    Event,
    Facts,
    IntervalMeasured,
    KnobChanged,
    Mark,
    Original,
    Phase,
    Ping,
    RunEnd,
    RunStart,
    SessionEnd,
    SessionStart,
    Skew,
)

T0 = 1_780_000_000.0
PROFILE = """[profile]
name = "synth"

[[pairs]]
label = "A"
sender = "lab-a-snd"
receiver = "lab-a-rcv"
target = "198.18.1.2"

[[pairs]]
label = "B"
sender = "lab-b-snd"
receiver = "lab-b-rcv"
target = "198.18.2.2"
"""


def continuous(phases: Sequence[dict[str, str]], rates: dict[str, Sequence[float]],
               seconds: int = 10, ping_interval: float = 1.0, jitter: float = 0.01,
               seed: int = 1, pairs: Sequence[str] = ("A", "B"),
               rtt_ms: dict[str, float] | None = None) -> Iterator[Event]:
    """One continuous run per pair; phase k runs `seconds` intervals under phases[k] at
    rates[pair][k] bits/s (±jitter); each knob change yields one straddling interval."""
    rng = random.Random(seed)
    rtt_ms = rtt_ms or {p: 0.05 + 0.01 * i for i, p in enumerate(pairs)}
    t = T0
    yield Event.of(SessionStart(profile_text=PROFILE, profile_path="/tmp/synth.toml",
                                abtui_version="0.1.0"), t)
    for i, pair in enumerate(pairs):
        for role in ("snd", "rcv"):
            host = f"lab-{pair.lower()}-{role}"
            yield Event.of(Facts(facts={
                "alias": host, "os": "Linux", "hostname": host, "kernel_release": f"6.1.{i}",
                "nic_driver": "veth", "nic_firmware": "", "iperf3_version": "3.12"}), t, host=host)
    for knob, value in phases[0].items():
        yield Event.of(Original.from_data({"knob": knob, "key": f"net.{knob}", "value": value}), t,
                       host="lab-a-snd")
    skew = {p: 0.4 * i for i, p in enumerate(pairs)}
    yield Event.of(Skew(skew_ms=max(skew.values()), clocks={p: T0 + s / 1000 for p,
                                                            s in skew.items()}), t)
    for pair in pairs:
        yield Event.of(RunStart(run=1, config=dict(phases[0]), host_clock=T0, skew_ms=skew[pair],
                                options={"duration": 0, "interval": 1.0, "parallel": 1,
                                         "reverse": False,
                        "udp": False}), t, pair=pair)
    clock = 0.0
    for k, config in enumerate(phases):
        if k:
            changed = {kn: v for kn, v in config.items() if phases[k - 1].get(kn) != v}
            for knob, value in changed.items():
                yield Event.of(KnobChanged(knob=knob, value=value, pairs=list(pairs), hosts=[]),
                               t + 0.5)
            for pair in pairs:
                yield Event.of(Phase(phase=k - 1, config=dict(phases[k - 1]), start=t - seconds,
                                     end=t + 0.5), t + 0.5, pair=pair)
            t += 1
            clock += 1
            for pair in pairs:  # the interval that straddles the change
                yield _interval(t, pair, 1, k, clock, rates[pair][k] / 2, straddles=True)
        for _ in range(seconds):
            steps = max(1, round(1 / ping_interval))
            for s in range(steps):
                for pair in pairs:
                    rtt = rtt_ms[pair] * (1 + rng.uniform(-0.2, 0.2))
                    yield Event.of(Ping(run=1, phase=k, seq=int((t - T0) / ping_interval) + s,
                                        rtt_ms=round(rtt, 4)), t + s * ping_interval, pair=pair)
            t += 1
            clock += 1
            for pair in pairs:
                bps = rates[pair][k] * (1 + rng.uniform(-jitter, jitter))
                yield _interval(t, pair, 1, k, clock, bps)
    yield Event.of(Mark(text="done"), t)
    for pair in pairs:
        yield Event.of(Phase(phase=len(phases) - 1, config=dict(phases[-1]), start=t - seconds,
                             end=t), t, pair=pair)
        yield Event.of(RunEnd(run=1, status="stopped", summary=None, ping=None, message=""), t,
                       pair=pair)
    yield Event.of(SessionEnd(reason="user quit"), t)


def _interval(t: float, pair: str, run: int, phase: int, clock: float, bps: float,
              straddles: bool = False) -> Event:
    data: dict[str, Any] = {
        "run": run, "phase": phase, "start": clock - 1, "end": clock, "bytes": int(bps / 8),
        "bits_per_second": bps, "retransmits": 2, "cwnd_bytes": 1_000_000, "omitted": False,
        "straddles": straddles}
    return Event.of(IntervalMeasured.from_data(data), t, pair=pair)


def plan(configs: Sequence[dict[str, str]], rates: dict[str, Sequence[Sequence[float]]],
         seconds: int = 5, pairs: Sequence[str] = ("A", "B")) -> Iterator[Event]:
    """Plan mode: for config k, repetition r, one run per pair at rates[pair][k][r] bits/s
    (flat across its intervals); each run is its own phase."""
    t = T0
    yield Event.of(SessionStart.from_data({"profile_text": PROFILE}), t)
    run = 0
    for k, config in enumerate(configs):
        for r in range(len(rates[pairs[0]][k])):
            run += 1
            for pair in pairs:
                yield Event.of(RunStart.from_data({"run": run, "config": dict(config),
                                                   "skew_ms": 0.1}), t, pair=pair)
            for s in range(seconds):
                t += 1
                for pair in pairs:
                    yield _interval(t, pair, run, run, s + 1, rates[pair][k][r])
            for pair in pairs:
                mean = rates[pair][k][r]
                yield Event.of(Phase(phase=run, config=dict(config), start=t - seconds, end=t), t,
                               pair=pair)
                yield Event.of(RunEnd(run=run, status="ok", message="", summary={
                    "protocol": "tcp", "sender_bits_per_second": mean,
                    "receiver_bits_per_second": mean * 0.99, "retransmits": 0}, ping=None),
                    t, pair=pair)
            t += 2
    yield Event.of(SessionEnd(reason="plan done"), t)
