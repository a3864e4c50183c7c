"""The engine's knob changer: each pair's values read from the hosts, set initially, and
changed live. A change opens a new phase and, unless the knob acts on open traffic
(`Knob.restarts`: by default every change restarts), restarts the pairs' runs: a value
reaches only connections opened after it is set, so what the old connection measures after
the change began counts nowhere. `again` (an alternation's stretch boundary) restarts every
pair's runs alike, the value kept or changed, live knob or not, and clears what one
connection leaves to the next on the hosts (the TCP metrics cache) before the new runs
start. It is given the phase book, the runs and the knob layer (the applier); changes are
made one at a time (`changing`, which the host verifier's re-apply holds too).

The one place a host's or an option's error becomes a refusal (KnobRefused); a refused change
leaves every pair's phase as it was.
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import Awaitable, Callable, Mapping, Sequence
from typing import TYPE_CHECKING, Protocol

from abtui.core import events
from abtui.core.configuration import pair_value
from abtui.core.dimensions import TUNNEL
from abtui.core.errors import AbtuiError, BadInput, KnobRefused
from abtui.core.events import Event
from abtui.core.model import BUILD_KINDS, Knob, KnobKind, Profile, now
from abtui.measure.ports import Emit, KnobApplier, NoKnobs
from abtui.remote.iperf_cmd import options_for
from abtui.remote.link import HostLink

if TYPE_CHECKING:  # types only: the objects are handed in by their owner
    from abtui.measure.phase_book import PhaseBook
    from abtui.measure.run.pair import PairRun

# Builds the knob layer once links exist: (links by alias, emit) -> applier.
KnobApplierFactory = Callable[[Mapping[str, HostLink], Emit], KnobApplier]


class Runs(Protocol):
    """What the knob changer needs of the runs (abtui.measure.engine.runs.RunScheduler)."""

    def running(self, label: str) -> PairRun | None:
        """The pair's run released and not yet ended, if any."""
        ...

    async def restart(self, labels: Sequence[str], since: float, clear: bool = False) -> None:
        """End the pairs' runs, counted nowhere after `since`; new ones follow (`clear`: once
        the hosts have forgotten what the old connections left, the TCP metrics cache)."""
        ...


class Pauses(Protocol):
    """What a build switch needs of the host verifier (abtui.measure.engine.verify)."""

    def hold_switch(self, aliases: Sequence[str], since: float, wait_s: float) -> None:
        """No run starts on these hosts until they are read again (at most `wait_s`)."""
        ...

    def recheck(self, aliases: Sequence[str]) -> None:
        """Read these hosts again: what the switch reset is re-applied."""
        ...


# how long a switching pair waits beyond its builds' own timeout
SWITCH_MARGIN_S = 30.0


class KnobChanger:
    """Knob values read and changed; see the module docstring."""

    def __init__(self, profile: Profile, book: PhaseBook, runs: Runs, emit: Emit) -> None:
        self.profile = profile
        self._book = book
        self._runs = runs
        self._emit = emit
        self._applier: KnobApplier = NoKnobs()
        # per pair, the knobs abtui wrote (what a reconnected host gets back)
        self._applied: dict[str, set[str]] = {}
        self.changing = asyncio.Lock()
        # a build switch's pause of its pairs' runs (the engine gives its host verifier)
        self.pauses: Pauses | None = None
        self._read_back: Callable[[], Awaitable[object]] | None = None  # read_back_first

    @property
    def applier(self) -> KnobApplier:
        """The knob layer: values read, changed and restored on the hosts."""
        return self._applier

    def use(self, applier: KnobApplier) -> None:
        """The knob layer from now on (the engine's, made once the links exist)."""
        self._applier = applier

    def pause_with(self, pauses: Pauses) -> None:
        """What holds a build switch's pairs' runs (the engine's host verifier)."""
        self.pauses = pauses

    def applied(self, label: str) -> set[str]:
        """The knobs abtui wrote on the pair's hosts (not iperf3 options)."""
        return self._applied.get(label, set())

    def knob(self, name: str) -> Knob:
        """The profile's knob `name` (the tunnel types without a knob of that name);
        KnobRefused when there is none."""
        try:
            return self.profile.knob(name)
        except KeyError:
            if name == TUNNEL:  # the profile's tunnel types, without a knob of that name
                return Knob(name=TUNNEL, kind=KnobKind.TUNNEL, values=self.profile.tunnels)
            raise KnobRefused(f"no knob named {name!r} in the profile") from None

    # ---- reading ------------------------------------------------------------------------
    async def read_current(self) -> None:
        """Every knob's value on every pair, read from the hosts: the first phase's
        configuration, emitted as CONFIG per pair (what the console shows and cycles from).
        A knob that no host of a pair could say is left out of that pair's configuration."""
        knobs = list(self.profile.knobs)
        if set(self.profile.tunnels) - {"none"} and \
                not any(k.kind is KnobKind.TUNNEL for k in knobs):
            knobs.append(self.knob(TUNNEL))
        found = await asyncio.gather(*(self._current(k) for k in knobs),
                                     return_exceptions=True)
        for label, phases in self._book.phases.items():
            config = {k.name: values[label] for k, values in zip(knobs, found, strict=True)
                      if isinstance(values, dict) and label in values}
            phases.configured(config)
            self._emit(Event.of(events.Config(config=dict(config)), pair=label))

    async def _current(self, knob: Knob) -> dict[str, str]:
        """One knob's value now, per pair it applies to."""
        labels = [x for x in self._book.phases if not knob.pairs or x in knob.pairs]
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
        value = getattr(self._book.options(self.profile.pair(label)), key, None)
        if key in IPERF3_KEYS:
            for v in knob.values:
                with contextlib.suppress(ValueError, KeyError):
                    if iperf3_value(key, v) == value:
                        return v
        if isinstance(value, bool):
            return "on" if value else "off"
        return "default" if value is None else str(value)

    async def apply_initial(self) -> None:
        """Knobs with an `initial` value are set before anything runs: the first phase's
        configuration (a refusal is reported and the host's own value stays). Builds first:
        a boot or a reload would lose what was set before it."""
        for knob in sorted(self.profile.knobs, key=lambda k: k.kind not in BUILD_KINDS):
            if knob.initial is None:
                continue
            labels = list(knob.pairs) or list(self._book.phases)
            try:
                await self._apply(knob, knob.initial, labels)
            except KnobRefused:
                continue
            for label in labels:
                self._book.phases[label].config[knob.name] = knob.initial

    # ---- changing -----------------------------------------------------------------------
    def labels(self, knob: str, pairs: Sequence[str] | None = None) -> list[str]:
        """The pairs a change of `knob` on `pairs` reaches: those, else the knob's own, else
        every pair."""
        return list(pairs) if pairs else (list(self.knob(knob).pairs) or list(self._book.phases))

    def read_back_first(self, read_back: Callable[[], Awaitable[object]]) -> None:
        """What every change does before it writes anything (the engine's drift watch: a
        value someone else set is seen first)."""
        self._read_back = read_back

    async def set_values(self, knob: str, values: Mapping[str, str],
                         again: bool = False) -> None:
        """Set `knob` on each pair to its own value, in one change (a crossover's boundary:
        both pairs switch together, each to another value; a build switch holds and boots
        every pair's hosts at once). A pair whose value is refused stays as it was (its
        phase goes on); the others take theirs; KnobRefused names the first refusal.
        `again`: a new stretch (an alternation's boundary): every pair's runs restart, the
        value changed or not, and the hosts forget what the old connections left (the TCP
        metrics cache) before the new ones open; a build knob's hosts boot (reload) their
        build even when it is unchanged (a new phase: a build alternation's stretch is one
        boot). The engine's one knob entry point (Engine.set_values is this method; its
        set_knob names the pairs first); never at once with a reconnected host's re-apply."""
        if self._read_back is not None:
            await self._read_back()
        async with self.changing:  # (the change in line: a flip's path has no relay)
            k = self.knob(knob)
            unknown = [label for label in values if label not in self._book.phases]
            if unknown:
                raise KnobRefused(f"knob {knob}: no pair named {', '.join(unknown)}")
            boot = again and k.kind in BUILD_KINDS
            # a pair whose hosts have the value already is not changed: no new phase for it (a
            # build's boot again is one: each boot its own phase)
            wanted = {x: v for x, v in values.items()
                      if boot or self._book.phases[x].config.get(k.name) != v}
            labels = list(wanted)
            # a new stretch: the kept pairs' runs restart too (and the changed pairs' whatever
            # the knob's kind), so no boundary is told from another by how it treats the runs
            kept = [x for x in values if again and x not in wanted]
            if not labels and not kept:
                return
            begin = now()
            for label in labels:
                self._book.phases[label].begin_change(begin)
            # a setting only new connections see: the pairs' runs end (continuous: `_follow`
            # starts the next; a plan's step: `_stream` measures it again)
            restarts = again or k.restarts
            ending = [*labels, *kept] if restarts else []
            retired = {x: r for x in ending if (r := self._runs.running(x)) is not None}
            for run in retired.values():  # its connection keeps the old setting: counted nowhere
                run.retire(begin)
            if restarts:
                self._book.settings_changed(ending)
            paused = await self._pause(k, labels, begin)
            groups: dict[str, list[str]] = {}
            for label, value in wanted.items():
                groups.setdefault(value, []).append(label)
            try:  # each value on its pairs, at once (the knob layer's calls themselves)
                outcomes = await asyncio.gather(*(self._call(k, v, xs, boot)
                                                  for v, xs in groups.items()),
                                                return_exceptions=True)
                got = [self._outcome(k, v, xs, o)
                       for (v, xs), o in zip(groups.items(), outcomes, strict=True)]
            finally:
                if restarts:
                    self._book.settings_changed(ending)
                if paused and self.pauses is not None:  # what the switch reset: re-applied
                    self.pauses.recheck(paused)
            refused = [e for e in got if isinstance(e, BaseException)]
            if any(not isinstance(e, KnobRefused) for e in refused):
                raise next(e for e in refused if not isinstance(e, KnobRefused))
            done: list[str] = []
            targets: dict[str, str] = {}
            # a pair whose value was refused keeps its phase, but its run, retired since the
            # change began (its intervals since straddle), is restarted under the same value
            unchanged: list[str] = []
            for (value, xs), result in zip(groups.items(), got, strict=True):
                if isinstance(result, BaseException):
                    for label in xs:
                        self._book.phases[label].abort_change()
                        if label in retired:
                            unchanged.append(label)
                    continue
                targets |= result
                done += xs
                end = now()
                for label in xs:
                    closed = self._book.phases[label].commit_change(begin, end, {knob: value})
                    if closed is not None:
                        self._emit(closed)
                    # a run goes on into it
                    self._book.phases[label].running(self._runs.running(label) is not None)
            if again:  # a new stretch: forgotten, then measured afresh
                ended = [*done, *kept, *unchanged]
            else:
                ended = [*done, *unchanged] if restarts or targets else []
            if ended:
                await self._runs.restart(ended, begin, clear=again)
            if refused:
                raise refused[0]

    async def _pause(self, k: Knob, labels: Sequence[str], begin: float) -> list[str]:
        """A build switch: the pairs' hosts held (no run starts there until they are read
        again after it) and their runs ended before the hosts go down; the hosts held."""
        if k.kind not in BUILD_KINDS or self.pauses is None:
            return []
        hosts = list(dict.fromkeys(h for x in labels for h in (self.profile.pair(x).sender,
                                                                self.profile.pair(x).receiver)))
        wait = max((b.timeout + b.command_timeout for b in k.builds.values()), default=0.0)
        self.pauses.hold_switch(hosts, begin, wait + SWITCH_MARGIN_S)
        await self._runs.restart(labels, begin)
        return hosts

    async def _apply(self, k: Knob, value: str, labels: Sequence[str],
                     again: bool = False) -> Mapping[str, str]:
        """Apply on the hosts (or the test options); KNOB or KNOB_ERROR, TUNNEL per pair."""
        try:
            outcome: Mapping[str, str] | BaseException = await self._call(k, value, labels,
                                                                          again)
        except Exception as exc:
            outcome = exc
        got = self._outcome(k, value, labels, outcome)
        if isinstance(got, BaseException):
            raise got
        return got

    def _call(self, k: Knob, value: str, labels: Sequence[str],
              again: bool = False) -> Awaitable[Mapping[str, str]]:
        """The change of `k` on the pairs, to await: the knob layer's own call (the test
        options, for an iperf3 knob)."""
        if k.kind is KnobKind.IPERF3:
            return self._iperf3(k, value, labels)
        pairs = [self.profile.pair(x) for x in labels]
        return self.applier.apply(k, value, pairs, again=True) if again \
            else self.applier.apply(k, value, pairs)

    async def _iperf3(self, k: Knob, value: str, labels: Sequence[str]) -> Mapping[str, str]:
        self._set_iperf3_option(k, value, labels)
        return {}

    def _outcome(self, k: Knob, value: str, labels: Sequence[str],
                 outcome: Mapping[str, str] | BaseException) -> Mapping[str, str] | BaseException:
        """What a change's call came to, said: KNOB and TUNNEL per pair, or KNOB_ERROR and
        the refusal (returned, not raised: the one place a host's or an option's error
        becomes a refusal); any other exception returned as it is."""
        if isinstance(outcome, AbtuiError):
            self._emit(Event.of(events.KnobError(knob=k.name, value=value,
                                                 message=str(outcome))))
            if isinstance(outcome, KnobRefused):
                return outcome
            refused = KnobRefused(str(outcome), invalid=isinstance(outcome, BadInput))
            refused.__cause__ = outcome
            return refused
        if isinstance(outcome, BaseException):
            return outcome
        if k.kind is not KnobKind.IPERF3:
            for label in labels:
                self._applied.setdefault(label, set()).add(k.name)
        self._emit(Event.of(events.KnobChanged(knob=k.name, value=value, pairs=list(labels),
                                              hosts=self._hosts(k, labels))))
        for label, target in outcome.items():  # a tunnel switched, or made again after a reload
            self._book.targets[label] = target
            kind = value if k.kind is KnobKind.TUNNEL else self._tunnel_type(label)
            self._emit(Event.of(events.Tunnel(type=kind, target=target), pair=label))
        return outcome

    def _tunnel_type(self, label: str) -> str:
        """The pair's tunnel type now (its tunnel knob's value in its configuration)."""
        names = [k.name for k in self.profile.knobs if k.kind is KnobKind.TUNNEL] or [TUNNEL]
        return self._book.phases[label].config.get(names[0], "none")

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
                        {**self._book.live_options[label], key: converted})
        for label in labels:
            self._book.live_options[label][key] = converted
