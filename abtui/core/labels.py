"""Phase-table labels that fit their column and still tell the rows apart.

A row's label names what its configuration changes against the initial one
(abtui.core.configuration.config_label). Cut at the column's end, as a narrow screen (80×24)
must, labels of different configurations read the same: they share their first knobs and
differ further on. `fit_labels` shortens them by one rule, and only as far as the column
needs, so a person can still tell each row from the others. A label that fits is shown
whole (a wide screen shows most or all whole); one that does not is, in this order:

1. short: a knob by the last part of its name where that names one knob only (`tcp_rmem` →
   `rmem`), byte counts that are whole KiB/MiB/GiB in binary units (`6291456` → `6M`), `,`
   between knobs;
2. when that is still too long, the knobs that set the row apart from the other rows first
   (those fewest rows share), as many as fit, the others left out as `…` where they were
   (the most telling one cut with `…` when even it alone is too long);
3. when it would still read like another row (the column cannot hold even one telling knob),
   its row number in front (`3 `).

The compare screen (ctrl+o) fits them the same way to the whole screen's width; the exports
show labels whole.
"""

from __future__ import annotations

import re
from collections import Counter
from collections.abc import Iterable, Sequence

from abtui.core.configuration import INITIAL
from abtui.core.text import visible

Part = tuple[str, str]  # (knob, value)
GAP = "…"
UNITS = ("K", "M", "G", "T")
NUMBER = re.compile(r"(?<![\w.])\d+(?![\w.])")
NAME_PARTS = re.compile(r"[_.\-]")


def full_label(parts: Sequence[Part], empty: str = INITIAL) -> str:
    """The label as the exports print it (config_label's form)."""
    return ", ".join(f"{k}={v}" for k, v in parts) or empty


def fit_labels(rows: Sequence[Sequence[Part]], width: int, empty: str = INITIAL) -> list[str]:
    """Each row's label (its changed knobs, `empty` for none) in at most `width` cells: whole
    where it fits, else shortened by one rule, rows of different configurations told apart."""
    rows = [[(visible(k), visible(v)) for k, v in r] for r in rows]
    full = [full_label(r, empty) for r in rows]
    if all(len(x) <= width for x in full):
        return full
    names = short_names(k for r in rows for k, _ in r)
    short = [[(names[k], short_value(v)) for k, v in r] for r in rows]
    rarity = _rarity(short, range(len(short)))
    shown = [f if len(f) <= width else _select(s, rarity, width, empty)
             for f, s in zip(full, short, strict=True)]
    # rows that still read alike: choose again, telling them apart from each other only
    for group in _clashes(shown, full):
        cut = [i for i in group if shown[i] != full[i]]
        rarity = _rarity(short, group)
        for i in cut:
            shown[i] = _select(short[i], rarity, width, empty)
    for group in _clashes(shown, full):
        for i in group:
            if shown[i] != full[i]:
                shown[i] = _cut(f"{i + 1} {shown[i]}", width)
    return shown


def short_names(names: Iterable[str]) -> dict[str, str]:
    """Each knob name by the last part of it (after `_`, `.` or `-`) where that part is two
    characters or more and names no other knob; else the name itself."""
    names = set(names)
    tail = {n: NAME_PARTS.split(n)[-1] for n in names}
    count = Counter(tail.values())
    return {n: t if len(t) >= 2 and count[t] == 1 and (t == n or t not in names) else n
            for n, t in tail.items()}


def short_value(value: str) -> str:
    """Whole numbers that are an exact number of KiB, MiB, ... in binary units (`131072` →
    `128K`); everything else as it is."""
    def unit(m: re.Match[str]) -> str:
        n = int(m.group(0))
        if n < 1024 or n % 1024:
            return m.group(0)
        for u in UNITS:
            n //= 1024
            if n < 1024 or n % 1024 or u == UNITS[-1]:
                return f"{n}{u}"
        return m.group(0)  # (not reached)
    return NUMBER.sub(unit, value)


def _render(parts: Sequence[Part], keep: Sequence[bool], empty: str) -> str:
    """The kept parts in their order, each run of left-out ones as `…`."""
    out: list[str] = []
    for (k, v), kept in zip(parts, keep, strict=True):
        if kept:
            out.append(f"{k}={v}")
        elif not out or out[-1] != GAP:
            out.append(GAP)
    return ",".join(out) or empty


def _rarity(rows: Sequence[Sequence[Part]], among: Iterable[int]) -> Counter[Part]:
    """How many of the rows `among` have each (knob, value)."""
    return Counter(p for i in among for p in set(rows[i]))


def _select(parts: Sequence[Part], rarity: Counter[Part], width: int, empty: str) -> str:
    """The row's parts that fewest rows share first, as many as fit in `width`."""
    keep = [False] * len(parts)
    order = sorted(range(len(parts)), key=lambda j: (rarity[parts[j]], j))
    for j in order:
        keep[j] = True
        if len(_render(parts, keep, empty)) > width:
            keep[j] = False
    if parts and not keep[order[0]]:  # the most telling one does not fit: it alone, cut
        j = order[0]
        return _cut(_render(parts, [i == j for i in range(len(parts))], empty), width)
    return _cut(_render(parts, keep, empty), width)


def _cut(text: str, width: int) -> str:
    return text if len(text) <= width else text[:max(width - 1, 0)] + GAP


def _clashes(shown: Sequence[str], full: Sequence[str]) -> list[list[int]]:
    """Groups of rows that read the same though their labels differ."""
    groups: dict[str, list[int]] = {}
    for i, text in enumerate(shown):
        groups.setdefault(text, []).append(i)
    return [g for g in groups.values() if len({full[i] for i in g}) > 1]
