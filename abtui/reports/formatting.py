"""How every table prints a figure, a Δ and its verdict, one place for all of them (the generic
report, the procedures' tables, compare, the console's compare screen): the same cell is never
formatted two ways."""

from __future__ import annotations

import math
from collections.abc import Iterable
from dataclasses import dataclass
from datetime import UTC, datetime

from abtui.reports import stats

# iperf3 prints rates with three significant digits (`9.41 Gbits/sec`, `155 Mbits/sec`): a
# table's figures never claim more.
SIG_DIGITS = 3
UNITS = ("bits", "bytes")
# (divisor of bits/s, name), largest first: bits as iperf3 counts them (1000-based); bytes as
# the crypto posts write them (MB/s: 10^6 bytes per second).
_SCALES = {"bits": ((1e9, "Gbit/s"), (1e6, "Mbit/s"), (1e3, "kbit/s"), (1.0, "bit/s")),
           "bytes": ((8e9, "GB/s"), (8e6, "MB/s"), (8e3, "kB/s"), (8.0, "B/s"))}


@dataclass(frozen=True, slots=True)
class Unit:
    """The unit a table's rates are shown in: bits/s divided by `div`, named `name`."""

    div: float
    name: str


def rate_unit(values: Iterable[float], units: str = "bits") -> Unit:
    """The largest unit in which every value still has 3 significant digits before rounding
    (its smallest value ≥ 1): 0.21 Gbit/s reads `210 Mbit/s`, 9.41 Gbit/s `9.41 Gbit/s`.
    `units`: "bits" (Gbit/s, Mbit/s) or "bytes" (GB/s, MB/s)."""
    if units not in _SCALES:
        raise ValueError(f"units {units!r}: bits or bytes")
    finite = [abs(v) for v in values if math.isfinite(v) and v]
    low = min(finite, default=0.0)
    scales = _SCALES[units]
    for div, name in scales:
        if low >= div:
            return Unit(div, name)
    return Unit(*scales[-1]) if low else Unit(*scales[1])


def sig(x: float, digits: int = SIG_DIGITS) -> str:
    """`x` with `digits` significant digits and no exponent: 9.412 -> 9.41, 155.0 -> 155,
    10807 -> 10800, 0.2134 -> 0.213."""
    if not math.isfinite(x):
        return "—"
    if x == 0:
        return "0"
    places = digits - 1 - math.floor(math.log10(abs(x)))
    rounded = round(x, places)
    if rounded and math.floor(math.log10(abs(rounded))) != math.floor(math.log10(abs(x))):
        places -= 1  # 999.6 -> 1000: one place fewer
    return f"{round(x, places):.{max(places, 0)}f}"


def _places(x: float, digits: int = SIG_DIGITS) -> int:
    """The decimal places `sig` gives `x` (a stdev is shown to the mean's places)."""
    text = sig(x, digits)
    return len(text.partition(".")[2])


def md_table(header: list[str], rows: list[list[str]]) -> str:
    lines = ["| " + " | ".join(header) + " |", "|" + "---|" * len(header)]
    lines += ["| " + " | ".join(c.replace("|", "\\|") for c in row) + " |" for row in rows]
    return "\n".join(lines)


def fmt_time(t: float | None) -> str:
    if t is None:
        return "?"
    return datetime.fromtimestamp(t, UTC).strftime("%Y-%m-%d %H:%M:%S UTC")


def fmt_duration(seconds: float) -> str:
    s = round(seconds)
    return f"{s // 3600}:{s % 3600 // 60:02d}:{s % 60:02d}"


def fmt_mean_sd(s: stats.Summary, div: float, digits: int = 2, warn: bool = True) -> str:
    """`mean ± stdev` of per-interval values (UDP jitter); ⚠ when noisy."""
    if not s.n or s.mean is None:
        return "—"
    text = f"{s.mean / div:.{digits}f}"
    if s.stdev is not None:
        text += f" ± {s.stdev / div:.{digits}f}"
    return text + (" ⚠" if warn and s.noisy else "")


def fmt_rate(s: stats.Summary, div: float, noisy: bool = False, spread: bool = True) -> str:
    """A cell's one figure: the mean of its run-level values to 3 significant digits, then
    (`spread`) `± stdev (n=runs)` to the mean's places when there are several runs, ⚠ when
    its intervals are too noisy; `—` when it has none."""
    if not s.n or s.mean is None:
        return "—"
    mean = s.mean / div
    text = sig(mean)
    if spread and s.stdev is not None:
        text += f" ± {s.stdev / div:.{_places(mean)}f} (n={s.n})"
    return text + (" ⚠" if noisy else "")


def fmt_cell(c: stats.Cell | None, div: float, rx: bool = False, spread: bool = True) -> str:
    """fmt_rate of a cell's throughput (its way back with `rx`)."""
    if c is None:
        return "—"
    if rx:
        return fmt_rate(c.throughput_rx, div, c.intervals_rx.noisy, spread)
    return fmt_rate(c.throughput, div, c.noisy, spread)


def fmt_ms(x: float | None) -> str:
    """A time in ms as ping prints it: 3 significant digits, at most 3 decimals (`0.045`,
    `1.23`, `15.9`)."""
    if x is None or not math.isfinite(x):
        return "—"
    return f"{x:.3f}" if abs(x) < 1 else sig(x)


def fmt_bps(bps: object, div: float) -> str:
    """One rate (bits/s) in a table's unit, 3 significant digits; `—` when not a number."""
    if isinstance(bps, int | float) and not isinstance(bps, bool) and math.isfinite(bps):
        return sig(bps / div)
    return "—"


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
            f"digits as iperf3 prints them{runs}. Δ: change of the mean vs "
            f"{base} with its 95 % confidence interval (from run-level values only, Welch's t "
            "on the log ratio), then that test's verdict with its p: significant exactly when "
            "0 is outside the interval (~: no significant difference; ?: fewer than 2 runs "
            "on a side, too few to tell). ⚠: the cell's intervals, all its phases together, "
            f"vary by more than {stats.NOISE_CV * 100:.0f} % (stdev ÷ mean): too noisy to "
            "conclude.")
