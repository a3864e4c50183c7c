"""A Controller that replays events instead of driving hosts: for the console's tests, benches
and demos while (or where) no real hosts are driven.

Two sources: a recorded list of events (a saved session, or abtui.measure.replay.synthetic's
`synthetic_events`), replayed with
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
from collections.abc import Callable, Iterable, Mapping, Sequence
from pathlib import Path
from typing import Any

from abtui.core import events
from abtui.core.controller import Mode
from abtui.core.dimensions import TUNNEL
from abtui.core.errors import BadInput, KnobRefused
from abtui.core.events import AnyEvent, Event, EventKind, KnobChanged, RunStart
from abtui.core.model import Knob, KnobKind, Pair, Profile
from abtui.measure.replay.synthetic import T0, Synth


def profile_from_events(events: Sequence[AnyEvent], name: str = "replay") -> Profile:
    """A profile good enough to show a recording: its pairs, and knobs seen in it."""
    labels: list[str] = []
    hosts: dict[str, list[str]] = {}
    knobs: dict[str, list[str]] = {}
    for e in events:
        if e.pair and e.pair not in labels:
            labels.append(e.pair)
        p = e.payload if e.kind in (EventKind.RUN_START, EventKind.KNOB) else None
        if isinstance(p, RunStart):
            for k, v in (p.config or {}).items():
                knobs.setdefault(k, []).append(str(v))
        if isinstance(p, KnobChanged):
            knobs.setdefault(str(p.knob), []).append(str(p.value))
            for label, host in zip(p.pairs or [], p.hosts or [], strict=False):
                hosts.setdefault(label, []).append(host)
    if not labels:
        raise BadInput("this recording has no pair events to replay")
    pairs = [Pair(label=lb, sender=(hosts.get(lb) or [f"{lb.lower()}-snd"])[0],
                  receiver=f"{lb.lower()}-rcv", target="") for lb in labels]
    klist = [Knob(n, KnobKind.TUNNEL if n == TUNNEL else KnobKind.SYSCTL,
                  tuple(dict.fromkeys(vs))) for n, vs in knobs.items()]
    return Profile(name=name, pairs=pairs, knobs=klist, base_pair=labels[0])


class ReplayController:
    """abtui.core.controller.Controller over a recording or a live synthetic stream.

    speed: 1.0 real time, 10.0 ten times faster, math.inf as fast as possible.
    refuse: knob names (or "knob=value") whose changes are refused, to show errors.
    step_delay: seconds each knob change and each restore takes (to show progress).
    """

    def __init__(self, profile: Profile, events: Sequence[AnyEvent] | None = None, *,
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
        self._subscribers: list[Callable[[AnyEvent], None]] = []
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
    def subscribe(self, callback: Callable[[AnyEvent], None]) -> None:
        self._subscribers.append(callback)

    def _emit(self, event: AnyEvent) -> None:
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

    async def _replay(self, events: list[AnyEvent]) -> None:
        sent = 0
        for e in events:
            await self._sleep(e.t - self._vt)
            self._vt = max(self._vt, e.t)
            knob = e.payload if e.kind is EventKind.KNOB else None
            if isinstance(knob, KnobChanged):
                for label in knob.pairs or []:
                    if label in self.configs:
                        self.configs[label][str(knob.knob)] = str(knob.value)
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
        self._emit(Event.of(events.KnobChanged(knob=knob, value=value, pairs=labels, hosts=hosts),
                            self._vt))
        if k.kind is KnobKind.TUNNEL:
            for label in labels:
                self._emit(Event.of(events.Tunnel(type=value,
                                                  target=self.profile.pair(label).target),
                                    self._vt, pair=label))

    async def set_values(self, knob: str, values: Mapping[str, str],
                         again: bool = False) -> None:
        """Each pair its value: one set_knob per value (a replay boots and restarts nothing:
        with `again`, a new stretch, a pair that keeps its value is left as it is)."""
        by_value: dict[str, list[str]] = {}
        for pair, value in values.items():
            if again and self.configs.get(pair, {}).get(knob) == value:
                continue
            by_value.setdefault(value, []).append(pair)
        for value, pairs in by_value.items():
            await self.set_knob(knob, value, pairs)

    async def mark(self, text: str, verdicts: list[dict[str, Any]] | None = None,
                   bisect: dict[str, Any] | None = None) -> None:
        self._emit(Event.of(events.Mark(text=text, verdicts=verdicts, bisect=bisect), self._vt))

    def note(self, payload: events.Payload) -> None:
        self._emit(Event.of(payload, self._vt))  # on the replay's clock, as its own events

    async def shutdown(self, reason: str = "shutdown") -> None:
        await self.stop()
        for knob, host in sorted(self._changed):
            await asyncio.sleep(self.step_delay)
            original = self.profile.knob(knob).values[0]
            self._emit(Event.of(events.Restore(knob=knob, value=original, ok=True, message=""),
                                self._vt, host=host))
        for label in self.configs:
            self.configs[label] = {k.name: k.values[0] for k in self.profile.knobs}
        self._changed.clear()
        self._emit(Event.of(events.SessionEnd(reason=reason), self._vt))
