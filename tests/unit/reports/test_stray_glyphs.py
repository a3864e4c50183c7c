"""No stray glyph in a report: the Markdown and plain-text exports of every recorded session
carry no trailing blanks (the chart's title and axis lines were padded to its width), no
control character, no replacement character and no glyph outside the set the reports use."""

from __future__ import annotations

from pathlib import Path

import pytest

from abtui.reports.exports import render
from abtui.sessions.session import Session

SESSIONS = sorted((Path(__file__).resolve().parents[2] / "fixtures" / "sessions").glob(
    "*.abtui.jsonl.gz"))
# what the reports print beyond ASCII: the chart's box lines, dashes for unknown figures, Δ,
# ±, ÷, arrows, ellipses, the warning sign, α
KNOWN = set("─│┬┤┴┌┐└┘├┼—Δ±÷→…⚠α×≥≤µ")


@pytest.mark.parametrize("path", SESSIONS, ids=lambda p: p.name.split(".")[0])
@pytest.mark.parametrize("fmt", ["md", "text"])
def test_no_stray_glyph(path: Path, fmt: str) -> None:
    text = render(Session.load(path), fmt)
    for number, line in enumerate(text.splitlines(), 1):
        assert line == line.rstrip(), f"{fmt} line {number} ends in blanks: {line!r}"
        odd = {c for c in line if ord(c) < 32 or c == "\ufffd"
               or (ord(c) > 126 and c not in KNOWN)}
        assert not odd, f"{fmt} line {number}: {sorted(odd)} in {line!r}"
