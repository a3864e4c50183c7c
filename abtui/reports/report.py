"""The Markdown report of a session, ready to paste into a mailing-list reply or a review:
hosts, test options, the phase table (configuration | A | B | Δ), deltas against a base
configuration, latency, runs, the throughput chart, and what went wrong."""

from __future__ import annotations

from typing import Any

from abtui.reports import stats
from abtui.reports.formatting import (
    fmt_cell,
    fmt_compare,
    fmt_duration,
    fmt_mean_sd,
    fmt_time,
    legend,
    md_table,
    no_interval_note,
    rate_unit_of,
)
from abtui.reports.plots import rate_unit, throughput_chart
from abtui.sessions.session import Session


def base_pair(session: Session, wanted: str | None = None) -> str | None:
    if wanted:
        return wanted
    from_profile = _profile_base_pair(session.profile_text)
    if from_profile in session.pairs:
        return from_profile
    return session.pairs[0] if session.pairs else None


def _profile_base_pair(text: str) -> str | None:
    import tomllib

    try:
        value = tomllib.loads(text).get("profile", {}).get("base_pair")
    except (tomllib.TOMLDecodeError, AttributeError):
        return None
    return value if isinstance(value, str) else None


def markdown(session: Session, base: str | None = None, base_config: str | None = None,
             chart: bool = True) -> str:
    """The whole report. `base`: the pair deltas are taken against (profile's base_pair,
    else the first); `base_config`: the configuration for the per-pair delta table."""
    table = stats.cells(session)
    bp = base_pair(session, base)
    seen: list[stats.Delta | None] = []  # every Δ printed, for the notes
    out = [f"# abtui session {session.name or '(unnamed)'}", "", *_overview(session), ""]
    from abtui.reports.procedure import sections

    out += sections(session, base, seen)  # the profile's [report] layout, lab translations
    out += ["## Hosts", "", _hosts(session), ""]
    options = _options(session)
    if options:
        out += ["## Test options", "", options, ""]
    out += ["## Throughput per configuration", "", _throughput(session, table, bp, seen), "",
            SIDES, ""]
    if any(c.samples_rx for row in table.values() for c in row.values()):
        out += ["## Other direction (--bidir: receiver → sender)", "",
                _throughput_rx(session, table, bp, seen), ""]
    udp = _udp(session, table)
    if udp:
        out += ["## UDP loss and jitter", "", udp, ""]
    from abtui.reports import cpu

    out += cpu.sections(session, table, bp, seen)
    if len(table) > 1:
        out += [*_vs_config(session, table, base_config, seen), ""]
    out += ["## Latency (ping RTT, ms)", "", _latency(session, table), ""]
    if session.runs:
        out += ["## Runs", "", _runs(session), ""]
    if chart:
        text = throughput_chart(session)
        if text:
            out += ["## Throughput over time", "", "```text", text.rstrip(), "```", ""]
    notes = _notes(session, table, seen)
    if notes:
        out += ["## Notes", "", *notes, ""]
    return "\n".join(out).rstrip() + "\n"


def _overview(session: Session) -> list[str]:
    lines = [f"- profile: {session.profile_name or '?'}"
             + (f" (`{session.profile_path}`)" if session.profile_path else ""),
             f"- started: {fmt_time(session.start_t)}, duration {fmt_duration(session.duration)}"
             + (f", ended: {session.end_reason}" if session.end_reason else ", cut short"),
             "- pairs: " + ", ".join(_pair_text(session, p) for p in session.pairs)]
    if session.skews_ms:
        lines.append(f"- start skew between pairs: max {max(session.skews_ms):.2f} ms "
                     f"over {len(session.skews_ms)} synchronized start(s)")
    return lines


def _pair_text(session: Session, pair: str) -> str:
    h = session.hosts_of(pair)
    if not h:
        return pair
    return f"{pair} ({h.get('sender', '?')} → {h.get('receiver', '?')}" + (
        f", {h['target']})" if h.get("target") else ")")


def _hosts(session: Session) -> str:
    rows = []
    for pair in session.pairs:
        h = session.hosts_of(pair)
        for role in ("sender", "receiver"):
            alias = h.get(role)
            if alias is None:
                continue
            f = session.facts.get(alias, {})
            rows.append([pair, role, alias, f.get("os", ""), f.get("kernel_release", ""),
                         f.get("nic_driver", ""), f.get("nic_firmware", "")])
    if not rows:  # no pair table: list every host we have facts for
        rows = [["", "", alias, f.get("os", ""), f.get("kernel_release", ""),
                 f.get("nic_driver", ""), f.get("nic_firmware", "")]
                for alias, f in session.facts.items()]
    if not rows:
        return "(no host facts recorded)"
    return md_table(["pair", "role", "host", "OS", "kernel", "NIC driver", "NIC firmware"],
                    rows)


def _options(session: Session) -> str:
    rows = []
    for pair in session.pairs:
        runs = [r for r in session.runs_of(pair) if r.options]
        if runs:
            opts: dict[str, Any] = runs[0].options or {}
            rows.append([pair, " ".join(f"{k}={_opt(v)}" for k, v in opts.items()
                                        if v is not None)])  # None: not set
    return md_table(["pair", "options"], rows) if rows else ""


def _opt(value: Any) -> str:
    """An option's value as a profile spells it (true/false, a,b for lists)."""
    if isinstance(value, bool):
        return "true" if value else "false"
    return ",".join(map(_opt, value)) if isinstance(value, list | tuple) else str(value)


def _pair_table(session: Session, table: dict[str, dict[str, stats.Cell]], bp: str | None,
                rx: bool, seen: list[stats.Delta | None]) -> str:
    """A configuration per row, a column per pair (its one figure), then each other pair's
    delta vs the base pair (--bidir's way back with `rx`)."""
    div, unit = rate_unit_of((c for row in table.values() for c in row.values()), rx)
    others = [p for p in session.pairs if p != bp]
    header = ["configuration", *[f"{p} ({unit})" for p in session.pairs],
              *[f"Δ {p} vs {bp}" for p in others]]
    rows = []
    for config, row in table.items():
        cells = [fmt_cell(row.get(p), div, rx) for p in session.pairs]
        deltas = [fmt_compare(row.get(bp or ""), row.get(p), rx, seen) for p in others]
        rows.append([config, *cells, *deltas])
    note = ("Figures, Δ and verdicts as above, for the way back (its own run-level values)."
            if rx else legend(bp or "the base pair"))
    return md_table(header, rows) + "\n\n" + note


def _throughput(session: Session, table: dict[str, dict[str, stats.Cell]],
                bp: str | None, seen: list[stats.Delta | None]) -> str:
    return _pair_table(session, table, bp, False, seen)


# Which side's interval lines a pair's throughput is made of, per protocol (abtui.measure.runs).
SIDES = ("Intervals are iperf3's own lines: for TCP the client's (the sender's; the "
         "receiver's with -R), for UDP the receiving side's (what arrived, not the rate "
         "offered).")


def _udp(session: Session, table: dict[str, dict[str, stats.Cell]]) -> str:
    """Per configuration and pair: datagrams lost (Σ lost / Σ due, as iperf3 sums them) and
    the jitter per interval, for the pairs that ran UDP."""
    rows = []
    for config, row in table.items():
        for pair, c in row.items():
            q = stats.udp_quality(session, pair, phases=c.phases)
            if q is None:
                continue
            rows.append([config, pair, _pct(q.lost_percent), f"{q.lost}/{q.packets}",
                         fmt_mean_sd(q.jitter, 1.0, digits=3, warn=False)])
    if not rows:
        return ""
    return md_table(["configuration", "pair", "lost %", "lost/datagrams", "jitter (ms)"],
                    rows) + ("\n\nthe receiving side's interval lines; jitter: mean ± stdev "
                             "over intervals.")


def _pct(x: float | None) -> str:
    return "—" if x is None else f"{x:.2f}"


def _throughput_rx(session: Session, table: dict[str, dict[str, stats.Cell]],
                   bp: str | None, seen: list[stats.Delta | None]) -> str:
    """--bidir runs measure both ways at once: the table above is the pair's own direction,
    this one the way back, never averaged with it."""
    return _pair_table(session, table, bp, True, seen)


def _vs_config(session: Session, table: dict[str, dict[str, stats.Cell]],
               base_config: str | None, seen: list[stats.Delta | None]) -> list[str]:
    if base_config is not None and base_config not in table:
        from abtui.core.errors import BadInput

        raise BadInput(f"--base-config {base_config!r}: the session's configurations are "
                       + "; ".join(table))
    base = base_config if base_config is not None else next(iter(table))
    rows = []
    for config, row in table.items():
        if config == base:
            continue
        rows.append([config, *[fmt_compare(table[base].get(p), row.get(p), seen=seen)
                               for p in session.pairs]])
    return [f"## Δ vs configuration `{base}`", "",
            md_table(["configuration", *session.pairs], rows)]


def _latency(session: Session, table: dict[str, dict[str, stats.Cell]]) -> str:
    rows = []
    for config, row in table.items():
        for pair in session.pairs:
            c = row.get(pair)
            if c is None or not c.rtt.n:
                continue
            r = c.rtt
            rows.append([config, pair, f"{r.min:.3f}", f"{r.mean:.3f}", f"{r.max:.3f}",
                         f"{r.stdev:.3f}" if r.stdev is not None else "—", str(r.n)])
    if not rows:
        return "(no ping replies recorded)"
    return md_table(["configuration", "pair", "min", "avg", "max", "stddev", "replies"], rows)


def _runs(session: Session) -> str:
    from abtui.reports import cpu

    rows, peak = [], 0.0
    for r in session.runs:
        tp = stats.run_stats(session, r)["throughput"]
        rate = stats.run_rate(session, r)
        s = r.summary or {}
        snd, rcv = s.get("sender_bits_per_second"), s.get("receiver_bits_per_second")
        rates = [float(x) for x in (snd, rcv, rate) if x is not None and _is_num(x)]
        peak = max([peak, *rates])
        rows.append((r, tp, rate, snd, rcv, s.get("retransmits")))
    div, unit = rate_unit(peak)
    # UDP runs: iperf3's own loss and jitter (the receiver's summary line)
    udp = any((r.summary or {}).get("protocol") == "udp" for r in session.runs)
    body = [[r.pair, str(r.id), stats.config_key(r.config), r.status,
             fmt_duration(r.end - r.start) if r.end and r.start else "—",
             _rate(rate, div), str(tp.n), _rate(snd, div), _rate(rcv, div),
             "—" if retr is None else str(retr),
             *(_udp_summary(r.summary) if udp else []), *cpu.run_columns(r), r.message]
            for r, tp, rate, snd, rcv, retr in rows]
    return md_table(["pair", "run", "configuration", "status", "duration",
                     f"throughput ({unit})", "intervals", f"sender ({unit})",
                     f"receiver ({unit})", "retransmits",
                     *(["lost %", "jitter (ms)"] if udp else []), *cpu.RUN_HEADER,
                     "message"], body) + (
        "\n\nthroughput: the run's own figure (the bits of its counted intervals ÷ their "
        "seconds); sender, receiver: iperf3's own summary lines." + cpu.RUN_NOTE)


def _udp_summary(s: dict[str, Any] | None) -> list[str]:
    lost, jitter = (s or {}).get("lost_percent"), (s or {}).get("jitter_ms")
    return [_pct(lost) if _is_num(lost) else "—",
            f"{jitter:.3f}" if _is_num(jitter) else "—"]


def _is_num(x: Any) -> bool:
    return isinstance(x, int | float) and not isinstance(x, bool)


def _rate(bps: Any, div: float) -> str:
    return f"{bps / div:.2f}" if _is_num(bps) else "—"


def _notes(session: Session, table: dict[str, dict[str, stats.Cell]],
           seen: list[stats.Delta | None]) -> list[str]:
    t0 = session.start_t or 0.0
    notes = no_interval_note(seen)
    for config, row in table.items():
        for pair, c in row.items():
            if c.noisy:
                notes.append(f"- ⚠ {pair} under `{config}`: its intervals' throughput varies "
                             f"{c.intervals.cv:.0%} (> {stats.NOISE_CV:.0%}): too noisy to "
                             "conclude")
    notes += [f"- +{e['t'] - t0:.1f} s knob {e.get('knob')} = {e.get('value')} on "
              f"{', '.join(e.get('pairs') or []) or 'all pairs'}" for e in session.knob_changes]
    notes += [f"- +{e['t'] - t0:.1f} s knob {e.get('knob')} = {e.get('value')} refused: "
              f"{e.get('message', '')}" for e in session.knob_errors]
    notes += [f"- +{e['t'] - t0:.1f} s mark: {e.get('text', '')}" for e in session.marks]
    notes += [f"- +{e['t'] - t0:.1f} s error"
              + (f" ({e['pair'] or e['host']})" if e.get("pair") or e.get("host") else "")
              + f": {e.get('message', '')}" for e in session.errors]
    return notes
