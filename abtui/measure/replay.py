"""A Controller that replays events instead of driving hosts: for the console's tests, benches
and demos while (or where) no real hosts are driven.

Two sources: a recorded list of events (a saved session, or `synthetic_events`), replayed with
its own timing scaled by `speed`; or, with no list, a live synthetic stream whose throughput
level follows the knob values set through `set_knob`. Everything is deterministic for a seed.
No Textual here: this is domain code.
"""

from __future__ import annotations

import asyncio
import contextlib
import itertools
import math
import random
import zlib
from collections.abc import Callable, Iterable, Sequence
from pathlib import Path

from abtui.core import events
from abtui.core.controller import Mode
from abtui.core.errors import BadInput, KnobRefused
from abtui.core.events import Event, EventKind
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

    def preamble(self, t: float) -> list[Event]:
        """What connect() reports: session start, every host's link and facts, originals."""
        out = [Event.of(events.SessionStart(
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
             configs: dict[str, dict[str, str]]) -> list[Event]:
        """One interval ending at `t` for every pair, with a ping each."""
        out = []
        dt = self.interval
        for pair in self.profile.pairs:
            label = pair.label
            target = self.level[label] * self.factor(configs[label])
            bps = max(target * (1 + self.rng.gauss(0, 0.03)), 1e6)
            cw = self.cwnd[label] = 0.8 * self.cwnd[label] + 0.2 * (bps / 8 * 0.004)
            retr = self.rng.choice((0, 0, 0, 0, 1, 2, 5, 12))
            out.append(Event.of(events.Interval(
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
                     flip_at: int | None = None) -> list[Event]:
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
            out.append(Event.of(events.Knob(
                knob=knob.name, value=knob.values[1],
                pairs=[p.label for p in profile.pairs],
                hosts=[p.sender for p in profile.pairs]), t - synth.interval))
        out.extend(synth.tick(t, 0, phase, configs))
    return out


def profile_from_events(events: Sequence[Event], name: str = "replay") -> Profile:
    """A profile good enough to show a recording: its pairs, and knobs seen in it."""
    labels: list[str] = []
    hosts: dict[str, list[str]] = {}
    knobs: dict[str, list[str]] = {}
    for e in events:
        if e.pair and e.pair not in labels:
            labels.append(e.pair)
        if e.kind is EventKind.RUN_START:
            for k, v in (e.data.get("config") or {}).items():
                knobs.setdefault(k, []).append(str(v))
        if e.kind is EventKind.KNOB:
            knobs.setdefault(str(e.data.get("knob")), []).append(str(e.data.get("value")))
            for label, host in zip(e.data.get("pairs") or [], e.data.get("hosts") or [],
                                   strict=False):
                hosts.setdefault(label, []).append(host)
    if not labels:
        raise BadInput("this recording has no pair events to replay")
    pairs = [Pair(label=lb, sender=(hosts.get(lb) or [f"{lb.lower()}-snd"])[0],
                  receiver=f"{lb.lower()}-rcv", target="") for lb in labels]
    klist = [Knob(n, KnobKind.TUNNEL if n == "tunnel" else KnobKind.SYSCTL,
                  tuple(dict.fromkeys(vs))) for n, vs in knobs.items()]
    return Profile(name=name, pairs=pairs, knobs=klist, base_pair=labels[0])


class ReplayController:
    """abtui.core.controller.Controller over a recording or a live synthetic stream.

    speed: 1.0 real time, 10.0 ten times faster, math.inf as fast as possible.
    refuse: knob names (or "knob=value") whose changes are refused, to show errors.
    step_delay: seconds each knob change and each restore takes (to show progress).
    """

    def __init__(self, profile: Profile, events: Sequence[Event] | None = None, *,
                 speed: float = 1.0, seed: int = 0, refuse: Iterable[str] = (),
                 step_delay: float = 0.0, limit: int | None = None) -> None:
        self.profile = profile
        self.session_path: Path | None = None
        self.speed = speed
        self.refuse = set(refuse)
        self.step_delay = step_delay
        self.limit = limit
        self._recording = list(events) if events is not None else None
        self._synth = Synth(profile, seed)
        self._subscribers: list[Callable[[Event], None]] = []
        self.configs = {p.label: {k.name: k.values[0] for k in profile.knobs}
                        for p in profile.pairs}
        self.phase = {p.label: 0 for p in profile.pairs}
        self._phase_start = {p.label: 0.0 for p in profile.pairs}
        self._changed: set[tuple[str, str]] = set()  # (knob, host) touched
        self._task: asyncio.Task[None] | None = None
        self._run = -1
        self._vt = T0  # virtual clock of the stream
        self.connected = False

    # ---- plumbing ---------------------------------------------------------------------------
    def subscribe(self, callback: Callable[[Event], None]) -> None:
        self._subscribers.append(callback)

    def _emit(self, event: Event) -> None:
        for cb in self._subscribers:
            cb(event)

    async def _sleep(self, seconds: float) -> None:
        if seconds > 0 and math.isfinite(self.speed) and self.speed > 0:
            await asyncio.sleep(seconds / self.speed)
        else:
            await asyncio.sleep(0)

    @property
    def running(self) -> bool:
        return self._task is not None and not self._task.done()

    # ---- Controller -------------------------------------------------------------------------
    async def connect(self) -> None:
        if self.connected:
            return
        self.connected = True
        if self._recording is None:
            pre = self._synth.preamble(self._vt)
        else:
            first_run = next((i for i, e in enumerate(self._recording)
                              if e.kind is EventKind.RUN_START), len(self._recording))
            pre, self._recording = self._recording[:first_run], self._recording[first_run:]
            if pre:
                self._vt = pre[-1].t
        for e in pre:
            self._emit(e)

    async def start(self, mode: Mode = "continuous") -> None:
        if self.running:
            return
        await self.connect()
        self._run += 1
        if self._recording is not None:
            self._task = asyncio.create_task(self._replay(self._recording))
            self._recording = []  # a recording plays once
            return
        for pair in self.profile.pairs:
            self._phase_start[pair.label] = self._vt
            self._emit(Event.of(events.RunStart(
                run=self._run, config=dict(self.configs[pair.label]),
                host_clock=self._vt, skew_ms=0.0,
                options={"interval": self._synth.interval, "mode": mode}), self._vt,
                pair=pair.label))
        if mode == "plan":
            self._task = asyncio.create_task(self._plan(self.plan_steps()))
        else:
            self._task = asyncio.create_task(self._ticks(self.limit))

    async def _replay(self, events: list[Event]) -> None:
        sent = 0
        for e in events:
            await self._sleep(e.t - self._vt)
            self._vt = max(self._vt, e.t)
            if e.kind is EventKind.KNOB:
                for label in e.data.get("pairs") or []:
                    if label in self.configs:
                        self.configs[label][str(e.data["knob"])] = str(e.data["value"])
            self._emit(e)
            sent += e.kind is EventKind.INTERVAL
            if self.limit is not None and sent >= self.limit:
                break

    async def _ticks(self, count: int | None) -> None:
        """`count` intervals (None: until stopped) on an absolute schedule (no drift)."""
        dt = self._synth.interval
        k = 0
        loop = asyncio.get_running_loop()
        t_start = loop.time()
        while count is None or k < count:
            k += 1
            if math.isfinite(self.speed) and self.speed > 0:
                await asyncio.sleep(max(0.0, t_start + k * dt / self.speed - loop.time()))
            else:
                await asyncio.sleep(0)
            self._vt += dt
            for e in self._synth.tick(self._vt, self._run, self.phase, self.configs):
                self._emit(e)

    def plan_steps(self) -> list[dict[str, str]]:
        """The plan's matrix of knob values × repetitions, shuffled when the plan says so."""
        plan = self.profile.plan
        names = {k.name for k in self.profile.knobs}
        knobs = [self.profile.knob(n) for n in plan.matrix if n in names]
        combos = list(itertools.product(*(k.values for k in knobs))) * max(plan.repetitions, 1)
        if plan.shuffle:
            random.Random(plan.seed if plan.seed is not None else 0).shuffle(combos)
        return [dict(zip((k.name for k in knobs), c, strict=True)) for c in combos]

    async def _plan(self, steps: list[dict[str, str]]) -> None:
        """Each step: apply its values on every pair, measure, report PROGRESS; then end."""
        dt = self._synth.interval
        per_step = round(self.profile.test.duration / dt) if self.profile.test.duration > 0 \
            else 5
        labels = list(self.configs)
        total = len(steps)
        self._emit(Event.of(events.Progress(done=0, total=total,
                                            eta_s=total * per_step * dt), self._vt))
        for i, config in enumerate(steps):
            for name, value in config.items():
                if any(self.configs[lb].get(name) != value for lb in labels):
                    self._apply(name, value, labels)
            await self._ticks(per_step)
            self._emit(Event.of(events.Progress(
                done=i + 1, total=total, eta_s=(total - i - 1) * per_step * dt), self._vt))
        for label in labels:
            self._close_phase(label)
            self._emit(Event.of(events.RunEnd(run=self._run, status="ok", summary=None,
                                              ping=None, message=""), self._vt, pair=label))

    async def stop(self) -> None:
        if not self.running:
            return
        assert self._task is not None
        self._task.cancel()
        with contextlib.suppress(asyncio.CancelledError):
            await self._task
        self._task = None
        for pair in self.profile.pairs:
            self._close_phase(pair.label)
            self._emit(Event.of(events.RunEnd(run=self._run, status="stopped", summary=None,
                                              ping=None, message=""), self._vt,
                                pair=pair.label))

    def _close_phase(self, label: str) -> None:
        self._emit(Event.of(events.Phase(
            phase=self.phase[label], config=dict(self.configs[label]),
            start=self._phase_start[label], end=self._vt), self._vt, pair=label))
        self.phase[label] += 1
        self._phase_start[label] = self._vt

    async def set_knob(self, knob: str, value: str, pairs: Sequence[str] | None = None) -> None:
        try:
            k = self.profile.knob(knob)
        except KeyError:
            raise KnobRefused(f"no knob named {knob!r} in profile {self.profile.name}") from None
        if value not in k.values:
            raise KnobRefused(f"{knob}: {value!r} is not one of {', '.join(k.values)}")
        labels = list(pairs) if pairs is not None else (list(k.pairs) or
                                                        [p.label for p in self.profile.pairs])
        unknown = [lb for lb in labels if lb not in self.configs]
        if unknown:
            raise KnobRefused(f"{knob}: no pair {unknown[0]!r}")
        await asyncio.sleep(self.step_delay)
        if knob in self.refuse or f"{knob}={value}" in self.refuse:
            message = f"{self.profile.pair(labels[0]).sender}: refused {knob}={value} (replay)"
            self._emit(Event.of(events.KnobError(knob=knob, value=value, message=message),
                                self._vt))
            raise KnobRefused(message)
        self._apply(knob, value, labels)

    def _apply(self, knob: str, value: str, labels: list[str]) -> None:
        """Set a knob on pairs: phases close, KNOB (and TUNNEL) emitted; no refusals here."""
        k = self.profile.knob(knob)
        hosts = []
        for label in labels:
            pair = self.profile.pair(label)
            roles = [pair.host(role) for role in k.scope.roles]
            hosts.extend(roles)
            self._changed.update((knob, h) for h in roles)
            if self.running:
                self._close_phase(label)
            self.configs[label][knob] = value
        self._emit(Event.of(events.Knob(knob=knob, value=value, pairs=labels, hosts=hosts),
                            self._vt))
        if k.kind is KnobKind.TUNNEL:
            for label in labels:
                self._emit(Event.of(events.Tunnel(type=value,
                                                  target=self.profile.pair(label).target),
                                    self._vt, pair=label))

    async def mark(self, text: str) -> None:
        self._emit(Event.of(events.Mark(text=text), self._vt))

    async def shutdown(self) -> None:
        await self.stop()
        for knob, host in sorted(self._changed):
            await asyncio.sleep(self.step_delay)
            original = self.profile.knob(knob).values[0]
            self._emit(Event.of(events.Restore(knob=knob, value=original, ok=True, message=""),
                                self._vt, host=host))
        for label in self.configs:
            self.configs[label] = {k.name: k.values[0] for k in self.profile.knobs}
        self._changed.clear()
        self._emit(Event.of(events.SessionEnd(reason="shutdown"), self._vt))
