"""The report's "Why" section, the `"why"` rows of the JSON and CSV exports, and the HTML
report's differential flame graphs: what the alternation's profiles say moved between the
values (abtui.reports.why), copied from the session's WHY record, never computed again."""

from __future__ import annotations

import html
from collections.abc import Mapping, Sequence
from typing import Any

from abtui.core.folded import unpack
from abtui.reports import flame, why
from abtui.reports.formatting import md_table
from abtui.sessions.session import Session

TOP = 10  # rows per comparison in the report
MACHINE_NOTE = ("the host is a network namespace: its kernel and CPUs are this machine's, so "
                "the profile is the whole machine's (every host's work, and anything else "
                "running), as its CPU figures are")


def _comparisons(rows: Sequence[Mapping[str, Any]]) -> list[tuple[str, str, str, str]]:
    seen: list[tuple[str, str, str, str]] = []
    for r in rows:
        key = (str(r.get("pair")), str(r.get("host")), str(r.get("value")), str(r.get("base")))
        if key not in seen:
            seen.append(key)
    return seen


Key = tuple[str, str, str, str]  # pair, host, value, base


def _of(rows: Sequence[Mapping[str, Any]], key: Key) -> list[Mapping[str, Any]]:
    return [r for r in rows if (str(r.get("pair")), str(r.get("host")), str(r.get("value")),
                                str(r.get("base"))) == key]


def _pct(value: Any) -> str:
    return f"{value:.2f}" if isinstance(value, int | float) else "—"


def markdown(session: Session) -> list[str]:
    """The section (empty when the session has no profile)."""
    if not session.why_rows and not session.why_counters and not session.profiled:
        return []
    out = ["## Why (profiles)", ""]
    if not session.why_rows and not session.why_counters:
        hosts = ", ".join(f"{h} ({p})" for p, h in session.profiled)
        return [*out, f"Profiles were recorded on {hosts}, but no alternation judged them "
                      "(`abtui run --alternate KNOB=A,B --profile` gives each frame's change "
                      "with an interval).", ""]
    out += ["Each frame's share of the host's samples under each value, and the change in "
            "percentage points with its interval over the blocks (95 % for the family of "
            "frames tested, Bonferroni). A frame is moved only when its interval excludes "
            "zero. `self`: samples whose leaf it is; `children`: samples whose stack holds "
            "it; `thread`: samples of a thread name. The profile's own thread (`perf`, "
            "perf record) is left out of the samples counted.", ""]
    machine = False
    for key in _comparisons(session.why_rows):
        pair, host, value, base = key
        rows = _of(session.why_rows, key)
        machine = machine or any(r.get("machine") for r in rows)
        seen = session.profiled.get((pair, host), {})
        said = f", {seen['event']} at {seen['hz']} Hz" if seen.get("event") else ""
        blocks = rows[0].get("blocks") if rows else 0
        moved = sum(1 for r in rows if r.get("moved"))
        out += [f"### {pair} {host}: {value} vs {base}", "",
                f"{moved} of {len(rows)} frames tested moved ({blocks} blocks{said}).", ""]
        table = [[str(r.get("frame")), str(r.get("kind")), _pct(r.get("base_share")),
                  _pct(r.get("share")), f"{r.get('delta', 0):+.2f}", why.interval_text(r),
                  "moved" if r.get("moved") else "—"] for r in why.top(rows, TOP)]
        out += [md_table(["frame", "kind", f"{base} %", f"{value} %", "Δ pp", "interval",
                          "moved"], table), ""]
    out += _counters(session)
    if machine:
        out += [f"Note: {MACHINE_NOTE}.", ""]
    return out


def _counters(session: Session) -> list[str]:
    """The counters' movers, LKP's `%change` table: base rate, change with its interval,
    value's rate, counter (a second each)."""
    rows = session.why_counters
    if not rows:
        return []
    out = ["### Counters (a second)", "",
           "Each counter's rate under each value (softnet, softirqs, nstat, kernel threads' CPU "
           "ticks) and its change in % of the base's rate, with the frames' interval; the "
           "receive path's batching first (`per.*`: counts per count, not a second: packets "
           "per NET_RX softirq, IP segments per IP packet taken), then the largest movers.",
           ""]
    for key in _comparisons(rows):
        ranked = sorted(_of(rows, key), key=lambda r: (not r.get("moved"),
                                                        -abs(r.get("pct") or 0)))
        # the receive path's batching (abtui.reports.why.RATIOS) always, then the movers
        ratio = [r for r in ranked if str(r.get("counter")).startswith("per.")]
        mine = ratio + [r for r in ranked if r not in ratio][:TOP]
        table = [[f"{r.get('base_rate', 0):.4g}", f"{r.get('pct', 0):+.1f}%",
                  _interval(r), f"{r.get('rate', 0):.4g}", str(r.get("counter")),
                  "moved" if r.get("moved") else "—"] for r in mine]
        out += [f"{key[0]} {key[1]}: {key[2]} vs {key[3]}", "",
                md_table([key[3], "%change", "interval", key[2], "counter", "moved"], table), ""]
    return out


def _interval(row: Mapping[str, Any]) -> str:
    low, high = row.get("low"), row.get("high")
    if isinstance(low, int | float) and isinstance(high, int | float):
        return f"[{low:+.1f}, {high:+.1f}]"
    return "—"


def json_counters(session: Session) -> list[dict[str, Any]]:
    """JSON's `"why_counters"`: every counter row (abtui.reports.why.COUNTER_KEYS)."""
    return [{k: r.get(k) for k in why.COUNTER_KEYS} for r in session.why_counters]


def json_rows(session: Session) -> list[dict[str, Any]]:
    """JSON's `"why"`: every row (abtui.reports.why.ROW_KEYS)."""
    return [{k: r.get(k) for k in why.ROW_KEYS} for r in session.why_rows]


def csv_rows(session: Session) -> tuple[list[str], list[list[Any]]]:
    return list(why.ROW_KEYS), [[r.get(k) for k in why.ROW_KEYS] for r in session.why_rows]


def flame_svgs(session: Session) -> list[tuple[str, str]]:
    """(title, SVG) per comparison: the value's stacks coloured by its rows."""
    out = []
    for f in session.why_flames:
        key = (str(f.get("pair")), str(f.get("host")), str(f.get("value")), str(f.get("base")))
        title = f"{key[0]} {key[1]}: {key[2]} vs {key[3]}"
        stacks = unpack(f.get("stacks"))
        if stacks:
            out.append((title, flame.svg(stacks, _of(session.why_rows, key), title)))
    return out


def html_section(session: Session) -> str:
    """The flame graphs, each under its heading (empty without any)."""
    parts = [f"<h3>{html.escape(title)}</h3>\n<figure>{svg}</figure>"
             for title, svg in flame_svgs(session)]
    if not parts:
        return ""
    return "<h2>Why: differential flame graphs</h2>\n" + "\n".join(parts)
