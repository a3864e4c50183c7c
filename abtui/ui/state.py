"""What the console shows, folded from events: per-pair series and numbers, link states, the
phase table. Plain Python (no Textual) so it is fast to test and cheap to update per event;
the widgets read it when the app flushes a batch.
"""

from __future__ import annotations

import math
from collections import deque
from dataclasses import dataclass, field
from typing import Any

from abtui.core.configuration import config_id, config_label
from abtui.core.cpu import SHARED as CPU_SHARED
from abtui.core.cpu import sample_figures
from abtui.core.model import (
    Event,
    EventKind,
    KnobKind,
    LinkState,
    Profile,
    interval_loss,
    interval_rate,
    tunnel_refusal,
)
from abtui.reports.throughput import Segment, change_pct, configuration_rate, run_values, span_of

HISTORY = 120  # intervals kept per sparkline


config_key = config_id  # a phase row's identity: the one rule of abtui.core.configuration


@dataclass(slots=True)
class Running:
    """Count, mean, min and max of a stream of numbers (a phase's, a segment's)."""

    n: int = 0
    total: float = 0.0
    lo: float = math.inf
    hi: float = -math.inf

    def add(self, x: float) -> None:
        self.n += 1
        self.total += x
        self.lo = min(self.lo, x)
        self.hi = max(self.hi, x)

    @property
    def mean(self) -> float:
        return self.total / self.n if self.n else math.nan


@dataclass(slots=True)
class PairState:
    label: str
    sender: str
    receiver: str
    config: dict[str, str]  # what the hosts have (read on connect, then each applied flip)
    phase_id: Any = None  # the engine's phase in force (None: a flip opened one, id not seen)
    original: dict[str, str] = field(default_factory=dict)  # as read on connect
    bps: deque[float] = field(default_factory=lambda: deque(maxlen=HISTORY))
    rtt: deque[float] = field(default_factory=lambda: deque(maxlen=HISTORY))
    markers: deque[bool] = field(default_factory=lambda: deque(maxlen=HISTORY))
    pending_marker: bool = False
    phase: Running = field(default_factory=Running)
    rtt_phase: Running = field(default_factory=Running)
    segment: Segment | None = None  # the current stretch, in its phase row
    links: dict[str, str] = field(default_factory=dict)  # host -> LinkState
    kernels: dict[str, str] = field(default_factory=dict)  # host -> release
    tunnel: str = "none"
    retransmits: int | None = None
    retransmits_total: int = 0
    cwnd: int | None = None
    rx_bps: float | None = None  # --bidir: the latest receiver -> sender interval
    # UDP: the latest interval's datagrams lost (%) and jitter (ms); None for TCP
    loss_pct: float | None = None
    jitter_ms: float | None = None
    intervals: int = 0
    error: str = ""
    status: str = "idle"
    # host CPU, latest sample: "sender"/"receiver" -> (busy % of one core, softirq %);
    # hosts whose CPU figures are the whole machine's (namespace hosts)
    cpu: dict[str, tuple[float, float]] = field(default_factory=dict)
    cpu_shared: set[str] = field(default_factory=set)

    @property
    def link(self) -> str:
        """The worst link state of the pair's hosts (what the pane shows)."""
        states = [self.links.get(h, LinkState.CONNECTING) for h in (self.sender, self.receiver)]
        for s in (LinkState.FAILED, LinkState.LOST, LinkState.RECONNECTING, LinkState.CLOSED,
                  LinkState.CONNECTING):
            if s in states:
                return str(s)
        return str(LinkState.CONNECTED)


@dataclass(slots=True)
class PhaseRow:
    config: dict[str, str]
    per_pair: dict[str, Running] = field(default_factory=dict)  # every interval
    segments: dict[str, list[Segment]] = field(default_factory=dict)  # one per stretch


@dataclass(slots=True)
class Dirty:
    """What changed since the last flush: which panes, the phase table, the knob bar."""

    pairs: set[str] = field(default_factory=set)
    phases: bool = False
    knobs: bool = False
    status: bool = False

    def __bool__(self) -> bool:
        return bool(self.pairs) or self.phases or self.knobs or self.status


# Filled by the console from a background thread (abtui.reports.stats needs numpy, its test scipy:
# ~1.5 s of imports that must not delay the first frame or stall the screen):
# "stats" -> the module, "scipy" -> True once scipy.stats is imported; "want_scipy" asks.
LOADED: dict[str, Any] = {}


def significance(base: list[Segment], other: list[Segment]) -> str:
    """abtui.reports.stats' verdict on run-level values (abtui.reports.throughput: one per
    segment, a stretch of one run under this configuration; intervals within a run are not
    independent): '*' significant, '~' not, '' while there are too few segments to ever reach
    significance, '…' while scipy is still loading for a test too large to enumerate
    (statistics are never imported on the way to the first frame)."""
    stats = LOADED.get("stats")
    if stats is None:
        return ""  # loads right after the first frame
    a, b = run_values(base), run_values(other)
    if stats.min_p(len(a), len(b)) > stats.ALPHA:
        return ""
    if len(a) + len(b) > stats.EXACT_MAX and not LOADED.get("scipy"):
        LOADED["want_scipy"] = True
        return "…"
    return "*" if stats.verdict(a, b).significant else "~"


class ConsoleState:
    """Folds controller events into what the panes, the table and the log show."""

    def __init__(self, profile: Profile, history: int = HISTORY) -> None:
        self.profile = profile
        self.base = profile.base_pair or (profile.pairs[0].label if profile.pairs else "")
        self.pairs: dict[str, PairState] = {}
        for p in profile.pairs:
            # unknown ("?") until the hosts say, on connect
            ps = PairState(p.label, p.sender, p.receiver, {})
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
        # host -> tunnel type -> "yes"/"kernel"/"userspace"/"no: why", as its facts said
        self.host_tunnels: dict[str, dict[str, str]] = {}

    # ---- folding ----------------------------------------------------------------------------
    def _phase_row(self, config: dict[str, str]) -> PhaseRow:
        key = config_key(config)
        row = self.phases.get(key)
        if row is None:
            row = self.phases[key] = PhaseRow(dict(config))
            self.dirty.phases = True
        return row

    def _new_phase(self, ps: PairState) -> None:
        """The pair enters its (new) configuration: fresh phase numbers, a new segment."""
        ps.phase = Running()
        ps.rtt_phase = Running()
        self._new_segment(ps)

    def _new_segment(self, ps: PairState) -> None:
        """A new stretch (a run) in the phase: one more run-level value of its row."""
        ps.segment = Segment()
        self._phase_row(ps.config).segments.setdefault(ps.label, []).append(ps.segment)

    def _pairs_of(self, event: Event) -> list[str]:
        if event.pair is not None:
            return [event.pair] if event.pair in self.pairs else []
        if event.host is not None:
            return self.host_pairs.get(event.host, [])
        return []

    def apply(self, event: Event) -> str | None:
        """Fold one event in; returns a line for the event log, or None for routine ones."""
        kind = event.kind
        d = event.data
        labels = self._pairs_of(event)
        self.dirty.pairs.update(labels)
        if kind is EventKind.INTERVAL:
            self.intervals_seen += 1
            for lb in labels:
                self._interval(self.pairs[lb], d)
            return None
        if kind is EventKind.PING:
            rtt = d.get("rtt_ms")
            for lb in labels:
                if isinstance(rtt, int | float):
                    self.pairs[lb].rtt.append(float(rtt))
                    self.pairs[lb].rtt_phase.add(float(rtt))
            return None
        if kind is EventKind.CPU:
            got = sample_figures(d)
            for lb in labels:
                ps = self.pairs[lb]
                if got is not None:
                    ps.cpu["sender" if event.host == ps.sender else "receiver"] = got
            return None
        if kind is EventKind.LINK:
            state = str(d.get("state", ""))
            for lb in labels:
                self.pairs[lb].links[str(event.host)] = state
            msg = f": {d['message']}" if d.get("message") else ""
            return f"{event.host}: link {state}{msg}"
        if kind is EventKind.FACTS:
            facts = d.get("facts") or {}
            for lb in labels:
                self.pairs[lb].kernels[str(event.host)] = str(facts.get("kernel_release", ""))
            for lb in labels if facts.get("cpu_scope") == CPU_SHARED else ():
                self.pairs[lb].cpu_shared.add(str(event.host))
            tunnels = facts.get("tunnels")
            if isinstance(tunnels, dict) and tunnels:
                self.host_tunnels[str(event.host)] = {str(k): str(v) for k, v in tunnels.items()}
            return f"{event.host}: {facts.get('os', '')} {facts.get('kernel_release', '')}"
        if kind is EventKind.CONFIG:
            return self._config(event.pair, d.get("config"))
        if kind is EventKind.RUN_START:
            for lb in labels:
                ps = self.pairs[lb]
                config = ps.config
                if isinstance(d.get("config"), dict):  # the engine's: what the hosts have
                    config = {str(k): str(v) for k, v in d["config"].items()}
                phase = d.get("phase")
                # a new run in the phase in force (a restart, a retry) is a new stretch of
                # it, not a new phase: the pane's phase numbers go on
                same = ps.segment is not None and config == ps.config and (
                    phase is None or ps.phase_id is None or phase == ps.phase_id)
                ps.config, ps.phase_id = config, phase
                ps.status = "running"
                ps.error = ""
                if same:
                    self._new_segment(ps)
                else:
                    self._new_phase(ps)
            self.running = True
            self.dirty.status = self.dirty.knobs = True
            return f"pair {event.pair}: run {d.get('run')} started"
        if kind is EventKind.RUN_END:
            for lb in labels:
                self.pairs[lb].status = str(d.get("status", "ended"))
                if d.get("status") == "error":
                    self.pairs[lb].error = str(d.get("message", ""))
            self.running = any(p.status == "running" for p in self.pairs.values())
            self.dirty.status = True
            return f"pair {event.pair}: run ended ({d.get('status')})"
        if kind is EventKind.KNOB:
            return self._knob(d)
        if kind is EventKind.TUNNEL:
            for lb in labels:
                self.pairs[lb].tunnel = str(d.get("type", ""))
            return f"pair {event.pair}: tunnel {d.get('type')}"
        if kind is EventKind.KNOB_ERROR:
            return f"knob {d.get('knob')}={d.get('value')} refused: {d.get('message')}"
        if kind is EventKind.ERROR:
            for lb in labels:
                self.pairs[lb].error = str(d.get("message", ""))
            where = event.pair or event.host or "abtui"
            return f"error {where}: {d.get('message')}"
        if kind is EventKind.MARK:
            for ps in self.pairs.values():
                ps.pending_marker = True
            return f"mark: {d.get('text')}"
        if kind is EventKind.PROGRESS:
            self.progress = dict(d)
            self.dirty.status = True
            return None
        if kind is EventKind.RESTORE:
            ok = "restored" if d.get("ok") else f"NOT restored ({d.get('message')})"
            line = f"{event.host}: {d.get('knob')}={d.get('value')} {ok}"
            self.restoring.append(line)
            self.dirty.status = True
            return line
        if kind is EventKind.SESSION_END:
            self.ended = True
            self.dirty.status = True
            return f"session ended ({d.get('reason')})"
        if kind is EventKind.SKEW:
            return f"start skew {d.get('skew_ms', 0):.2f} ms"
        if kind is EventKind.SESSION_START:
            where = d.get("profile_path") or self.profile.name
            return f"session started ({where}, abtui {d.get('abtui_version', '?')})"
        if kind is EventKind.ORIGINAL:
            return f"{event.host}: {d.get('knob')} was {d.get('value')}"
        if kind is EventKind.PHASE:
            return None
        return f"{kind}: {d}" if kind is not EventKind.WATCH else None

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
            return name == "tunnel"

    def knob_value(self, name: str, pairs: list[str]) -> str:
        """A knob's value on the pairs of a scope as the hosts have it: one value when they
        agree, else each pair's (`A:reno B:bbr`); `?` where the hosts have not said."""
        values = {lb: self.pairs[lb].config.get(name, "?") for lb in pairs if lb in self.pairs}
        if len(set(values.values())) <= 1:
            return next(iter(values.values()), "?")
        return " ".join(f"{lb}:{v}" for lb, v in values.items())

    def row_label(self, row: PhaseRow) -> str:
        """The phase table's name for a row (abtui.core.configuration: what export prints)."""
        return config_label(row.config, self.baseline)

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

    def _interval(self, ps: PairState, d: dict[str, Any]) -> None:
        rate = interval_rate(d)
        if rate is None:
            return
        bps, way_back = rate
        if ps.phase_id is None and d.get("phase") is not None:
            ps.phase_id = d.get("phase")
        if way_back:  # --bidir's way back: shown, never mixed into the pair's own series
            ps.rx_bps = bps
            return
        ps.intervals += 1
        ps.bps.append(bps)
        ps.markers.append(ps.pending_marker)
        ps.pending_marker = False
        retr = d.get("retransmits")
        ps.retransmits = retr if isinstance(retr, int) else None
        ps.retransmits_total += retr if isinstance(retr, int) else 0
        cwnd = d.get("cwnd_bytes")
        ps.cwnd = cwnd if isinstance(cwnd, int) else None
        ps.loss_pct, ps.jitter_ms = interval_loss(d)
        if ps.link != LinkState.CONNECTED and ps.links:
            # data flowing means the link is back, whatever the last LINK event said
            for h in ps.links:
                ps.links[h] = str(LinkState.CONNECTED)
        if d.get("straddles"):
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
        ps.segment.add(bps, span_of(d.get("start"), d.get("end")))
        self.dirty.phases = True

    def _knob(self, d: dict[str, Any]) -> str:
        name, value = str(d.get("knob")), str(d.get("value"))
        labels = [lb for lb in d.get("pairs") or [] if lb in self.pairs]
        is_tunnel = self._is_tunnel(name)
        for lb in labels:
            ps = self.pairs[lb]
            ps.config[name] = value
            ps.pending_marker = True
            if is_tunnel:
                ps.tunnel = value
            ps.phase_id = None  # the engine opened a phase: its id comes with what follows
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

    def phase_cells(self, row: PhaseRow) -> list[str]:
        """One cell per pair: the configuration's throughput in Gbit/s as every table defines
        it (abtui.reports.throughput: the mean of its run-level values), their number, then the Δ vs
        the base pair and the significance mark."""
        base = configuration_rate(row.segments.get(self.base, []))
        cells = []
        for label in self.pairs:
            segments = row.segments.get(label, [])
            rate = configuration_rate(segments)
            if rate is None:
                cells.append("·")
                continue
            text = f"{rate / 1e9:.2f} n{len(run_values(segments))}"
            delta = change_pct(base, rate) if label != self.base else None
            if delta is not None:
                mark = significance(row.segments.get(self.base, []), segments)
                text += f" {delta:+.1f}%{mark}"
            cells.append(text)
        return cells
