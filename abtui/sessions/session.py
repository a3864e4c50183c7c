"""A recorded session, rebuilt from its events: pairs, hosts, knobs, runs, phases, series.

Built in one streaming pass. Intervals and pings go into compact per-pair column arrays
(abtui.sessions.records), everything rarer is kept as small records. A phase is a stretch of
one pair with no knob change; intervals marked `straddles` (they began before a change and
ended after) belong to no phase. Statistics live in abtui.reports.stats; this module only
organises what was recorded.
"""

from __future__ import annotations

import os
import tomllib
from array import array
from collections.abc import Iterable
from pathlib import Path
from typing import Any

from abtui.core import events
from abtui.core.configuration import config_label
from abtui.core.cpu import busy_share, softirq_share, ticks
from abtui.core.events import AnyEvent, Event, EventReader
from abtui.sessions.reader import time_of
from abtui.sessions.records import (
    NAN,
    NO_PHASE,
    Columns,
    Phase,
    Run,
    as_argv,
    as_dict,
    as_num,
    cpu_columns,
    interval_columns,
    ping_columns,
    rr_columns,
)


class Session(EventReader):
    """Everything a session recorded, organised for statistics and reports."""

    def __init__(self, name: str = "", path: Path | None = None,
                 header: dict[str, Any] | None = None) -> None:
        self.name = name
        self.path = path
        self.header = header or {}
        self.profile_name: str = self.header.get("profile", "")
        self.profile_text: str = ""
        self.profile_path: str = ""
        self.abtui_version: str = ""
        self.created: float | None = self.header.get("created")
        self.first_t: float | None = None
        self.last_t: float | None = None
        self.pairs: list[str] = []
        self.pair_hosts: dict[str, dict[str, str]] = {}
        self.facts: dict[str, dict[str, Any]] = {}
        self.originals: list[dict[str, Any]] = []
        self.knob_changes: list[dict[str, Any]] = []
        self.knob_errors: list[dict[str, Any]] = []
        self.tunnels: list[dict[str, Any]] = []
        # the kernel releases each host was booted into and verified on, in order (a build
        # alternation on the same hosts); the facts say the release it started on
        self.booted: dict[str, list[str]] = {}
        self.runs: list[Run] = []
        self.phases: list[Phase] = []
        self.intervals: dict[str, Columns] = {}
        self.pings: dict[str, Columns] = {}
        # a request/response load's round trips (sockperf), binned: abtui.reports.latency
        self.rr: dict[str, Columns] = {}
        # (pair, host, name) -> (times, values); values NaN where not a number
        self.watches: dict[tuple[str | None, str | None, str], tuple[array[float], array[float]]]
        self.watches = {}
        # (pair, host) -> the host's CPU samples during the pair's runs (records.cpu_columns)
        self.cpu: dict[tuple[str, str], Columns] = {}
        # (pair, "sender"|"receiver") -> the host its CPU samples came from
        self.cpu_hosts: dict[tuple[str, str], str] = {}
        self.marks: list[dict[str, Any]] = []
        self.errors: list[dict[str, Any]] = []
        self.links: list[dict[str, Any]] = []
        self.restores: list[dict[str, Any]] = []
        # hosts that reconnected with other knob values (DRIFT): what they had, what was done
        self.drifts: list[dict[str, Any]] = []
        # `abtui run --lab`: what the lab ran instead of what the profile names
        self.translations: list[dict[str, Any]] = []
        # the last alternation's profiles judged (WHY): its rows and flame graphs' stacks
        self.why_rows: list[dict[str, Any]] = []
        self.why_flames: list[dict[str, Any]] = []
        self.why_counters: list[dict[str, Any]] = []  # the counters' rates and their change
        # (pair, host) -> what its profile windows said: the event sampled, the rate,
        # windows and samples, and whether the profile is a shared machine's
        self.profiled: dict[tuple[str, str], dict[str, Any]] = {}
        self.skews_ms: list[float] = []
        # host -> moment ("start", "end") -> {"device", "items", "unavailable"} (HOST_STATE)
        self.host_states: dict[str, dict[str, dict[str, Any]]] = {}
        # traffic on a data link beyond iperf3's own (COMPETING), one dict each
        self.competing: list[dict[str, Any]] = []
        self.end_reason: str | None = None
        self.kinds_seen: dict[str, int] = {}
        self._run_ix: dict[tuple[str, Any], int] = {}
        self._phase_ix: dict[tuple[str, Any], int] = {}
        self._config: dict[str, dict[str, Any]] = {}
        # each pair's configuration as read from its hosts on connect (CONFIG events)
        self.initial_configs: dict[str, dict[str, Any]] = {}
        for label in self.header.get("pairs") or []:  # a header read_header checked
            self._add_pair(label)

    # ---- building ----------------------------------------------------------------------

    @classmethod
    def load(cls, path: str | os.PathLike[str]) -> Session:
        """Read a session file (plain or compacted) in one streaming pass."""
        from abtui.sessions import paths, reader

        p = Path(path)
        header = reader.read_header(p)
        session = cls(name=header.get("name") or paths.name_of(p), path=p, header=header)
        session.feed_all(reader.iter_events(p))
        return session

    @classmethod
    def from_events(cls, events: Iterable[AnyEvent], name: str = "") -> Session:
        session = cls(name=name)
        session.feed_all(events)
        return session

    def feed_all(self, events: Iterable[AnyEvent]) -> None:
        for ev in events:
            self.feed(ev)
        self._finish()

    def feed(self, ev: AnyEvent) -> None:
        """Take one event into account (events must come in recorded order)."""
        kind = str(ev.kind)
        self.kinds_seen[kind] = self.kinds_seen.get(kind, 0) + 1
        if self.first_t is None:
            self.first_t = ev.t
        self.last_t = ev.t
        if ev.pair is not None:
            self._add_pair(ev.pair)
        try:
            self.dispatch(ev)
        except (TypeError, ValueError, OverflowError, AttributeError, KeyError) as exc:
            # a hand-edited or foreign record: noted with the errors, never a traceback
            self.errors.append({"t": ev.t, "pair": ev.pair, "host": ev.host,
                                "message": f"malformed {kind} record ignored ({exc})"})

    def _add_pair(self, label: str) -> None:
        if label not in self.pairs:
            self.pairs.append(label)
        if label not in self.intervals:
            self.intervals[label] = interval_columns()
            self.pings[label] = ping_columns()
            self.rr[label] = rr_columns()

    def on_session_start(self, ev: Event[events.SessionStart], d: events.SessionStart) -> None:
        self.profile_text = _text(d.profile_text)
        self.profile_path = _text(d.profile_path)
        self.abtui_version = _text(d.abtui_version)
        self.translations = [dict(t) for t in d.translations or [] if isinstance(t, dict)]
        for p in d.pairs or []:
            if isinstance(p, dict) and p.get("label"):
                self._add_pair(str(p["label"]))
                self.pair_hosts[str(p["label"])] = {k: str(v) for k, v in p.items() if v}

    def _run(self, pair: str, run_id: Any) -> int:
        key = (pair, run_id)
        ix = self._run_ix.get(key)
        if ix is None:
            ix = len(self.runs)
            self.runs.append(Run(pair=pair, id=run_id, index=ix,
                                 config=dict(self._config.get(pair, {}))))
            self._run_ix[key] = ix
        return ix

    def _phase(self, pair: str, phase_id: Any, t: float | None) -> int:
        key = (pair, phase_id)
        ix = self._phase_ix.get(key)
        if ix is None:
            ix = len(self.phases)
            self.phases.append(Phase(pair=pair, id=phase_id, index=ix,
                                     config=dict(self._config.get(pair, {})), start=t))
            self._phase_ix[key] = ix
        return ix

    def on_run_start(self, ev: Event[events.RunStart], d: events.RunStart) -> None:
        if ev.pair is None:
            return
        self._config[ev.pair] = as_dict(d.config) or {}
        run = self.runs[self._run(ev.pair, d.run)]
        run.config = dict(self._config[ev.pair])
        run.start = ev.t
        run.skew_ms = time_of(d.skew_ms)
        run.options = as_dict(d.options)
        run.argv = as_argv(d.argv)

    def on_run_end(self, ev: Event[events.RunEnd], d: events.RunEnd) -> None:
        if ev.pair is None:
            return
        run = self.runs[self._run(ev.pair, d.run)]
        run.end = ev.t
        run.status = _text(d.status) or "ok"
        run.summary = as_dict(d.summary)
        run.reverse_summary = as_dict(d.reverse_summary)
        run.ping = as_dict(d.ping)
        run.message = _text(d.message)

    def on_interval(self, ev: Event[events.IntervalMeasured], d: events.IntervalMeasured) -> None:
        pair = ev.pair
        if pair is None:
            return
        run_id = d.run
        run = self._run(pair, run_id)
        # a journal from before the engine's phase ids: each run is its phase
        phase_id = d.phase if ev.recorded("phase") else ("run", run_id)
        if d.straddles:
            phase = NO_PHASE
        else:
            span = as_num(d.end) - as_num(d.start)
            phase = self._phase(pair, phase_id, ev.t - span if span == span else ev.t)
            ph = self.phases[phase]
            if not ph.closed:
                ph.end = ev.t
        self.intervals[pair].append(
            ev.t, as_num(d.start), as_num(d.end), as_num(d.bytes), as_num(d.bits_per_second),
            as_num(d.retransmits), as_num(d.cwnd_bytes), 1 if d.omitted else 0, phase, run,
            1 if d.direction == "rx" else 0, as_num(d.jitter_ms), as_num(d.lost_packets),
            as_num(d.packets))

    def on_ping(self, ev: Event[events.Ping], d: events.Ping) -> None:
        pair = ev.pair
        if pair is None:
            return
        run = self._run(pair, d.run)
        phase_id = d.phase
        phase = self._phase(pair, phase_id, ev.t) if phase_id is not None else NO_PHASE
        seq = d.seq
        self.pings[pair].append(ev.t, int(seq) if isinstance(seq, int) else -1,
                                as_num(d.rtt_ms), phase, run)

    def on_rr(self, ev: Event[events.RequestResponse], d: events.RequestResponse) -> None:
        pair = ev.pair
        if pair is None or not isinstance(d.bins, list):
            return
        run = self._run(pair, d.run)
        phase = self._phase(pair, d.phase, ev.t) if d.phase is not None else NO_PHASE
        store = self.rr[pair]
        for b in d.bins:
            if isinstance(b, list) and len(b) == 2:
                store.append(ev.t, as_num(b[0]), as_num(b[1]), phase, run)

    def on_phase(self, ev: Event[events.Phase], d: events.Phase) -> None:
        if ev.pair is None:
            return
        start, end = time_of(d.start), time_of(d.end)
        ph = self.phases[self._phase(ev.pair, d.phase, start)]
        if isinstance(d.config, dict):
            ph.config = dict(d.config)
        if start is not None:
            ph.start = start
        ph.end = end if ev.recorded("end") else ev.t
        ph.closed = True

    def on_config(self, ev: Event[events.Config], d: events.Config) -> None:
        if ev.pair is None:
            return
        config = as_dict(d.config) or {}
        self._config[ev.pair] = dict(config)
        self.initial_configs.setdefault(ev.pair, dict(config))

    def on_knob(self, ev: Event[events.KnobChanged], d: events.KnobChanged) -> None:
        pairs = [str(p) for p in d.pairs] if isinstance(d.pairs, list) else []
        self.knob_changes.append({"t": ev.t, **ev.record(), "pairs": pairs})
        targets = pairs or ([ev.pair] if ev.pair else list(self._config))
        for pair in targets:
            self._config.setdefault(pair, {})[str(d.knob)] = d.value

    def on_watch(self, ev: Event[events.WatchSampled], d: events.WatchSampled) -> None:
        key = (ev.pair, ev.host, str(d.name))
        series = self.watches.get(key)
        if series is None:
            series = self.watches[key] = (array("d"), array("d"))
        try:
            value = float(d.value)  # type: ignore[arg-type]
        except (TypeError, ValueError):
            value = NAN
        series[0].append(ev.t)
        series[1].append(value)

    def on_cpu(self, ev: Event[events.Cpu], d: events.Cpu) -> None:
        if ev.pair is None or ev.host is None:
            return
        total = ticks(d.total)
        cpus = [t for t in map(ticks, d.cpus or []) if t is not None]
        if total is None:
            raise ValueError("no CPU ticks")
        run = self._run(ev.pair, d.run)
        phase = (self._phase(ev.pair, d.phase, ev.t)
                 if d.phase is not None and not d.straddles else NO_PHASE)
        if d.role in ("sender", "receiver"):
            self.cpu_hosts[(ev.pair, str(d.role))] = ev.host
        series = self.cpu.get((ev.pair, ev.host))
        if series is None:
            series = self.cpu[(ev.pair, ev.host)] = cpu_columns()
        peak = max((b for b in map(busy_share, cpus) if b is not None), default=NAN)
        soft = [(x, i) for i, x in enumerate(map(softirq_share, cpus)) if x is not None]
        soft_peak, soft_core = max(soft, default=(NAN, -1))
        series.append(ev.t, run, phase, *total, len(cpus) or 1, peak, soft_peak, soft_core)

    # the rarer kinds are kept as recorded, one dict each
    def _record(self, into: list[dict[str, Any]], ev: AnyEvent) -> None:
        into.append({"t": ev.t, "pair": ev.pair, "host": ev.host, **ev.record()})

    def on_knob_error(self, ev: Event[events.KnobError], d: events.KnobError) -> None:
        self._record(self.knob_errors, ev)

    def on_tunnel(self, ev: Event[events.Tunnel], d: events.Tunnel) -> None:
        self._record(self.tunnels, ev)

    def on_link(self, ev: Event[events.Link], d: events.Link) -> None:
        self._record(self.links, ev)

    def on_error(self, ev: Event[events.Error], d: events.Error) -> None:
        self._record(self.errors, ev)

    def on_mark(self, ev: Event[events.Mark], d: events.Mark) -> None:
        self._record(self.marks, ev)

    def on_drift(self, ev: Event[events.Drift], d: events.Drift) -> None:
        self._record(self.drifts, ev)
        if d.since is None or not isinstance(d.pairs, list):
            return
        # changed by someone else between `since` and now: what was measured meanwhile ran
        # under a value nobody can name, and belongs to no phase (as a straddling interval)
        since = as_num(d.since)
        for pair in d.pairs:
            for store in (self.intervals.get(str(pair)), self.pings.get(str(pair)),
                          self.rr.get(str(pair))):
                if store is None:
                    continue
                times, phases = store["t"], store["phase"]
                i = len(times) - 1
                while i >= 0 and times[i] > since:
                    phases[i] = NO_PHASE
                    i -= 1

    def on_why(self, ev: Event[events.WhyFound], d: events.WhyFound) -> None:
        rows, flames = d.rows, d.flames
        if not rows:  # an alternation stopped before a block: the last judged one stands
            return
        self.why_rows = [r for r in rows if isinstance(r, dict)] if isinstance(rows, list) \
            else []
        self.why_flames = [f for f in flames if isinstance(f, dict)] \
            if isinstance(flames, list) else []
        counters = d.counters
        self.why_counters = [c for c in counters if isinstance(c, dict)] \
            if isinstance(counters, list) else []

    def on_profile(self, ev: Event[events.Profiled], d: events.Profiled) -> None:
        if ev.pair is None or ev.host is None:
            return
        seen = self.profiled.setdefault((ev.pair, ev.host), {
            "event": _text(d.event), "hz": d.hz if isinstance(d.hz, int) else None,
            "windows": 0, "samples": 0, "machine": bool(d.shared)})
        seen["windows"] += 1
        seen["samples"] += d.samples if isinstance(d.samples, int) else 0

    def on_restore(self, ev: Event[events.Restore], d: events.Restore) -> None:
        self._record(self.restores, ev)

    def on_switch(self, ev: Event[events.BuildSwitch], d: events.BuildSwitch) -> None:
        if ev.host is not None and d.stage == "up" and d.boots and d.build:
            self.booted.setdefault(ev.host, []).append(_text(d.build))

    def on_facts(self, ev: Event[events.Facts], d: events.Facts) -> None:
        if ev.host is not None:
            self.facts[ev.host] = as_dict(d.facts) or {}

    def on_original(self, ev: Event[events.Original], d: events.Original) -> None:
        self.originals.append({"t": ev.t, "host": ev.host, **ev.record()})

    def on_host_state(self, ev: Event[events.HostStateRead], d: events.HostStateRead) -> None:
        if ev.host is not None and d.moment in ("start", "end"):
            self.host_states.setdefault(ev.host, {})[str(d.moment)] = {
                "device": _text(d.device), "items": as_dict(d.items) or {},
                "unavailable": as_dict(d.unavailable) or {}}

    def on_competing(self, ev: Event[events.CompetingTraffic],
                     d: events.CompetingTraffic) -> None:
        if ev.pair is None:
            return
        phase = self._phase(ev.pair, d.phase, ev.t) if d.phase is not None else NO_PHASE
        self.competing.append({"t": ev.t, "pair": ev.pair, "host": ev.host,
                               "phase_index": phase, **ev.record()})

    def on_skew(self, ev: Event[events.Skew], d: events.Skew) -> None:
        if isinstance(d.skew_ms, int | float):
            self.skews_ms.append(float(d.skew_ms))

    def on_session_end(self, ev: Event[events.SessionEnd], d: events.SessionEnd) -> None:
        self.end_reason = _text(d.reason) or "ended"

    def _finish(self) -> None:
        if self.profile_text and (not self.pair_hosts or not self.profile_name):
            doc = _toml(self.profile_text)
            self.pair_hosts = self.pair_hosts or _pairs_from_profile(doc)
            name = doc.get("profile", {}).get("name") if isinstance(doc.get("profile"),
                                                                    dict) else None
            self.profile_name = self.profile_name or (name if isinstance(name, str) else "")
        for label in self.pair_hosts:
            self._add_pair(label)

    # ---- queries -------------------------------------------------------------------------

    @property
    def start_t(self) -> float | None:
        return self.first_t if self.first_t is not None else self.created

    @property
    def duration(self) -> float:
        if self.start_t is None or self.last_t is None:
            return 0.0
        return max(0.0, self.last_t - self.start_t)

    def baseline(self, base: str | None = None) -> dict[str, Any] | None:
        """The configuration labels are relative to: the base pair's as read on connect
        (else the first pair's); None for sessions recorded before abtui read it."""
        for pair in ([base] if base else []) + self.pairs:
            if pair in self.initial_configs:
                return self.initial_configs[pair]
        return None

    def config_label(self, config: dict[str, Any], base: str | None = None) -> str:
        """How tables name a configuration (abtui.configuration.config_label)."""
        return config_label(config, self.baseline(base))

    def phases_of(self, pair: str) -> list[Phase]:
        return [p for p in self.phases if p.pair == pair]

    def runs_of(self, pair: str) -> list[Run]:
        return [r for r in self.runs if r.pair == pair]

    def hosts_of(self, pair: str) -> dict[str, str]:
        """{"sender": alias, "receiver": alias} as far as the session knows."""
        return self.pair_hosts.get(pair, {})


def _text(value: object) -> str:
    """A recorded text field, "" when a foreign record put something else there."""
    return value if isinstance(value, str) else ""


def _toml(text: str) -> dict[str, Any]:
    try:
        return tomllib.loads(text)
    except tomllib.TOMLDecodeError:
        return {}


def _pairs_from_profile(doc: dict[str, Any]) -> dict[str, dict[str, str]]:
    """Best effort: the pairs table of the profile copy, when the engine did not list them."""
    out: dict[str, dict[str, str]] = {}
    pairs = doc.get("pairs")
    for p in pairs if isinstance(pairs, list) else []:
        if isinstance(p, dict) and isinstance(p.get("label"), str):
            out[p["label"]] = {k: str(p[k]) for k in ("sender", "receiver", "target") if k in p}
    return out
