"""Two sessions side by side: phases matched by pair label and configuration, each cell the
one figure every table prints (abtui.reports.throughput), with deltas (right vs left) and their
intervals and verdicts from run-level values. A configuration recorded
on one side only is listed with the other side empty, never dropped. When the sessions share
no pair label (e.g. `stock` then `patched`) and each has one pair, those pairs are matched."""

from __future__ import annotations

from typing import Any

from abtui.core.configuration import config_id
from abtui.reports import flags, host_state, matching, stats
from abtui.reports.formatting import (
    fmt_cell,
    fmt_compare,
    legend,
    md_table,
    no_interval_note,
    rate_unit_of,
)
from abtui.reports.gate import CONTROL, GateCase, Judged, judge, unmatched
from abtui.reports.gate import junit as gate_junit
from abtui.sessions.session import Session


def _pair_map(left: Session, right: Session) -> list[tuple[str, str]]:
    shared = [p for p in left.pairs if p in right.pairs]
    if shared:
        return [(p, p) for p in shared] + [(p, "") for p in left.pairs if p not in shared] + [
            ("", p) for p in right.pairs if p not in shared]
    if len(left.pairs) == 1 and len(right.pairs) == 1:
        return [(left.pairs[0], right.pairs[0])]
    return [(p, "") for p in left.pairs] + [("", p) for p in right.pairs]


def common_knobs(left: Session, right: Session) -> dict[str, Any]:
    """The knobs with one value in every configuration of both sessions: a table of the two
    that names each row by what sets it apart (`rows`' `common`) says these once above it,
    as the report does (abtui.reports.naming)."""
    from abtui.reports.naming import config_of, ordered_cells, shared_knobs
    from abtui.reports.procedure.sections import layout_of

    return shared_knobs([config_of(s, row) for s in (left, right)
                         for row in ordered_cells(s, layout_of(s)[1]).values() if row])


def rows(left: Session, right: Session, match: str = "config",
         common: dict[str, Any] | None = None) -> list[dict[str, Any]]:
    """One row per (pair, configuration) found on either side: `config` the configuration's
    identity (what the sides are matched by, the gate's and junit's name; with `match`
    "knobs", abtui.reports.matching's key, host's own values alike), `shown` its name
    as the report prints it (abtui.reports.naming.labels: each value as the profile names it,
    `tunnel=ipsec (lab: vxlan)`), taken from the side that has it, the left first. Rows
    go in each profile's order (its matrix's values as it lists them, as the report's
    tables), not the order the (shuffled) runs took: the left's, then what only the right
    has. With `common` (common_knobs), `shown` leaves out the knobs every row shares."""
    from abtui.reports.naming import labels, ordered_cells
    from abtui.reports.procedure.sections import layout_of

    lt, rt = (ordered_cells(s, layout_of(s)[1]) for s in (left, right))
    shown = {**labels(right, rt, common=common), **labels(left, lt, common=common)}
    if match == "knobs":
        shared = matching.knobs_of(left) & matching.knobs_of(right)
        lt, rt = matching.rekeyed(left, lt, shared), matching.rekeyed(right, rt, shared)
        shown = {}
    out = []
    for lp, rp in _pair_map(left, right):
        configs = [c for c in lt if lp in lt[c]] + [
            c for c in rt if rp in rt[c] and not (c in lt and lp in lt[c])]
        for config in configs:
            lc, rc = lt.get(config, {}).get(lp), rt.get(config, {}).get(rp)
            row: dict[str, Any] = {
                "pair": lp if lp == rp or not rp else (rp if not lp else f"{lp} → {rp}"),
                "config": config, "shown": shown.get(config, config), "left": lc, "right": rc,
                "only": "left" if rc is None else "right" if lc is None else None}
            if lc is not None and rc is not None:
                d, v = stats.compare_cells(lc, rc)
                row.update(delta=d, verdict=v)
            out.append(row)
    return out


def markdown(left: Session, right: Session, units: str = "bits", match: str = "config") -> str:
    """The comparison table, rates in `units` (bits or bytes per second, as `abtui export`)."""
    table = rows(left, right, match)
    seen: list[stats.Delta | None] = []
    body, unit = _table(left, right, table, False, seen, units)
    head = [f"# compare {left.name} → {right.name}", "",
            *host_state.compare_section(left, right, _pair_map(left, right)),
            f"throughput in {unit}. " + legend(left.name), ""]
    out = [*head, body]
    if any(c.samples_rx for r in table for c in (r["left"], r["right"]) if c):
        back, unit = _table(left, right, table, True, seen, units)
        out += ["", f"## Other direction (--bidir: receiver → sender), {unit}", "", back]
    notes = no_interval_note(seen)
    if notes:
        out += ["", *notes]
    return "\n".join(out) + "\n"


def _table(left: Session, right: Session, table: list[dict[str, Any]], rx: bool,
           seen: list[stats.Delta | None], units: str = "bits") -> tuple[str, str]:
    """The pair's own direction, or (`rx`) --bidir's way back compared apart from it; and
    the unit its figures are in."""
    unit = rate_unit_of((c for r in table for c in (r["left"], r["right"]) if c), rx, units)
    div = unit.div
    body = []
    for r in table:
        lc, rc = r["left"], r["right"]
        change = fmt_compare(lc, rc, rx, seen) + _flagged(left, lc, right, rc) \
            if r["only"] is None else (
                f"only in {left.name if r['only'] == 'left' else right.name}")
        body.append([r["pair"], r["shown"],
                     fmt_cell(lc, div, rx) + flags.of_cell(left, lc).mark(),
                     fmt_cell(rc, div, rx) + flags.of_cell(right, rc).mark(), change])
    return md_table(["pair", "configuration", left.name, right.name, "Δ"], body), unit.name


def _flagged(left: Session, lc: stats.Cell | None, right: Session,
             rc: stats.Cell | None) -> str:
    """A Δ made of flagged cells carries their flags (abtui.reports.flags)."""
    words = [*flags.of_cell(left, lc).words, *flags.of_cell(right, rc).words]
    return f" {flags.MARK} on {', '.join(dict.fromkeys(words))}" if words else ""


def _config_values(*sessions: Session) -> dict[str, dict[str, Any]]:
    """Each configuration's label -> its {knob: value}, as the sessions' phases recorded it."""
    out: dict[str, dict[str, Any]] = {}
    for s in sessions:
        for pair in s.pairs:
            for ph in s.phases_of(pair):
                out.setdefault(config_id(ph.config), dict(ph.config))
    return out


def _recorded(session: Session, c: stats.Cell) -> dict[str, Any]:
    """A cell's configuration {knob: value} as its session recorded it."""
    return next((dict(ph.config) for ph in session.phases_of(c.pair)
                 if c.phases and ph.index == c.phases[0]), {})


# what every cell's Δ is the ratio of (the gate's: abtui.reports.trimmed.NAME; an
# alternation's: its rows' own `delta`)
DELTA_OF = "means"


def to_json(left: Session, right: Session, match: str = "config") -> dict[str, Any]:
    """The rows as JSON; `config` the configuration as recorded (the left's, with `match`
    knobs, where the sides' host's own values may differ), `config_label` what matched."""
    values = _config_values(left, right)
    out = []
    for r in rows(left, right, match):
        d, v = r.get("delta"), r.get("verdict")
        config = values.get(r["config"]) or (
            _recorded(left, r["left"]) if r["left"] else _recorded(right, r["right"]))
        out.append({
            "pair": r["pair"], "config": config,
            "config_label": r["config"], "only": r["only"],
            "left": r["left"].to_json() if r["left"] else None,
            "right": r["right"].to_json() if r["right"] else None,
            "delta_of": DELTA_OF, "delta_pct": d.pct if d else None,
            "ci_pct": [d.low, d.high] if d and d.low is not None else None,
            "ci_missing": d.why if d and d.low is None else None,
            "verdict": v.to_json() if v else None,
            "flags": {"left": flags.of_cell(left, r["left"]).lines,
                      "right": flags.of_cell(right, r["right"]).lines},
        })
    pairs = _pair_map(left, right)
    return {"left": left.name, "right": right.name,
            "host_state": host_state.to_json(host_state.between(left, right, pairs)),
            "host_state_within": {s.name: host_state.to_json(host_state.within(s),
                                                             ("start", "end"))
                                  for s in (left, right)},
            "rows": out}


def flagged(left: Session, right: Session, match: str = "config") -> list[str]:
    """One line per compared cell whose numbers carry a flag (abtui.reports.flags): what
    the gate's answer for it stands on."""
    out = []
    for r in rows(left, right, match):
        for s, c in ((left, r["left"]), (right, r["right"])):
            for line in flags.of_cell(s, c).lines:
                out.append(f"{s.name} {r['pair']} {r['shown']}: {line}")
    return out


def host_changes(left: Session, right: Session) -> list[host_state.Change]:
    """Every difference between the two sessions' hosts beside the knobs (the gate says
    how many)."""
    return host_state.between(left, right, _pair_map(left, right))


# ---- the regression gate (abtui.reports.gate) ------------------------------------------------

def gate(left: Session, right: Session, threshold: float, match: str = "config",
         latency: str | None = None) -> list[GateCase]:
    """Every pair, configuration and direction of the comparison, answered (pass,
    regression, inconclusive; unmatched for what only one side has): abtui.reports.gate.
    With `latency` (a statistic of abtui.reports.latency.STATS: `p99`), each matched row's
    RTT is judged too, in the same false discovery rate control."""
    table = rows(left, right, match)
    judged: list[Judged] = []
    for r in table:
        if r["only"] is not None:
            continue
        lc, rc = r["left"], r["right"]
        judged.append(Judged(r["pair"], r["config"], lc.samples, rc.samples))
        if lc.samples_rx or rc.samples_rx:
            judged.append(Judged(r["pair"], r["config"], lc.samples_rx, rc.samples_rx,
                                 "throughput_rx"))
    if latency is not None:
        from abtui.reports import latency as lat

        judged += lat.judged(left, right, table, latency)
    out = judge(judged, threshold)
    return out + [unmatched(r["pair"], r["config"],
                            left.name if r["only"] == "left" else right.name)
                  for r in table if r["only"] is not None]


def junit(left: Session, right: Session, cases: list[GateCase], threshold: float) -> str:
    """JUnit XML: one test case per pair, configuration and direction (abtui.reports.gate)."""
    return gate_junit(f"abtui compare {left.name} -> {right.name} (regression beyond "
                      f"-{threshold:g}%, {CONTROL} over the cases judged)", cases)
