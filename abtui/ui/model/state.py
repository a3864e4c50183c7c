"""What the console shows, folded from events: per-pair series and numbers, link states, the
phase table. Plain Python (no Textual) so it is fast to test and cheap to update per event; the
widgets read it when the app flushes a batch. The records it folds into are a pair's
(abtui.ui.model.pair_state) and the phase table's rows (abtui.ui.model.phase_rows); this module is
the folding: one handler per event kind, and what the knob bar and the table ask of the whole.
"""

from __future__ import annotations

from collections import deque
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from abtui.core import events
from abtui.core.configuration import config_changes, config_id, config_label
from abtui.core.cpu import SHARED as CPU_SHARED
from abtui.core.cpu import sample_figures
from abtui.core.dimensions import TUNNEL
from abtui.core.events import Event, EventKind, EventReader
from abtui.core.model import (
    KnobKind,
    LinkState,
    Profile,
    tunnel_refusal,
)
from abtui.core.numbers import Unit, layout_units, ms
from abtui.core.text import UNKNOWN
from abtui.reports.throughput import Segment, span_of
from abtui.ui.model.pair_state import HISTORY, Binned, PairState, Running
from abtui.ui.model.phase_rows import PhaseRow, phase_cells, table_unit

if TYPE_CHECKING:
    from abtui.measure.bisect.board import BisectBoard


@dataclass(slots=True)
class Dirty:
    """What changed since the last flush: which panes, the phase table, the knob bar."""

    pairs: set[str] = field(default_factory=set)
    phases: bool = False
    knobs: bool = False
    status: bool = False
    bisect: bool = False  # the bisect panel's lines
    verdicts: bool = False  # a journalled alternation's verdicts (recorded_verdicts)

    def __bool__(self) -> bool:
        return bool(self.pairs) or self.phases or self.knobs or self.status or self.bisect \
            or self.verdicts


# kinds no pane shows (a data link's counters: what they find comes as COMPETING): folding
# one repaints nothing
UNSHOWN = frozenset({EventKind.LINK_BYTES})

# the console's log says competing traffic again only after this long without any (s)
COMPETING_QUIET_S = 10.0

class ConsoleState(EventReader):
    """Folds controller events into what the panes, the table and the log show."""

    def __init__(self, profile: Profile, history: int = HISTORY) -> None:
        self.profile = profile
        self._competing_said: dict[str, float] = {}  # pair -> its last COMPETING's time
        self.base = profile.base_pair or (profile.pairs[0].label if profile.pairs else "")
        self.units = layout_units(profile.layout)  # rates in bits or bytes per second
        self.pairs: dict[str, PairState] = {}
        for p in profile.pairs:
            # unknown ("?") until the hosts say, on connect
            ps = PairState(p.label, p.sender, p.receiver, {})
            ps.units = self.units
            ps.bps = deque(maxlen=history)
            ps.rtt = deque(maxlen=history)
            ps.markers = deque(maxlen=history)
            self.pairs[p.label] = ps
        self.host_pairs: dict[str, list[str]] = {}
        for p in profile.pairs:
            for h in (p.sender, p.receiver):
                self.host_pairs.setdefault(h, []).append(p.label)
        self.phases: dict[str, PhaseRow] = {}
        # what phase labels are relative to: the base pair's configuration read on connect
        self.baseline: dict[str, str] | None = None
        self.dirty = Dirty()
        self.running = False
        self.progress: dict[str, Any] | None = None
        self.restoring: list[str] = []
        self.ended = False
        self.intervals_seen = 0
        # the knob of the last KNOB event: a flip by key, by the plan or by an alternation
        self.last_knob: str | None = None
        # host -> tunnel type -> "yes"/"kernel"/"userspace"/"no: why", as its facts said
        self.host_tunnels: dict[str, dict[str, str]] = {}
        # a bisection's panel, from its marks and looks (built by its plan's mark)
        self.bisect: BisectBoard | None = None
        self.recorded_verdicts: list[str] | None = None  # the last mark's verdicts, as lines

    # ---- folding ----------------------------------------------------------------------------
    def _phase_row(self, config: dict[str, str]) -> PhaseRow:
        key = config_id(config)
        row = self.phases.get(key)
        if row is None:
            row = self.phases[key] = PhaseRow(dict(config))
            self.dirty.phases = True
        return row

    def _new_phase(self, ps: PairState) -> None:
        """The pair enters its (new) configuration: fresh phase numbers, a new segment."""
        ps.phase = Running()
        ps.rtt_phase = Running()
        ps.rr_phase = Binned()
        ps.phase_segments = []
        self._new_segment(ps)

    def _new_segment(self, ps: PairState) -> None:
        """A new stretch (a run) in the phase: one more run-level value of its row."""
        ps.segment = Segment()
        ps.phase_segments.append(ps.segment)
        self._phase_row(ps.config).segments.setdefault(ps.label, []).append(ps.segment)

    def _drop_unmeasured(self, ps: PairState) -> None:
        """The run starts under another configuration than the pair's phase in force, which
        no interval came under (a plan's flip the run's own configuration overrode, as at a
        VM lab's start): that phase never was. Its empty stretch leaves its row, and a row
        left with no stretch at all leaves the table (else a row of `—` stays for good)."""
        key = config_id(ps.config)
        row = self.phases.get(key)
        if row is None or ps.segment is None or ps.segment.n or ps.label in row.per_pair:
            return
        mine = [s for s in row.segments.get(ps.label, []) if s is not ps.segment]
        if mine:
            row.segments[ps.label] = mine
        else:
            row.segments.pop(ps.label, None)
        if not row.segments and not row.per_pair:
            del self.phases[key]
            self.dirty.phases = True

    def _pairs_of(self, event: Event) -> list[str]:
        if event.pair is not None:
            return [event.pair] if event.pair in self.pairs else []
        if event.host is not None:
            return self.host_pairs.get(event.host, [])
        return []

    def apply(self, event: Event) -> str | None:
        """Fold one event in; returns a line for the event log, or None for routine ones."""
        if event.kind not in UNSHOWN:
            self.dirty.pairs.update(self._pairs_of(event))
        line: str | None = self.dispatch(event)
        return line

    def on_other(self, event: Event) -> str | None:
        return f"{event.kind}: {event.record()}"

    def on_interval(self, event: Event, p: events.IntervalMeasured) -> None:
        self.intervals_seen += 1
        for lb in self._pairs_of(event):
            self._interval(self.pairs[lb], p)

    def on_ping(self, event: Event, p: events.Ping) -> None:
        rtt = p.rtt_ms
        for lb in self._pairs_of(event):
            if isinstance(rtt, int | float):
                ps = self.pairs[lb]
                ps.rtt.append(float(rtt))
                if self._in_phase(ps, p.phase):
                    ps.rtt_phase.add(float(rtt))

    def on_rr(self, event: Event, p: events.RequestResponse) -> None:
        """A request/response load's round trips (they come as a run ends): the phase's."""
        for lb in self._pairs_of(event):
            ps = self.pairs[lb]
            if not self._in_phase(ps, p.phase) or not isinstance(p.bins, list):
                continue
            for b in p.bins:
                if (isinstance(b, list) and len(b) == 2
                        and all(isinstance(x, int | float) for x in b) and b[1] > 0):
                    ps.rr_phase.add(float(b[0]), int(b[1]))

    @staticmethod
    def _in_phase(ps: PairState, phase: object) -> bool:
        """Whether a reply of `phase` counts in the phase in force: a reply of the phase a
        flip ended comes late when ping is gathered on its host (a second at a time)."""
        if phase is None:
            return True
        if ps.phase_id is not None:
            return phase == ps.phase_id
        return ps.left_phase is None or phase != ps.left_phase

    def on_watch(self, event: Event, p: events.WatchSampled) -> None:
        return None

    def on_profile(self, event: Event, p: events.Profiled) -> None:
        return None  # a window of stacks: the why table (ctrl+y) reads them, not the log

    def on_counters(self, event: Event, p: events.CountersSampled) -> None:
        return None  # running totals: the why table turns them into rates

    def on_why(self, event: Event, p: events.WhyFound) -> str:
        moved = sum(1 for r in p.rows if isinstance(r, dict) and r.get("moved")) \
            if isinstance(p.rows, list) else 0
        return f"why: the profiles judged, {moved} frames moved (export: the Why section)"

    def on_cpu(self, event: Event, p: events.Cpu) -> None:
        got = sample_figures(p)
        if got is None:
            return
        for lb in self._pairs_of(event):
            ps = self.pairs[lb]
            ps.cpu["sender" if event.host == ps.sender else "receiver"] = got

    def on_phase(self, event: Event, p: events.Phase) -> None:
        return None

    def on_link(self, event: Event, p: events.Link) -> str:
        """A host's link state; one that could not connect keeps saying so when its link is
        then closed (a failed start closes every link): it never was up."""
        state = str(p.state if p.state is not None else "")
        host = str(event.host)
        for lb in self._pairs_of(event):
            links = self.pairs[lb].links
            if not (state == LinkState.CLOSED and links.get(host) == LinkState.FAILED):
                links[host] = state
        msg = f": {p.message}" if p.message else ""
        return f"{event.host}: link {state}{msg}"

    def on_facts(self, event: Event, p: events.Facts) -> str:
        facts = p.facts or {}
        for lb in self._pairs_of(event):
            self.pairs[lb].kernels[str(event.host)] = str(facts.get("kernel_release", ""))
            if facts.get("cpu_scope") == CPU_SHARED:
                self.pairs[lb].cpu_shared.add(str(event.host))
        tunnels = facts.get("tunnels")
        if isinstance(tunnels, dict) and tunnels:
            self.host_tunnels[str(event.host)] = {str(k): str(v) for k, v in tunnels.items()}
        return f"{event.host}: {facts.get('os', '')} {facts.get('kernel_release', '')}"

    def on_config(self, event: Event, p: events.Config) -> str | None:
        return self._config(event.pair, p.config)

    def on_run_start(self, event: Event, p: events.RunStart) -> str:
        for lb in self._pairs_of(event):
            ps = self.pairs[lb]
            config = ps.config
            if isinstance(p.config, dict):  # the engine's: what the hosts have
                config = {str(k): str(v) for k, v in p.config.items()}
            phase = p.phase
            # a new run in the phase in force (a restart, a retry) is a new stretch of
            # it, not a new phase: the pane's phase numbers go on
            same = ps.segment is not None and config == ps.config and (
                phase is None or ps.phase_id is None or phase == ps.phase_id)
            if config != ps.config:
                self._drop_unmeasured(ps)
            ps.config, ps.phase_id = config, phase
            ps.status = "running"
            ps.error = ""
            if same:
                self._new_segment(ps)
            else:
                self._new_phase(ps)
        self.running = True
        self.dirty.status = self.dirty.knobs = True
        return f"pair {event.pair}: run {p.run} started"

    def on_run_end(self, event: Event, p: events.RunEnd) -> str:
        for lb in self._pairs_of(event):
            self.pairs[lb].status = str(p.status if p.status is not None else "ended")
            if p.status == "error":
                self.pairs[lb].error = str(p.message if p.message is not None else "")
        self.running = any(ps.status == "running" for ps in self.pairs.values())
        self.dirty.status = True
        return f"pair {event.pair}: run ended ({p.status})"

    def on_knob(self, event: Event, p: events.KnobChanged) -> str:
        return self._knob(p)

    def on_tunnel(self, event: Event, p: events.Tunnel) -> str:
        for lb in self._pairs_of(event):
            self.pairs[lb].tunnel = str(p.type if p.type is not None else "")
        return f"pair {event.pair}: tunnel {p.type}"

    def on_knob_error(self, event: Event, p: events.KnobError) -> str:
        return f"knob {p.knob}={p.value} refused: {p.message}"

    def on_error(self, event: Event, p: events.Error) -> str:
        for lb in self._pairs_of(event):
            self.pairs[lb].error = str(p.message if p.message is not None else "")
        where = event.pair or event.host or "abtui"
        return f"error {where}: {p.message}"

    def on_link_bytes(self, event: Event, p: events.LinkBytes) -> None:
        """A data link's counters: routine (what they show comes as COMPETING)."""
        return None

    def on_host_state(self, event: Event, p: events.HostStateRead) -> str | None:
        """A host's state beside the knobs, read at the session's start or end: said once
        per host and moment, with what it could not read."""
        gone = len(p.unavailable) if isinstance(p.unavailable, dict) else 0
        count = len(p.items) if isinstance(p.items, dict) else 0
        return (f"{event.host}: host state at {p.moment}: {count} settings read"
                + (f", {gone} not readable" if gone else ""))

    def on_competing(self, event: Event, p: events.CompetingTraffic) -> str | None:
        """Traffic not ours on a pair's data link: said when it begins (after
        COMPETING_QUIET_S without any), not for every span while it goes on (the session
        keeps every span)."""
        key = event.pair or ""
        last = self._competing_said.get(key)
        self._competing_said[key] = event.t
        if last is not None and event.t - last < COMPETING_QUIET_S:
            return None
        return f"pair {event.pair}: {p.line(event.host)}"

    def on_drift(self, event: Event, p: events.Drift) -> str:
        """A reconnected host had another value (its phase ended): said in the log."""
        self.dirty.knobs = True
        return p.line(event.host)

    def on_switch(self, event: Event, p: events.BuildSwitch) -> str:
        """A host booting or reloading another build, up on it, or failed: said in the log."""
        return p.line(event.host)

    def on_mark(self, event: Event, p: events.Mark) -> str:
        for ps in self.pairs.values():
            ps.pending_marker = True
        if isinstance(p.bisect, dict):
            self._bisect_mark(p.bisect, p.text)
        if isinstance(p.verdicts, list) and p.verdicts:
            from abtui.reports.alternation import panel_lines

            # the recording's verdicts, for a console that shows a recording (view --follow)
            self.recorded_verdicts = panel_lines(str(p.text), p.verdicts)
            self.dirty.verdicts = True
        return f"mark: {p.text}"

    def _bisect_mark(self, row: dict[str, Any], text: str) -> None:
        """A bisection's plan (a new panel), step, stop or answer."""
        if "plan" in row:
            from abtui.measure.bisect.board import BisectBoard  # numpy: only when bisecting

            self.bisect = BisectBoard.of(row["plan"])
        elif self.bisect is not None:
            self.bisect.step(row, text)
        self.dirty.bisect = True

    def on_bisect(self, event: Event, p: events.BisectLook) -> None:
        """A bisection's step as it goes: the panel's step line."""
        if self.bisect is not None:
            self.bisect.look = p
            self.dirty.bisect = True

    def on_progress(self, event: Event, p: events.Progress) -> None:
        self.progress = p.to_data()  # the plan's progress as the knob bar reads it
        self.dirty.status = True

    def on_restore(self, event: Event, p: events.Restore) -> str:
        ok = "restored" if p.ok else f"NOT restored ({p.message})"
        line = f"{event.host}: {p.knob}={p.value} {ok}"
        self.restoring.append(line)
        self.dirty.status = True
        return line

    def on_session_end(self, event: Event, p: events.SessionEnd) -> str:
        self.ended = True
        self.dirty.status = True
        return f"session ended ({p.reason})"

    def on_skew(self, event: Event, p: events.Skew) -> str:
        skew = p.skew_ms
        known = isinstance(skew, int | float) and not isinstance(skew, bool)
        return f"start skew {ms(skew)} ms" if known else f"start skew {UNKNOWN}"

    def on_session_start(self, event: Event, p: events.SessionStart) -> str:
        where = p.profile_path or self.profile.name
        version = p.abtui_version if p.abtui_version is not None else "?"
        return f"session started ({where}, abtui {version})"

    def on_original(self, event: Event, p: events.Original) -> str:
        return f"{event.host}: {p.knob} was {p.value}"

    def _config(self, pair: str | None, config: Any) -> str | None:
        """A pair's configuration as its hosts reported it on connect."""
        if pair not in self.pairs or not isinstance(config, dict):
            return None
        ps = self.pairs[pair]
        ps.config = {str(k): str(v) for k, v in config.items()}
        ps.original = dict(ps.config)
        for name, value in ps.config.items():
            if self._is_tunnel(name):
                ps.tunnel = value
        if pair == self.base or self.baseline is None:
            self.baseline = dict(ps.config)
            self.dirty.phases = True  # labels are relative to it
        self.dirty.knobs = True
        shown = " ".join(f"{k}={v}" for k, v in ps.config.items())
        return f"pair {pair}: hosts have {shown or 'no knobs'}"

    def _is_tunnel(self, name: str) -> bool:
        try:
            return self.profile.knob(name).kind is KnobKind.TUNNEL
        except KeyError:
            return name == TUNNEL

    def knob_value(self, name: str, pairs: list[str]) -> str:
        """A knob's value on the pairs of a scope as the hosts have it: one value when they
        agree, else each pair's (`A:reno B:bbr`); `?` where the hosts have not said."""
        values = {lb: self.pairs[lb].config.get(name, "?") for lb in pairs if lb in self.pairs}
        if len(set(values.values())) <= 1:
            return next(iter(values.values()), "?")
        return " ".join(f"{lb}:{v}" for lb, v in values.items())

    def pairs_failed(self, pairs: list[str], message: str) -> None:
        """A console call failed on these pairs: their panes say so until the next run."""
        for label in pairs:
            if label in self.pairs:
                self.pairs[label].error = message
                self.dirty.pairs.add(label)

    def row_label(self, row: PhaseRow) -> str:
        """The phase table's name for a row (abtui.core.configuration: what export prints):
        the baseline's own row named by its values of the knobs the other rows change, as
        the report names it (not `initial`)."""
        return ", ".join(f"{k}={v}" for k, v in self.row_parts(row)) or \
            config_label(row.config, self.baseline)

    def row_parts(self, row: PhaseRow) -> list[tuple[str, str]]:
        """The knobs a row's label names, `(knob, value)` (what abtui.core.labels fits into
        a narrow column)."""
        parts = config_changes(row.config, self.baseline)
        if parts:
            return parts
        changed = sorted({k for r in self.phases.values()
                          for k, _ in config_changes(r.config, self.baseline)})
        return [(k, str(row.config[k])) for k in changed if k in row.config]

    def tunnel_choices(self, types: list[str], pairs: list[str]) -> list[tuple[str, str]]:
        """Each tunnel type with why it cannot be had on these pairs ("" when it can): the
        first host that said no. A host that did not say is taken to support it."""
        out = []
        for t in types:
            why = ""
            for lb in pairs:
                ps = self.pairs[lb]
                for host in (ps.sender, ps.receiver):
                    refusal = tunnel_refusal(self.host_tunnels.get(host, {}).get(t, "yes"))
                    if not why and refusal is not None:
                        why = f"{host}: {refusal}"
            out.append((t, why))
        return out

    def _interval(self, ps: PairState, d: events.IntervalMeasured) -> None:
        rate = d.rate()
        if rate is None:
            return
        bps, way_back = rate
        if ps.phase_id is None and d.phase is not None:
            ps.phase_id = d.phase
        if way_back:  # --bidir's way back: shown, never mixed into the pair's own series
            ps.rx_bps = bps
            return
        ps.show(bps, d)
        if d.straddles:
            # measured across a knob change: shown, but counted in neither phase (as in
            # abtui.sessions.session), so the table agrees with the exported report
            self.dirty.pairs.add(ps.label)
            return
        ps.phase.add(bps)
        row = self._phase_row(ps.config)
        row.per_pair.setdefault(ps.label, Running()).add(bps)
        if ps.segment is None:
            self._new_phase(ps)
        assert ps.segment is not None
        ps.segment.add(bps, span_of(d.start, d.end))
        self.dirty.phases = True

    def _knob(self, d: events.KnobChanged) -> str:
        name, value = str(d.knob), str(d.value)
        self.last_knob = name
        labels = [lb for lb in d.pairs or [] if lb in self.pairs]
        is_tunnel = self._is_tunnel(name)
        for lb in labels:
            ps = self.pairs[lb]
            ps.config[name] = value
            ps.pending_marker = True
            if is_tunnel:
                ps.tunnel = value
            # the engine opened a phase: its id comes with what follows
            ps.left_phase, ps.phase_id = ps.phase_id, None
            self._new_phase(ps)
        self.dirty.pairs.update(labels)
        self.dirty.knobs = True
        return f"knob {name}={value} on {', '.join(labels) or 'no pair'}"

    # ---- reading ----------------------------------------------------------------------------
    def take_dirty(self) -> Dirty:
        d, self.dirty = self.dirty, Dirty()
        return d

    def scale(self) -> tuple[float, float]:
        """The shared maxima (throughput, RTT) of every pane's visible history."""
        bmax = max((max(p.bps) for p in self.pairs.values() if p.bps), default=1.0)
        rmax = max((max(p.rtt) for p in self.pairs.values() if p.rtt), default=1.0)
        return bmax, rmax

    def rate_unit(self) -> Unit:
        """The phase table's one unit (abtui.ui.model.phase_rows.table_unit)."""
        return table_unit(self.phases.values(), self.pairs, self.units)

    def phase_cells(self, row: PhaseRow, unit: Unit | None = None) -> list[str]:
        """One cell per pair in `unit` (the table's, rate_unit(), when not given;
        abtui.ui.model.phase_rows.phase_cells)."""
        return phase_cells(row, self.pairs, self.base, unit or self.rate_unit())
