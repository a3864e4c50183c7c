"""The engine's knobs: each pair's values read from the hosts, set initially, and changed
live (a change opens a new phase; one only new connections see restarts the pairs' runs).

The one place a host's or an option's error becomes a refusal (KnobRefused); a refused change
leaves every pair's phase as it was.
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import Mapping, Sequence

from abtui.core import events
from abtui.core.configuration import pair_value
from abtui.core.errors import AbtuiError, KnobRefused
from abtui.core.events import Event
from abtui.core.model import Knob, KnobKind, now
from abtui.measure.engine_base import EngineBase
from abtui.measure.plan import TUNNEL
from abtui.remote.iperf_cmd import options_for


class EngineKnobs(EngineBase):
    """Knob values read and changed; see the module docstring."""

    def _knob(self, name: str) -> Knob:
        try:
            return self.profile.knob(name)
        except KeyError:
            if name == TUNNEL:  # the profile's tunnel types, without a knob of that name
                return Knob(name=TUNNEL, kind=KnobKind.TUNNEL, values=self.profile.tunnels)
            raise KnobRefused(f"no knob named {name!r} in the profile") from None

    # ---- reading ------------------------------------------------------------------------
    async def _read_current(self) -> None:
        """Every knob's value on every pair, read from the hosts: the first phase's
        configuration, emitted as CONFIG per pair (what the console shows and cycles from).
        A knob that no host of a pair could say is left out of that pair's configuration."""
        knobs = list(self.profile.knobs)
        if set(self.profile.tunnels) - {"none"} and \
                not any(k.kind is KnobKind.TUNNEL for k in knobs):
            knobs.append(self._knob(TUNNEL))
        found = await asyncio.gather(*(self._current(k) for k in knobs),
                                     return_exceptions=True)
        for label, phases in self.phases.items():
            config = {k.name: values[label] for k, values in zip(knobs, found, strict=True)
                      if isinstance(values, dict) and label in values}
            phases.config = config
            self.emit(Event.of(events.Config(config=dict(config)), pair=label))

    async def _current(self, knob: Knob) -> dict[str, str]:
        """One knob's value now, per pair it applies to."""
        labels = [x for x in self.phases if not knob.pairs or x in knob.pairs]
        if knob.kind is KnobKind.TUNNEL:
            return dict.fromkeys(labels, "none")  # abtui makes every tunnel it measures
        if knob.kind is KnobKind.IPERF3:
            return {x: self._iperf3_current(knob, x) for x in labels}
        by_role = await self.applier.current(knob, [self.profile.pair(x) for x in labels])
        return {x: pair_value(roles) for x, roles in by_role.items()}

    def _iperf3_current(self, knob: Knob, label: str) -> str:
        """An iperf3 knob's value in the pair's test options, as the profile writes it."""
        from abtui.profile.knobs import IPERF3_KEYS, iperf3_value

        key = knob.key or knob.name
        value = getattr(self._options(self.profile.pair(label)), key, None)
        if key in IPERF3_KEYS:
            for v in knob.values:
                with contextlib.suppress(ValueError, KeyError):
                    if iperf3_value(key, v) == value:
                        return v
        if isinstance(value, bool):
            return "on" if value else "off"
        return "default" if value is None else str(value)

    async def _apply_initial(self) -> None:
        """Knobs with an `initial` value are set before anything runs: the first phase's
        configuration (a refusal is reported and the host's own value stays)."""
        for knob in self.profile.knobs:
            if knob.initial is None:
                continue
            labels = list(knob.pairs) or list(self.phases)
            try:
                await self._apply(knob, knob.initial, labels)
            except KnobRefused:
                continue
            for label in labels:
                self.phases[label].config[knob.name] = knob.initial

    # ---- changing -----------------------------------------------------------------------
    async def set_knob(self, knob: str, value: str, pairs: Sequence[str] | None = None) -> None:
        k = self._knob(knob)
        labels = list(pairs) if pairs else (list(k.pairs) or list(self.phases))
        unknown = [label for label in labels if label not in self.phases]
        if unknown:
            raise KnobRefused(f"knob {knob}: no pair named {', '.join(unknown)}")
        # a pair whose hosts have the value already is not changed: no new phase for it
        labels = [label for label in labels if self.phases[label].config.get(k.name) != value]
        if not labels:
            return
        begin = now()
        for label in labels:
            self.phases[label].begin_change(begin)
        # a setting only new connections see: the pairs' runs end (continuous: `_follow`
        # starts the next; a plan's step: `_stream` measures it again)
        restarts = k.restart or k.kind in (KnobKind.TUNNEL, KnobKind.IPERF3)
        retired = [self._runs[x] for x in labels if restarts and x in self._runs]
        for run in retired:  # its connection keeps the old setting: counted nowhere after
            run.retired_at = begin
        if restarts:
            self._settings_changed(labels)
        try:
            targets = await self._apply(k, value, labels)
        except KnobRefused:
            for label in labels:
                self.phases[label].abort_change()
            for run in retired:
                run.retired_at = None
            raise
        finally:
            if restarts:
                self._settings_changed(labels)
        end = now()
        for label in labels:
            closed = self.phases[label].commit_change(begin, end, {knob: value})
            if closed is not None:
                self.emit(closed)
            self.phases[label].measured = label in self._runs  # a run goes on into it
        if restarts or targets:
            await self._restart_pairs(labels, begin)

    async def _apply(self, k: Knob, value: str, labels: Sequence[str]) -> Mapping[str, str]:
        """Apply on the hosts (or the test options); KNOB or KNOB_ERROR, TUNNEL per pair."""
        try:
            if k.kind is KnobKind.IPERF3:
                self._set_iperf3_option(k, value, labels)
                targets: Mapping[str, str] = {}
            else:
                targets = await self.applier.apply(k, value, [self.profile.pair(x)
                                                              for x in labels])
        except AbtuiError as exc:  # the one place a host's or an option's error becomes a refusal
            self.emit(Event.of(events.KnobError(knob=k.name, value=value, message=str(exc))))
            raise exc if isinstance(exc, KnobRefused) else KnobRefused(str(exc)) from exc
        if k.kind is not KnobKind.IPERF3:
            for label in labels:
                self._applied.setdefault(label, set()).add(k.name)
        self.emit(Event.of(events.Knob(knob=k.name, value=value, pairs=list(labels),
                                       hosts=self._hosts(k, labels))))
        for label, target in targets.items():
            self.targets[label] = target
            self.emit(Event.of(events.Tunnel(type=value, target=target), pair=label))
        return targets

    def _hosts(self, knob: Knob, labels: Sequence[str]) -> list[str]:
        return list(dict.fromkeys(self.profile.pair(label).host(role)
                                  for label in labels for role in knob.scope.roles))

    def _set_iperf3_option(self, knob: Knob, value: str, labels: Sequence[str]) -> None:
        """An iperf3 knob's key names a test option (parallel, reverse, congestion, ...);
        BadInput (which `_apply` reports as the refusal) when the value does not fit."""
        from abtui.profile.knobs import iperf3_setting

        key, converted = iperf3_setting(knob, value)
        for label in labels:
            options_for(self.profile.test, self.profile.pair(label),
                        {**self.live_options[label], key: converted})
        for label in labels:
            self.live_options[label][key] = converted

    def _settings_changed(self, labels: Sequence[str]) -> None:
        for label in labels:
            self._settings[label] += 1

    async def _restart_pairs(self, labels: Sequence[str], since: float) -> None:
        """End the pairs' current runs, counted nowhere after `since` (one released while
        the change was made may have either setting); `_follow` (continuous) or `_stream`
        (a plan's step) start new ones right away."""
        running = [self._runs[label] for label in labels if label in self._runs]
        for run in running:
            if run.retired_at is None:
                run.retired_at = since
        await asyncio.gather(*(run.stop() for run in running), return_exceptions=True)
