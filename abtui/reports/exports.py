"""Machine-readable exports of a session: CSV (one row per interval) and JSON (docs/contracts.md's
`{"pairs", "phases": [{"pair", "config", "intervals", "summary"}]}` plus the whole session)."""

from __future__ import annotations

import bisect
import csv
import json
import math
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import IO, Any, NamedTuple

import numpy as np

from abtui.core.configuration import config_id
from abtui.core.events import Event
from abtui.core.model import interval_loss
from abtui.core.text import visible
from abtui.reports import latency, samples, stats
from abtui.reports.throughput import span_of
from abtui.sessions.records import NO_PHASE
from abtui.sessions.session import Session

CSV_FIELDS = ("session", "pair", "phase", "configuration", "run", "time", "start", "end",
              "bits_per_second", "retransmits", "cwnd_bytes", "rtt_ms", "omitted", "straddles",
              "direction", "jitter_ms", "lost_packets", "packets", "lost_percent")


class _Datagrams(NamedTuple):
    """An interval's UDP columns, as the loss rule reads them."""

    jitter_ms: float | None
    lost_packets: int | None
    packets: int | None


def _clean(x: float) -> float | None:
    return None if x is None or (isinstance(x, float) and math.isnan(x)) else x


def _int(x: float) -> int | None:
    return None if math.isnan(x) else int(x)


def interval_rows(session: Session, pair: str) -> Iterator[dict[str, Any]]:
    """One dict per interval of a pair; `time` is seconds since the session started (the
    interval's end as received), `rtt_ms` the mean of the pings answered during it (None when
    none was, or its span is unknown)."""
    cols = session.intervals[pair]
    pings = session.pings[pair]
    ping_t = list(pings["t"])
    ping_rtt = pings["rtt"]
    t0 = session.start_t or 0.0
    for i in range(len(cols)):
        t, start, end = cols["t"][i], cols["start"][i], cols["end"][i]
        span = span_of(start, end)  # None: unknown, so which pings fell in it is too
        lo, hi = (bisect.bisect_left(ping_t, t - span), bisect.bisect_right(ping_t, t)) \
            if span is not None else (0, 0)
        rtts = [r for r in ping_rtt[lo:hi] if not math.isnan(r)]
        ph = cols["phase"][i]
        phase = session.phases[ph] if ph != NO_PHASE else None
        run = session.runs[cols["run"][i]]
        udp = _Datagrams(jitter_ms=_clean(cols["jitter"][i]),
                         lost_packets=_int(cols["lost"][i]), packets=_int(cols["packets"][i]))
        yield {
            "session": session.name, "pair": pair,
            "phase": phase.id if phase else None,
            "configuration": config_id(phase.config) if phase else None,
            "run": run.id, "time": round(t - t0, 6), "start": _clean(start),
            "end": _clean(end), "bits_per_second": _clean(cols["bps"][i]),
            "retransmits": _int(cols["retransmits"][i]), "cwnd_bytes": _int(cols["cwnd"][i]),
            "rtt_ms": round(sum(rtts) / len(rtts), 6) if rtts else None,
            "omitted": bool(cols["omitted"][i]), "straddles": phase is None,
            # --bidir: "rx" for the receiver -> sender direction, else None
            "direction": "rx" if cols["rx"][i] else None,
            # UDP (the receiving side's line), else None
            **udp._asdict(), "lost_percent": interval_loss(udp)[0],
        }


def knob_columns(session: Session) -> dict[str, str]:
    """Each knob (and dimension) the session's phases set -> its CSV column: its own name,
    `knob:NAME` where that is one of the interval's own columns."""
    out: dict[str, str] = {}
    for phase in session.phases:
        for name in phase.config:
            out.setdefault(name, f"knob:{name}" if name in CSV_FIELDS else name)
    return out


def write_csv(session: Session, out: IO[str]) -> int:
    """Write the CSV: a row per interval, with a column per knob (its value in the interval's
    phase, empty for an interval that straddles a change), so a spreadsheet filters by value;
    returns the number of interval rows."""
    knobs = knob_columns(session)
    writer = csv.DictWriter(out, fieldnames=[*CSV_FIELDS, *knobs.values()],
                            lineterminator="\n")
    writer.writeheader()
    configs = {(p.pair, p.id): p.config for p in session.phases}
    n = 0
    for pair in session.pairs:
        for row in interval_rows(session, pair):
            config = configs.get((pair, row["phase"]), {}) if row["phase"] is not None else {}
            row.update({col: config.get(name) for name, col in knobs.items()})
            writer.writerow({k: "" if v is None else v for k, v in row.items()})
            n += 1
    return n


def _phase_summary(session: Session, phase_ix: int) -> dict[str, Any]:
    """A phase's figures: `bits_per_second` is its throughput as every table defines it (the
    mean of its run-level values, abtui.reports.throughput); `throughput` summarizes those values,
    `intervals` the counted intervals' rates (`noisy`: they vary more than stats.NOISE_CV).

    iperf3's own summary (sender/receiver rates and CPU, retransmits) is the phase's only when
    the phase is exactly one run (samples.whole_run: plan mode); a stretch of a continuous run
    is not, and a whole run's summary says nothing of it. Otherwise a figure comes from the
    phase's counted intervals where they measure it (the side whose lines they are: the
    sender's rate for TCP, the receiver's with -R or UDP; retransmits summed over the counted
    lines that carry them), and is null where nothing measured it (the other side's rate, CPU).
    """
    ph = session.phases[phase_ix]
    st = stats.phase_stats(session, ph)
    rate = stats.phase_rate(session, ph)
    run = samples.whole_run(session, ph)
    own = (run.summary if run is not None else None) or {}
    side = samples.measured_side(session, ph)

    def figure(name: str, measured: Any) -> Any:
        return own[name] if own.get(name) is not None else measured

    retr = samples.values(session, ph.pair, "retransmits", phases=[phase_ix])
    counted_retr = int(np.nansum(retr)) if np.isfinite(retr).any() else None
    rx = stats.phase_rate(session, ph, "throughput_rx")
    udp = stats.udp_quality(session, ph.pair, phases=[phase_ix])
    return {
        "bits_per_second": rate.mean,
        "sender_bits_per_second": figure("sender_bits_per_second",
                                         rate.mean if side == "sender" else None),
        "receiver_bits_per_second": figure("receiver_bits_per_second",
                                           rate.mean if side == "receiver" else None),
        "retransmits": figure("retransmits", counted_retr),
        # iperf3's own CPU figures (null unless the phase is one run that has them)
        "sender_cpu": own.get("sender_cpu"),
        "receiver_cpu": own.get("receiver_cpu"),
        "throughput": rate.to_json(),
        "intervals": st["throughput"].to_json(),
        "rtt_ms": st["rtt"].to_json(),
        # the replies' min/avg/max/stddev and percentiles (abtui.reports.latency)
        "latency": latency.latency(session, ph.pair, phases=[phase_ix]).to_json(),
        # the request/response load's round trips (sockperf), where it ran
        **({"rr_latency": latency.rr_latency(session, ph.pair, phases=[phase_ix]).to_json()}
           if latency.has_rr(session, ph.pair) else {}),
        "retransmits_per_s": st["retransmits_per_s"].to_json(),
        "noisy": st["throughput"].noisy,
        **({"bits_per_second_rx": rx.mean, "throughput_rx": rx.to_json(),
            "intervals_rx": st["throughput_rx"].to_json()} if st["throughput_rx"].n else {}),
        # UDP: datagrams lost and jitter over the phase's intervals
        **({"udp": udp.to_json()} if udp else {}),
    }


def dumps(doc: Any) -> str:
    """Strict JSON text: a NaN or infinity anywhere (a foreign record) becomes null. ASCII:
    every other character escaped (`\\u009b`; json.dumps without ensure_ascii escapes C0 but
    writes C1 controls and bidi overrides as they are), so what a host said reads back
    exactly and no control character is in the file."""
    try:
        return json.dumps(doc, indent=1, allow_nan=False, ensure_ascii=True) + "\n"
    except ValueError:
        return json.dumps(_finite(doc), indent=1, allow_nan=False, default=str,
                          ensure_ascii=True) + "\n"


def _finite(obj: Any) -> Any:
    if isinstance(obj, float):
        return obj if math.isfinite(obj) else None
    if isinstance(obj, dict):
        return {str(k): _finite(v) for k, v in obj.items()}
    if isinstance(obj, list | tuple):
        return [_finite(v) for v in obj]
    return obj


def alternation_rows(session: Session) -> list[dict[str, Any]]:
    """The alternation's verdict rows (abtui.reports.alternation), JSON's `"alternation"`."""
    from abtui.reports.alternation import to_json as rows

    return rows(session)


def why_rows(session: Session) -> list[dict[str, Any]]:
    """The alternation's profiles judged (abtui.reports.why_report), JSON's `"why"`."""
    from abtui.reports.why_report import json_rows

    return json_rows(session)


def _why_counters(session: Session) -> list[dict[str, Any]]:
    from abtui.reports.why_report import json_counters

    return json_counters(session)


def bisection_table(session: Session) -> dict[str, Any] | None:
    """A bisection's steps and answer (abtui.reports.bisection), JSON's `"bisect"`."""
    from abtui.reports.bisection import to_json as table

    return table(session)


def to_json(session: Session) -> dict[str, Any]:
    """The whole session as one JSON document (intervals and pings under their phases)."""
    rows_by_phase: dict[int, list[dict[str, Any]]] = {}
    unphased: list[dict[str, Any]] = []
    for pair in session.pairs:
        cols = session.intervals[pair]
        for i, row in enumerate(interval_rows(session, pair)):
            ph = cols["phase"][i]
            target = unphased if ph == NO_PHASE else rows_by_phase.setdefault(ph, [])
            target.append({k: row[k] for k in ("pair", "run", "time", "start", "end",
                                                "bits_per_second", "retransmits",
                                                "cwnd_bytes", "rtt_ms", "omitted",
                                                "direction", "jitter_ms", "lost_packets",
                                                "packets", "lost_percent")})
    pings_by_phase: dict[int, list[dict[str, Any]]] = {}
    for pair in session.pairs:
        p = session.pings[pair]
        for t, seq, rtt, ph in zip(p["t"], p["seq"], p["rtt"], p["phase"], strict=True):
            if ph != NO_PHASE:
                pings_by_phase.setdefault(ph, []).append(
                    {"t": t, "seq": seq, "rtt_ms": _clean(rtt)})
    phases = []
    for ph in session.phases:
        phases.append({
            "pair": ph.pair, "phase": ph.id, "config": ph.config,
            "configuration": config_id(ph.config),
            "label": session.config_label(ph.config), "start": ph.start, "end": ph.end,
            "closed": ph.closed, "intervals": rows_by_phase.get(ph.index, []),
            "pings": pings_by_phase.get(ph.index, []),
            "summary": _phase_summary(session, ph.index),
        })
    table = stats.cells(session)
    from abtui.reports import cpu, flags, host_state

    cpu_cells = cpu.cells(session, table)
    return {
        "format": "abtui-export", "version": 1,
        "session": {"name": session.name, "path": str(session.path or ""),
                    "header": session.header, "profile": session.profile_name,
                    "profile_path": session.profile_path, "profile_text": session.profile_text,
                    "abtui_version": session.abtui_version, "start": session.start_t,
                    "end": session.last_t, "duration": session.duration,
                    "end_reason": session.end_reason},
        "alternation": alternation_rows(session),  # the answer, when one ran
        "why": why_rows(session),  # what the profiles say moved, when profiled
        "why_counters": _why_counters(session),
        "profiles": [{"pair": p, "host": h, **seen} for (p, h), seen in session.profiled.items()],
        "bisect": bisection_table(session),  # a bisection's steps and answer, or null
        "pairs": list(session.pairs),
        "pair_hosts": session.pair_hosts,
        "hosts": session.facts,
        "phases": phases,
        "straddling_intervals": unphased,
        "runs": [{"pair": r.pair, "run": r.id, "config": r.config, "start": r.start,
                  "end": r.end, "status": r.status, "bits_per_second": samples.run_rate(session, r),
                  "summary": r.summary,
                  **({"reverse_summary": r.reverse_summary} if r.reverse_summary else {}),
                  "ping": r.ping,
                  "message": r.message, "skew_ms": r.skew_ms, "options": r.options,
                  "stats": {m: s.to_json() for m, s in stats.run_stats(session, r).items()
                            if s.n or m != "throughput_rx"}}
                 for r in session.runs],
        "configurations": [{**c.to_json(), "cpu": cpu.cell_json(cpu_cells[k][p]),
                            "latency": latency.latency(session, p, phases=c.phases).to_json(),
                            **({"rr_latency": latency.rr_latency(
                                session, p, phases=c.phases).to_json()}
                               if latency.has_rr(session, p) else {}),
                            "flags": flags.of_cell(session, c).lines}
                           for k, row in table.items() for p, c in row.items()],
        # what shapes the numbers besides the knobs, per host at the start and end
        "host_state": session.host_states,
        "hosts_changed": host_state.to_json(host_state.within(session), ("start", "end")),
        "competing": session.competing,
        "host_cpu": cpu.series_json(session),
        "originals": session.originals, "knob_changes": session.knob_changes,
        "knob_errors": session.knob_errors, "tunnels": session.tunnels,
        "watches": [{"pair": k[0], "host": k[1], "name": k[2], "t": list(v[0]),
                     "value": [_clean(x) for x in v[1]]} for k, v in session.watches.items()],
        "marks": session.marks, "errors": session.errors, "links": session.links,
        "restores": session.restores, "skews_ms": session.skews_ms,
        "translations": session.translations,
    }


def render(session: Session, fmt: str, base: str | None = None,
           base_config: str | None = None, units: str | None = None) -> str:
    """The session as `md` (the review report, rates in `units`: bits or bytes per second;
    None: its procedure's first table in the layout's own unit, the rest in bits), `text`
    (that report for a mail: 78 columns, the answer first; abtui.reports.plaintext),
    `csv` (a row per interval) or `json` text; what `abtui export` prints and the console's
    export writes. What a host said is spelled out (core/text.py): no control character
    reaches the file; JSON escapes every non-ASCII character itself (`\\u001b`), so its
    strings read back exactly as said."""
    text = visible(_render(session, fmt, base, base_config, units), lines=True)
    # laid out once spelled out: wrapping reads a carriage return as a space
    if fmt == "md":
        from abtui.reports.plaintext import wrap_markdown

        return wrap_markdown(text)
    if fmt == "text":
        from abtui.reports.plaintext import text_report

        return text_report(text)
    return text


def _render(session: Session, fmt: str, base: str | None, base_config: str | None,
            units: str | None) -> str:
    if fmt in ("md", "text"):
        from abtui.reports.report import markdown

        return markdown(session, base=base, base_config=base_config, units=units,
                        chart=fmt == "md")
    if fmt == "json":
        return dumps(to_json(session))
    if fmt == "html":
        from abtui.reports.html_report import page
        from abtui.reports.report import markdown

        return page(session, markdown(session, base=base, base_config=base_config,
                                      units=units))
    if fmt == "csv":
        import io

        buf = io.StringIO()
        write_csv(session, buf)
        return buf.getvalue()
    raise ValueError(f"unknown format {fmt!r}: md, text, html, csv or json")


BOM = "\ufeff"


def as_file(text: str, fmt: str) -> str:
    """What a file of `fmt` holds: a CSV file starts with a UTF-8 byte order mark, so a
    spreadsheet reads its `Δgeo` and `→` as UTF-8, not as a legacy code page (stdout, read
    by programs, has none)."""
    return BOM + text if fmt == "csv" and not text.startswith(BOM) else text


def export_events(path: Path, fmt: str, events: Sequence[Event], name: str,
                  base: str | None = None) -> None:
    """The report `abtui export` writes, of `events` (a session so far: the console's
    export), written whole or not at all at `path`."""
    from abtui.core.files import write_atomic

    session = Session.from_events(list(events), name=name)
    path.parent.mkdir(parents=True, exist_ok=True)
    write_atomic(path, as_file(render(session, fmt, base=base), fmt))
