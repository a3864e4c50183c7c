"""How every table prints a figure, a Δ and its verdict, one place for all of them (the generic
report, the procedures' tables, compare, the console's compare screen): the same cell is never
formatted two ways. The numbers themselves (3 significant digits, units) are
abtui.core.numbers', which the console and progress lines share."""

from __future__ import annotations

import math
from collections.abc import Iterable
from datetime import UTC, datetime

from abtui.core import numbers
from abtui.core.numbers import Unit, rate_unit, sig
from abtui.reports import stats


def md_table(header: list[str], rows: list[list[str]]) -> str:
    lines = ["| " + " | ".join(header) + " |", "|" + "---|" * len(header)]
    lines += ["| " + " | ".join(str(c).replace("|", "\\|") for c in row) + " |"
              for row in rows]
    return "\n".join(lines)


def fmt_time(t: float | None) -> str:
    """A session's wall-clock time; "?" for none, or one no calendar holds (a damaged file's
    1e300 or NaN)."""
    if t is None:
        return "?"
    try:
        return datetime.fromtimestamp(t, UTC).strftime("%Y-%m-%d %H:%M:%S UTC")
    except (OverflowError, OSError, ValueError):
        return "?"


def fmt_duration(seconds: float) -> str:
    """h:mm:ss; "?" for a span no clock gives (a damaged file's infinite or NaN times)."""
    if not math.isfinite(seconds):
        return "?"
    s = round(seconds)
    return f"{s // 3600}:{s % 3600 // 60:02d}:{s % 60:02d}"


def fmt_mean_sd(s: stats.Summary, div: float) -> str:
    """`mean ± stdev` of per-interval values (UDP jitter), 3 significant digits."""
    if not s.n or s.mean is None:
        return "—"
    return numbers.spread(s.mean / div, None if s.stdev is None else s.stdev / div)


def fmt_rate(s: stats.Summary, div: float, spread: bool = True) -> str:
    """A cell's one figure: the mean of its run-level values to 3 significant digits, then
    (`spread`) `± stdev (n=runs)` (abtui.core.numbers.spread) when there are several runs;
    `—` when it has none. No noise flag: whether the runs' spread hides an effect is what
    the Δ's interval and verdict say, against that effect."""
    if not s.n or s.mean is None:
        return "—"
    mean = s.mean / div
    if spread and s.stdev is not None:
        return f"{numbers.spread(mean, s.stdev / div)} (n={s.n})"
    return sig(mean)


def fmt_cell(c: stats.Cell | None, div: float, rx: bool = False, spread: bool = True) -> str:
    """fmt_rate of a cell's throughput (its way back with `rx`)."""
    if c is None:
        return "—"
    return fmt_rate(c.throughput_rx if rx else c.throughput, div, spread)


fmt_ms = numbers.ms  # a time in ms as ping prints it (`0.045`, `1.23`, `15.9`)


def fmt_delta(d: stats.Delta | None, v: stats.Verdict) -> str:
    """`+6.2% [+4.1, +8.3] (p=0.008 n=5+5)`, `+0.4% [-2.0, +2.9] ~ (p=0.40 n=5+5)`,
    `+10.0% ? (n=1+1: too few runs)` (no interval with fewer than 2 runs on a side). Interval
    and verdict come from one procedure (abtui.reports.stats.log_welch): they agree."""
    if d is None:
        return "—"
    return f"{d} {v.text[v.text.index('('):] if v.significant else v.text}"


def fmt_compare(base: stats.Cell | None, other: stats.Cell | None, rx: bool = False,
                seen: list[stats.Delta | None] | None = None) -> str:
    """fmt_delta of two cells' run-level values (--bidir's way back with `rx`); the Δ is
    appended to `seen` (a report's notes say why one has no interval)."""
    if base is None or other is None:
        return "—"
    d, v = stats.compare_cells(base, other, rx=rx)
    if seen is not None:
        seen.append(d)
    return fmt_delta(d, v)


def rate_unit_of(cells: Iterable[stats.Cell | None], rx: bool = False,
                 units: str = "bits") -> Unit:
    """The unit every figure of a table is shown in (rate_unit of the cells' means)."""
    means = [s.mean for c in cells if c is not None
             for s in ((c.throughput_rx if rx else c.throughput),) if s.mean is not None]
    return rate_unit(means, units)


def no_interval_note(deltas: Iterable[stats.Delta | None]) -> list[str]:
    """The note a report carries when one of its Δ is printed without an interval."""
    if not any(d is not None and d.why.startswith(stats.FEW_RUNS) for d in deltas):
        return []
    return ["- A Δ without [low, high]: fewer than 2 runs on a side, so no confidence "
            "interval. The intervals of one run are not independent samples (TCP state "
            "carries over), so an interval made from them would be far too narrow."]


def legend(base: str, spread: bool = True) -> str:
    """What a throughput table's figures are (README: "How the numbers are made"); `spread`:
    its cells carry `± stdev (n=runs)` (a first table's carry the mean alone)."""
    runs = (", ± their stdev and the number of runs when there are several" if spread else
            "; the number of runs is the n in the verdict")
    return ("Each figure: the mean of the cell's run-level values (one per run within a "
            "phase: the bits of its counted intervals ÷ their seconds), to 3 significant "
            f"digits as iperf3 prints them{runs}. Δ: the ratio of the plain means vs "
            f"{base}, as a change in %, with its 95 % confidence interval (from run-level "
            "values only, Welch's t on the log ratio; a side's standard error never below "
            "half its last printed digit), then that test's verdict with its p: significant "
            "exactly when 0 is outside the interval (~: no significant difference; ?: fewer "
            "than 2 runs on a side, too few to tell).")


UNBOUNDED = "interval not bounded yet: too few blocks to bound it"


def bounded(row: dict[str, object]) -> dict[str, object]:
    """A verdict row for CSV and JSON: an interval with no bound (a low at -100 %, a high at
    infinity or none, as the live rule reports one it cannot bound yet) left empty, with
    `interval_note` saying why, never `-100.0,inf`."""
    low, high = row.get("low"), row.get("high")
    numbers = isinstance(low, int | float) and isinstance(high, int | float)
    if numbers and low > -100.0 and math.isfinite(high) and high < 1e6:  # type: ignore[operator,arg-type]
        return {**row, "interval_note": None}
    if low is None and high is None and not isinstance(row.get("pct"), int | float):
        return {**row, "interval_note": None}  # no figure at all: nothing to explain
    return {**row, "low": None, "high": None, "interval_note": UNBOUNDED}
