"""The Markdown report of a session, ready to paste into a mailing-list reply or a review:
hosts, test options, the phase table (configuration | A | B | Δ), deltas against a base
configuration, latency, runs, the throughput chart, and what went wrong."""

from __future__ import annotations

from typing import Any

from abtui.core import events
from abtui.core.numbers import rate_unit, sig
from abtui.reports import samples, stats
from abtui.reports.formatting import (
    fmt_cell,
    fmt_compare,
    fmt_duration,
    fmt_mean_sd,
    fmt_ms,
    fmt_time,
    legend,
    md_table,
    no_interval_note,
    rate_unit_of,
)
from abtui.reports.naming import (
    common_knobs,
    config_of,
    labels,
    ordered_cells,
    shown_apart,
    title,
)
from abtui.reports.plots import throughput_chart
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
             chart: bool = True, units: str | None = None) -> str:
    """The whole report. `base`: the pair deltas are taken against (profile's base_pair,
    else the first); `base_config`: the configuration for the per-pair delta table; `units`:
    rates in bits (Gbit/s, Mbit/s) or bytes (MB/s) per second; None: the procedure's first
    table in its layout's own unit (the crypto posts' MB/s), every other table in bits."""
    from abtui.reports.procedure.sections import layout_of, sections

    _layout, doc = layout_of(session)
    table = ordered_cells(session, doc)
    bp = base_pair(session, base)
    seen: list[stats.Delta | None] = []  # every Δ printed, for the notes
    out = [f"# {title(session)}", "", *_overview(session)]
    common = common_knobs(session, table)
    if common:  # the tables below name each configuration by what sets it apart
        from abtui.reports.naming import shown_config

        out.append(f"- in every configuration: {shown_config(session, common)}")
    out.append("")
    from abtui.reports import alternation, bisection, host_state

    out += bisection.markdown(session)  # a bisection's answer first, when one ran
    out += alternation.markdown(session)  # the answer first, when an alternation ran
    from abtui.reports import why_report

    out += why_report.markdown(session)  # why: the frames that moved, when profiled
    from abtui.reports import flags

    out += flags.verdict_note(session)  # what those verdicts stand on, when flagged
    out += sections(session, base, seen, units)  # the [report] layout, lab translations
    out += host_state.report_section(session)  # its hosts changed while it measured
    units = units or "bits"
    out += ["## Hosts", "", _hosts(session), "", *_clock_lines(session)]
    options = _options(session)
    if options:
        out += ["## Test options", "", options, ""]
    out += ["## Throughput per configuration", "",
            _pair_table(session, table, bp, False, seen, units), "", SIDES, ""]
    if any(c.samples_rx for row in table.values() for c in row.values()):
        out += ["## Other direction (--bidir: receiver → sender)", "",
                _pair_table(session, table, bp, True, seen, units), ""]
    out += flags.report_section(session, table)  # competing traffic, saturation
    udp = _udp(session, table)
    if udp:
        out += ["## UDP loss and jitter", "", udp, ""]
    from abtui.reports import cpu

    out += cpu.sections(session, table, bp, seen)
    if len(table) > 1 or base_config is not None:  # only what may be compared: _vs_config
        out += _vs_config(session, table, base_config, seen, doc)
    out += ["## Latency (ping RTT, ms)", "", _latency(session, table), ""]
    if any(c.rtt.n for row in table.values() for c in row.values()):
        out += [LATENCY_NOTE, ""]
    rr = _rr_latency(session, table)
    if rr:
        out += [f"## Request/response latency (sockperf {_rr_mode(session)}, round trip, ms)",
                "", rr, "", RR_NOTE, ""]
    if session.runs:
        out += ["## Runs", "", _runs(session, units, common), ""]
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
             f"- session: {session.name or '(unnamed)'}",
             f"- started: {fmt_time(session.start_t)}, duration {fmt_duration(session.duration)}"
             + (f", ended: {session.end_reason}" if session.end_reason else ", cut short"),
             "- pairs: " + ", ".join(_pair_text(session, p) for p in session.pairs)]
    if session.skews_ms:
        lines.append(f"- start skew between pairs: max {fmt_ms(max(session.skews_ms))} ms "
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
            rows.append([pair, role, alias, f.get("os", ""), _kernels(f, session.booted.get(alias)),
                         f.get("nic_driver", ""), f.get("nic_firmware", "")])
    if not rows:  # no pair table: list every host we have facts for
        rows = [["", "", alias, f.get("os", ""), _kernels(f, session.booted.get(alias)),
                 f.get("nic_driver", ""), f.get("nic_firmware", "")]
                for alias, f in session.facts.items()]
    if not rows:
        return "(no host facts recorded)"
    return md_table(["pair", "role", "host", "OS", "kernel", "NIC driver", "NIC firmware"],
                    rows)


def _clock_lines(session: Session) -> list[str]:
    """The clock the figures are on, said when it is not the hosts' own (an instruction-
    counted lab guest): a figure on it counts guest instructions, not seconds."""
    from abtui.core.clock import HOST, clock_label, session_clocks

    clocks = session_clocks(session.facts)
    if clocks == [HOST] or not clocks:
        return []
    named = " and ".join(clock_label(c) for c in clocks)
    return [f"Clock: {named}. Figures on guest instructions count the guest's own executed "
            "instructions (bytes per instruction, scaled), not the machine's time; they "
            "compare only with figures at the same shift, never with wall-clock ones.", ""]


def _kernels(facts: dict[str, Any], booted: list[str] | None) -> str:
    """The release the host started on (its facts), then every other one a build switch
    booted it into and verified (`booted`), with the number of boots (a build alternation on
    the same hosts)."""
    start = str(facts.get("kernel_release", ""))
    if not booted:
        return start
    releases = list(dict.fromkeys(r for r in (start, *booted) if r))
    return f"{', '.join(releases)} ({len(booted)} boot{'s' if len(booted) != 1 else ''})"


def _options(session: Session) -> str:
    """The iperf3 command line each pair ran, one row per distinct line (per direction)."""
    from abtui.reports.commands import command_lines

    rows = [[pair, direction, line, ping]
            for pair, direction, line, ping in command_lines(session)]
    return md_table(["pair", "direction", "iperf3 command", "ping"], rows) if rows else ""


def _pair_table(session: Session, table: dict[str, dict[str, stats.Cell]], bp: str | None,
                rx: bool, seen: list[stats.Delta | None], units: str = "bits") -> str:
    """A configuration per row, a column per pair (its one figure), then each other pair's
    delta vs the base pair (--bidir's way back with `rx`); a `[report] reference` pair is
    shown, never compared."""
    from abtui.reports import flags
    from abtui.reports.naming import references
    from abtui.reports.procedure.sections import layout_of

    u = rate_unit_of((c for row in table.values() for c in row.values()), rx, units)
    div, unit = u.div, u.name
    refs = references(session, layout_of(session)[1], bp)
    others = [p for p in session.pairs if p != bp and p not in refs]
    header = ["configuration", *[f"{p} ({unit})" for p in session.pairs],
              *[f"Δ {p} vs {bp}" for p in others]]
    rows = []
    shown = labels(session, table, short=True)
    for config, row in table.items():
        cells = [fmt_cell(row.get(p), div, rx) + flags.of_cell(session, row.get(p)).mark()
                 for p in session.pairs]
        deltas = [fmt_compare(row.get(bp or ""), row.get(p), rx, seen)
                  + flags.delta_mark(session, row.get(bp or ""), row.get(p)) for p in others]
        rows.append([shown[config], *cells, *deltas])
    note = ("Figures, Δ and verdicts as above, for the way back (its own run-level values)."
            if rx else legend(bp or "the base pair"))
    return md_table(header, rows) + "\n\n" + note


# Which side's interval lines a pair's throughput is made of, per protocol
# (abtui.parse.iperf3.sides).
SIDES = ("Intervals are iperf3's own lines: for TCP the client's (the sender's; the "
         "receiver's with -R), for UDP the receiving side's (what arrived, not the rate "
         "offered).")


def _udp(session: Session, table: dict[str, dict[str, stats.Cell]]) -> str:
    """Per configuration and pair: datagrams lost (Σ lost / Σ due, as iperf3 sums them) and
    the jitter per interval, for the pairs that ran UDP."""
    rows = []
    shown = labels(session, table, short=True)
    for config, row in table.items():
        for pair, c in row.items():
            q = stats.udp_quality(session, pair, phases=c.phases)
            if q is None:
                continue
            rows.append([shown[config], pair, _pct(q.lost_percent), f"{q.lost}/{q.packets}",
                         fmt_mean_sd(q.jitter, 1.0)])
    if not rows:
        return ""
    return md_table(["configuration", "pair", "lost %", "lost/datagrams", "jitter (ms)"],
                    rows) + ("\n\nthe receiving side's interval lines; jitter: mean ± stdev "
                             "over intervals.")


def _pct(x: float | None) -> str:
    return sig(x)  # 3 significant digits, — when unknown


def _vs_config(session: Session, table: dict[str, dict[str, stats.Cell]],
               base_config: str | None, seen: list[stats.Delta | None],
               doc: dict[str, Any]) -> list[str]:
    """Each configuration vs the first (in the profile's order) of those it may be compared
    with: the same direction and tunnel type (naming.comparable). Nothing when no two are
    comparable."""
    from abtui.reports.naming import comparable

    shown = labels(session, table, short=True)
    by_label = {v: k for k, v in shown.items()}
    base_config = by_label.get(base_config or "", base_config)
    if base_config is not None and base_config not in table:
        from abtui.core.errors import BadInput

        raise BadInput(f"--base-config {base_config!r}: the session's configurations are "
                       + "; ".join(shown.values()))
    configs = {c: config_of(session, row) for c, row in table.items()}
    bases = [base_config] if base_config is not None else []
    for c in table:
        if not any(comparable(doc, configs[b], configs[c]) for b in bases):
            bases.append(c)
    out: list[str] = []
    for base in bases:
        rows = [[shown[config], *[fmt_compare(table[base].get(p), row.get(p), seen=seen)
                           for p in session.pairs]]
                for config, row in table.items()
                if config != base and comparable(doc, configs[base], configs[config])]
        if rows:
            out += [f"## Δ vs configuration `{shown[base]}`", "",
                    md_table(["configuration", *session.pairs], rows), ""]
    return out


LATENCY_NOTE = ("p50 … p99.9: the nearest-rank percentiles of the replies (a measured reply, "
                "never interpolated); `—` with fewer replies than make one more than the "
                "slowest: 10 for p90, 100 for p99, 1000 for p99.9.")


def _latency(session: Session, table: dict[str, dict[str, stats.Cell]]) -> str:
    """Seed 002's latency table: min/avg/max/stddev per pair and configuration, and the
    percentiles (abtui.reports.latency: `—` with too few replies for one)."""
    from abtui.reports import latency

    rows = []
    shown = labels(session, table, short=True)
    for config, row in table.items():
        for pair in session.pairs:
            c = row.get(pair)
            if c is None or not c.rtt.n:
                continue
            r = latency.latency(session, pair, phases=c.phases)
            rows.append([shown[config], pair, *(fmt_ms(x) for x in (r.min, r.avg, r.max,
                                                                     r.stddev)),
                         *(fmt_ms(r.percentiles[latency.name(q)])
                           for q in latency.PERCENTILES),
                         str(r.n) + (f" ({r.lost} lost)" if r.lost else "")])
    if not rows:
        return "(no ping replies recorded)"
    return md_table(["configuration", "pair", "min", "avg", "max", "stddev",
                     *(latency.name(q) for q in latency.PERCENTILES), "replies"], rows)


RR_NOTE = ("A request/response load beside iperf3: every round trip sockperf measured, kept "
           "to 3 significant digits; they come when each run ends (every 10 s in a longer "
           "run: sockperf in chunks), and the first ~2.5 s of a run or chunk have none "
           "(sockperf's start-up and warm-up). Percentiles as above.")


def _rr_mode(session: Session) -> str:
    """The sockperf mode the runs recorded (RUN_START's options)."""
    modes = sorted({str(r.options["sockperf"]) for r in session.runs
                    if r.options and r.options.get("sockperf")})
    return ", ".join(modes) or "ping-pong"


def _rr_latency(session: Session, table: dict[str, dict[str, stats.Cell]]) -> str:
    """The request/response load's table (abtui.reports.latency.rr_latency), in seed 002's
    shape: min/avg/max/stddev and p50 … p99.9 per pair and configuration; "" without one."""
    from abtui.reports import latency

    if not latency.has_rr(session):
        return ""
    rows = []
    shown = labels(session, table, short=True)
    for config, row in table.items():
        for pair in session.pairs:
            c = row.get(pair)
            if c is None:
                continue
            r = latency.rr_latency(session, pair, phases=c.phases)
            if not r.n:
                continue
            rows.append([shown[config], pair, *(fmt_ms(x) for x in (r.min, r.avg, r.max,
                                                                     r.stddev)),
                         *(fmt_ms(r.percentiles[latency.name(q)])
                           for q in latency.PERCENTILES), str(r.n)])
    if not rows:
        return ""
    return md_table(["configuration", "pair", "min", "avg", "max", "stddev",
                     *(latency.name(q) for q in latency.PERCENTILES), "round trips"], rows)


def _runs(session: Session, units: str = "bits", common: dict[str, Any] | None = None) -> str:
    """One row per run; its configuration without the knobs of `common` (said above)."""
    from abtui.reports import cpu

    rows, rates_seen = [], []
    for r in session.runs:
        tp = stats.run_stats(session, r)["throughput"]
        rate = samples.run_rate(session, r)
        s = r.summary or {}
        snd, rcv = s.get("sender_bits_per_second"), s.get("receiver_bits_per_second")
        rates_seen += [float(x) for x in (snd, rcv, rate) if x is not None and _is_num(x)]
        rows.append((r, tp, rate, snd, rcv, s.get("retransmits")))
    u = rate_unit(rates_seen, units)
    unit = u.name
    # UDP runs: iperf3's own loss and jitter (the receiver's summary line)
    udp = any((r.summary or {}).get("protocol") == "udp" for r in session.runs)
    body = [[r.pair, str(r.id), shown_apart(session, r.config, common or {}), r.status,
             fmt_duration(r.end - r.start) if r.end and r.start else "—",
             u.figure(rate), str(tp.n), u.figure(snd), u.figure(rcv),
             "—" if retr is None else str(retr),
             *(_udp_summary(r.summary) if udp else []), *cpu.run_columns(r), r.message]
            for r, tp, rate, snd, rcv, retr in rows]
    header, body, same = _compact(
        ["pair", "run", "configuration", "status", "duration", f"throughput ({unit})",
         "intervals", f"sender ({unit})", f"receiver ({unit})", "retransmits",
         *(["lost %", "jitter (ms)"] if udp else []), *cpu.RUN_HEADER, "message"], body)
    return md_table(header, body) + (
        "\n\n" + (f"Every run: {same}. " if same else "")
        + "throughput: the run's own figure (the bits of its counted intervals ÷ their "
        "seconds); sender, receiver: iperf3's own summary lines."
        + (cpu.RUN_NOTE if set(cpu.RUN_HEADER) & set(header) else ""))


# columns the runs table drops when every run has the same cell (said once below it)
_SAID_ONCE = ("status", "duration")


def _compact(header: list[str], body: list[list[str]]) -> tuple[list[str], list[list[str]],
                                                                str]:
    """The runs table without a column nothing is in (no message, no CPU sampled) and
    without a column every run has the same cell in (all `ok`, all 0:00:10), which the
    line below says once: a table that fits a review, not 13 columns."""
    from abtui.reports import cpu

    keep, same = [], []
    for i, name in enumerate(header):
        cells = {row[i] for row in body}
        if body and cells <= {"", "—"} and (name == "message" or name in cpu.RUN_HEADER):
            continue  # nothing measured there (iperf3's own "—" columns stay: evidence)
        if len(body) > 1 and name in _SAID_ONCE and len(cells) == 1:
            same.append(f"{name} {cells.pop()}")
            continue
        keep.append(i)
    return ([header[i] for i in keep], [[row[i] for i in keep] for row in body],
            ", ".join(same))


def _udp_summary(s: dict[str, Any] | None) -> list[str]:
    lost, jitter = (s or {}).get("lost_percent"), (s or {}).get("jitter_ms")
    return [_pct(lost) if _is_num(lost) else "—",
            fmt_ms(jitter) if _is_num(jitter) else "—"]


def _is_num(x: Any) -> bool:
    return isinstance(x, int | float) and not isinstance(x, bool)


def _notes(session: Session, table: dict[str, dict[str, stats.Cell]],
           seen: list[stats.Delta | None]) -> list[str]:
    t0 = session.start_t or 0.0
    notes = no_interval_note(seen)
    notes += [f"- +{e['t'] - t0:.1f} s knob {e.get('knob')} = {e.get('value')} on "
              f"{', '.join(e.get('pairs') or []) or 'all pairs'}" for e in session.knob_changes]
    notes += [f"- +{e['t'] - t0:.1f} s knob {e.get('knob')} = {e.get('value')} refused: "
              f"{e.get('message', '')}" for e in session.knob_errors]
    notes += [f"- +{e['t'] - t0:.1f} s ⚠ " + events.Drift.from_data(e).line(e.get("host"))
              for e in session.drifts]
    notes += [f"- +{e['t'] - t0:.1f} s mark: {_mark_text(e)}" for e in session.marks]
    notes += [f"- +{e['t'] - t0:.1f} s error"
              + (f" ({e['pair'] or e['host']})" if e.get("pair") or e.get("host") else "")
              + f": {e.get('message', '')}" for e in session.errors]
    return notes


def _mark_text(mark: dict[str, Any]) -> str:
    """A mark as the notes print it. An alternation's end mark carries its verdicts, which
    the report's first table shows: its text keeps why and when it stopped and how the
    error is controlled, not the verdict lines again (each figure once)."""
    text = str(mark.get("text", ""))
    if not mark.get("verdicts"):
        return text
    kept = [part for part in text.split("; ") if "Δ" not in part]
    return "; ".join([*kept, "verdicts: the Alternation verdict table above"])

