"""The Alternation verdict table's Δ cell: an interval not bounded yet (the rule's first
looks give [-100 %, +inf], JSON's null) says so, never `[-100.0, +inf]` in a pasted table."""

from __future__ import annotations

import math

from abtui.reports.alternation import table


def _cell(**row: object) -> str:
    header, body = table([{"pair": "A", "knob": "k", "value": "b", "base": "a", **row}])
    return body[0][header.index("Δ [95 % interval]")]


def test_a_bounded_interval_is_printed_and_an_unbounded_one_is_said() -> None:
    assert _cell(pct=-87.2, low=-89.3, high=-84.8) == "Δgeo -87.2% [-89.3, -84.8]"
    assert _cell(pct=19.8, low=-100.0, high=math.inf) == "Δgeo +19.8% (interval not bounded yet)"
    assert _cell(pct=19.8, low=-100.0, high=None) == "Δgeo +19.8% (interval not bounded yet)"
    assert _cell(pct=None) == "Δgeo —"
