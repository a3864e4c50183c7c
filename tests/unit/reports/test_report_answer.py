"""The report leads with the answer (issue 33): an alternation's verdict as a table of its own
in every format, each figure printed once, each Δ named; zero spread never claims."""

from __future__ import annotations

import csv
import io
import json
from pathlib import Path

import pytest

from abtui.cli import main
from abtui.core import events
from abtui.core.events import Event
from abtui.reports import alternation, compare, stats
from abtui.reports.exports import render
from abtui.reports.plots import chart_html
from abtui.sessions.session import Session
from tests import synth

ROWS = [{"pair": "A", "knob": "rmem", "value": "16k", "base": "6M", "delta": "Δgeo",
         "pct": -87.2, "low": -89.3, "high": -84.8, "verdict": "significant", "blocks": 3,
         "dead": 0, "seed": 1234, "design": "blocks"},
        {"pair": "B", "knob": "rmem", "value": "16k", "base": "6M", "delta": "Δgeo",
         "pct": -1.4, "low": -3.0, "high": 0.3, "verdict": "no difference", "blocks": 10,
         "dead": 0, "seed": 1234, "design": "blocks"}]


def _events(with_verdicts: bool = True) -> list[Event]:
    evs = list(synth.continuous([{"rmem": "6M"}, {"rmem": "16k"}],
                                {"A": [10e9, 1.3e9], "B": [10e9, 9.9e9]}, seconds=10))
    t = evs[-1].t
    evs.insert(-1, Event.of(events.Mark(text="alternation order: rmem, seed 1234"), t))
    evs.insert(-1, Event.of(events.Mark(
        text="stopped: every comparison significant; A: rmem=16k vs 6M: Δgeo -87.2% …",
        verdicts=ROWS if with_verdicts else None), t))
    return evs


def _written(tmp_path: Path, evs: list[Event]) -> Session:
    """Through the journal and back: what a report reads is what the run recorded."""
    from abtui.sessions.writer import SessionWriter

    with SessionWriter(tmp_path / "alt.abtui.jsonl", profile="synth") as w:
        for ev in evs:
            w.write(ev)
    assert w.final_path is not None
    return Session.load(w.final_path)


def test_the_report_leads_with_the_alternation_s_verdict_table(tmp_path: Path) -> None:
    session = _written(tmp_path, _events())
    md = render(session, "md")
    first = md.split("\n## ", 2)[1]
    assert first.startswith("Alternation verdict"), md[:400]
    rows = [ln for ln in first.splitlines() if ln.startswith("| A") or ln.startswith("| B")]
    assert rows[0] == ("| A | blocks | rmem=16k vs 6M | Δgeo -87.2% [-89.3, -84.8] | "
                       "significant | 3 | 1234 |")
    # each figure once: the Δ is not printed again as the verdict
    assert first.count("87.2") == 1 and "-87.2% significant" not in first
    assert "ratio of geometric means" in first


def test_the_verdict_table_in_csv_json_and_html(tmp_path: Path) -> None:
    session = _written(tmp_path, _events())
    got = list(csv.DictReader(io.StringIO(alternation.to_csv(session))))
    assert [(r["pair"], r["value"], r["base"], r["pct"], r["low"], r["high"], r["verdict"],
             r["blocks"], r["seed"]) for r in got] == [
        ("A", "16k", "6M", "-87.2", "-89.3", "-84.8", "significant", "3", "1234"),
        ("B", "16k", "6M", "-1.4", "-3.0", "0.3", "no difference", "10", "1234")]
    doc = json.loads(render(session, "json"))
    assert doc["alternation"][0] == {key: ROWS[0].get(key) for key, _ in alternation.COLUMNS}
    page = chart_html(session)
    assert page.index("<h2>Alternation verdict</h2>") < page.index("<svg")
    assert "<td>Δgeo -87.2% [-89.3, -84.8]</td>" in page
    out = tmp_path / "v.csv"
    assert main(["export", str(session.path), "--format", "csv", "--table", "verdicts",
                 "--out", str(out)]) == 0
    assert out.read_text(encoding="utf-8-sig").splitlines()[0] == ",".join(
        k for k, _ in alternation.COLUMNS)  # (a file: after its BOM)
    assert main(["export", str(session.path), "--format", "md", "--table", "verdicts"]) == 2


def test_no_alternation_no_table(tmp_path: Path) -> None:
    session = _written(tmp_path, _events(with_verdicts=False))
    assert "Alternation verdict" not in render(session, "md")
    assert json.loads(render(session, "json"))["alternation"] == []
    assert alternation.to_csv(session) == ",".join(
        k for k, _ in alternation.COLUMNS) + "\n"


def test_zero_spread_never_claims() -> None:
    # runs equal at iperf3's printed precision: `[9.41]×3` vs `[9.42]×3` read
    # `+0.1% [+0.1, +0.1] (p<0.001 n=3+3)`
    v = stats.verdict([9.41e9] * 3, [9.42e9] * 3)
    d = stats.delta([9.41e9] * 3, [9.42e9] * 3)
    assert not v.significant and v.p is not None and v.p > 0.05, v
    assert d is not None and d.low is not None and d.high is not None
    assert d.low < 0 < d.high
    assert stats.resolution(9.41e9) == pytest.approx(0.005e9)
    # with spread above the printed digit, the floor changes nothing
    assert stats.floored_var(0.15e9**2, 3, 9.35e9) == 0.15e9**2
    assert stats.floored_var(0.0, 3, 9.41e9) == pytest.approx(3 * 0.005e9**2)


def test_each_delta_is_named() -> None:
    from abtui.reports.formatting import legend

    assert "the ratio of the plain means" in legend("A")
    left = Session.from_events(synth.plan([{"c": "x"}], {"A": [[10e9, 10.1e9]]}, pairs=("A",)),
                               "l")
    right = Session.from_events(synth.plan([{"c": "x"}], {"A": [[9e9, 9.1e9]]}, pairs=("A",)),
                                "r")
    assert compare.to_json(left, right)["rows"][0]["delta_of"] == "means"
    assert all(c.line().split(": ", 1)[1].startswith("Δ of 20 % trimmed means")
               for c in compare.gate(left, right, 2))


def test_the_end_mark_s_note_does_not_print_the_verdicts_again(tmp_path: Path) -> None:
    evs = _events()
    text = ("alternation ended (every comparison significant) after 3 blocks (12 stretches), "
            "30 s; A: rmem=16k vs 6M: Δgeo -87.2% [-89.3, -84.8] significant (3 blocks; "
            "stopped early: Δ may overstate the effect); B: rmem=16k vs 6M: Δgeo -1.4% "
            "[-3.0, +0.3] ~ (10 blocks), no difference of 5% or more; family-wise α 0.05 over "
            "2 comparisons (Holm: α/2 each until one is significant)")
    evs[-2] = Event.of(events.Mark(text=text, verdicts=ROWS), evs[-2].t)
    md = render(_written(tmp_path, evs), "md")
    assert md.count("87.2") == 1 and md.count("-1.4%") == 1, md
    notes = " ".join(md.split("## Notes", 1)[1].split())  # (the report's prose is wrapped)
    assert ("mark: alternation ended (every comparison significant) after 3 blocks (12 "
            "stretches), 30 s; family-wise α 0.05 over 2 comparisons (Holm: α/2 each until "
            "one is significant); verdicts: the Alternation verdict table above") in notes
