"""How the product prints a number: 3 significant digits, a rate in the unit its value (or its
column's smallest value) reads best in, `—` for a figure nobody measured. One place, below
every layer, so the console, headless progress lines, reports, compare and plots print the
same figure the same way.

Where the unit switches: a rate (or a column of rates, which shares one unit so its figures
compare) is shown in the largest unit in which its smallest value is still ≥ 1 — Gbit/s from
1 Gbit/s up, Mbit/s from 1 Mbit/s, then kbit/s; in bytes (`units="bytes"`) GB/s, MB/s, kB/s
alike (1 MB/s = 8 Mbit/s). So 0.0214 Gbit/s reads `21.4 Mbit/s`, 9.412 Gbit/s `9.41 Gbit/s`.
"""

from __future__ import annotations

import math
from collections.abc import Iterable
from dataclasses import dataclass
from typing import TypeGuard

from abtui.core.text import UNKNOWN

# iperf3 prints rates with three significant digits (`9.41 Gbits/sec`, `155 Mbits/sec`): no
# figure abtui prints claims more.
SIG_DIGITS = 3
# (divisor of bits/s, name), largest first: bits as iperf3 counts them (1000-based); bytes as
# the crypto posts write them (MB/s: 10^6 bytes per second).
_SCALES = {"bits": ((1e9, "Gbit/s"), (1e6, "Mbit/s"), (1e3, "kbit/s"), (1.0, "bit/s")),
           "bytes": ((8e9, "GB/s"), (8e6, "MB/s"), (8e3, "kB/s"), (8.0, "B/s"))}


# The unit a `[report] layout` shows rates in unless the reader asks for another (`abtui
# export --units`), the console's too: the crypto posts quote MB/s ("9.5 MB/s TX and 11.9 MB/s
# RX"); the others quote iperf3's own bits per second
LAYOUT_UNITS: dict[str, str] = {"before-after": "bytes"}


def layout_units(layout: str | None) -> str:
    """`bits` or `bytes`: the unit a profile's `[report] layout` shows rates in."""
    return LAYOUT_UNITS.get(layout or "", "bits")


def _finite(x: object) -> TypeGuard[int | float]:
    return isinstance(x, int | float) and not isinstance(x, bool) and math.isfinite(x)


def sig(x: float | None, digits: int = SIG_DIGITS) -> str:
    """`x` with `digits` significant digits and no exponent: 9.412 -> 9.41, 155.0 -> 155,
    10807 -> 10800, 0.02134 -> 0.0213; UNKNOWN for None or a non-finite value."""
    if x is None or not _finite(x):
        return UNKNOWN
    if x == 0:
        return "0"
    places = _place(x, digits)
    return f"{round(x, places):.{max(places, 0)}f}"


def _place(x: float, digits: int = SIG_DIGITS) -> int:
    """The decimal place of `x`'s last significant digit as `sig` prints it (2: hundredths,
    -2: hundreds)."""
    places = digits - 1 - math.floor(math.log10(abs(x)))
    rounded = round(x, places)
    if rounded and math.floor(math.log10(abs(rounded))) != math.floor(math.log10(abs(x))):
        places -= 1  # 999.6 -> 1000: one place fewer
    return places


def spread(mean: float | None, sd: float | None) -> str:
    """`mean ± sd`: the mean to 3 significant digits, the sd to the mean's last digit and
    never to more than 3 significant digits of its own (`7700 ± 3400`, `9.41 ± 0.12`,
    `1.20 ± 12.3`, `1.60 ± 0.00`); the mean alone without an sd; UNKNOWN without a mean."""
    if mean is None or not _finite(mean):
        return UNKNOWN
    text = sig(mean)
    if sd is None or not _finite(sd):
        return text
    place = _place(mean) if mean else 0
    if sd:
        place = min(place, _place(sd))
    rounded = round(sd, place)
    return f"{text} ± {rounded:.{max(place, 0)}f}"


@dataclass(frozen=True, slots=True)
class Unit:
    """The unit a figure or a column of rates is shown in: bits/s divided by `div`, named
    `name`."""

    div: float
    name: str

    def figure(self, bps: object) -> str:
        """One rate (bits/s) in this unit, 3 significant digits, no unit name; UNKNOWN when
        not a number (a JSON row's field may hold anything)."""
        return sig(bps / self.div) if _finite(bps) else UNKNOWN

    def text(self, bps: float | None) -> str:
        """`9.41 Gbit/s`; UNKNOWN when not a number."""
        return f"{sig(bps / self.div)} {self.name}" if bps is not None and _finite(bps) \
            else UNKNOWN


def rate_unit(values: Iterable[float | None], units: str = "bits") -> Unit:
    """The largest unit in which every value still reads ≥ 1 (its smallest non-zero one):
    0.21 Gbit/s reads `210 Mbit/s`, 9.41 Gbit/s `9.41 Gbit/s`; Mbit/s (MB/s) when there is
    no value. `units`: "bits" (Gbit/s, Mbit/s) or "bytes" (GB/s, MB/s)."""
    if units not in _SCALES:
        raise ValueError(f"units {units!r}: bits or bytes")
    finite = [abs(v) for v in values if v is not None and _finite(v) and v]
    low = min(finite, default=0.0)
    scales = _SCALES[units]
    for div, name in scales:
        if low >= div:
            return Unit(div, name)
    return Unit(*scales[-1]) if low else Unit(*scales[1])


def rate(bps: float | None, units: str = "bits") -> str:
    """One rate on its own, in the unit it reads best in: `9.41 Gbit/s`, `21.4 Mbit/s`, `—`."""
    return rate_unit([bps], units).text(bps)


def ms(x: float | None) -> str:
    """A time in ms as ping prints it: 3 significant digits, at most 3 decimals (`0.045`,
    `1.23`, `15.9`); UNKNOWN when not a number."""
    if x is None or not _finite(x):
        return UNKNOWN
    return f"{x:.3f}" if abs(x) < 1 else sig(x)
