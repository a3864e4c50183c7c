"""`abtui export --format text` (issue 49): the report for a plain-text mail, every line at
most 78 columns, leading with the answer (values compared, Δ with its interval, verdict,
blocks), then the tables; and the Markdown report's prose wrapped at 80 columns."""

from __future__ import annotations

from pathlib import Path

from rich.cells import cell_len

from abtui.cli import main
from abtui.core import events
from abtui.core.events import Event
from abtui.reports.exports import render
from abtui.reports.plaintext import text_report, wrap_markdown
from abtui.sessions.session import Session
from tests import synth

GOLDEN = Path(__file__).resolve().parents[2] / "golden"
# a three-value alternation: rmem 6M (base), 1M, 16k on two pairs
ROWS = [{"pair": p, "knob": "rmem", "value": v, "base": "6M", "delta": "Δgeo", "pct": pct,
         "low": lo, "high": hi, "verdict": verdict, "blocks": 9, "dead": 0, "seed": 77,
         "design": "blocks"}
        for p, v, pct, lo, hi, verdict in [
            ("A", "1M", -1.2, -4.0, 1.7, "no difference"),
            ("A", "16k", -87.2, -89.3, -84.8, "significant"),
            ("B", "1M", 0.4, -2.2, 3.1, "no difference"),
            ("B", "16k", -85.0, -88.0, -81.5, "significant")]]


def _session(tmp_path: Path) -> Session:
    from abtui.sessions.writer import SessionWriter

    evs = list(synth.continuous([{"rmem": "6M"}, {"rmem": "1M"}, {"rmem": "16k"}],
                                {"A": [10e9, 9.9e9, 1.3e9], "B": [10e9, 10e9, 1.5e9]},
                                seconds=10))
    t = evs[-1].t
    evs.insert(-1, Event.of(events.Mark(
        text="stopped: every comparison decided; A: rmem=16k vs 6M: Δgeo -87.2% …",
        verdicts=ROWS), t))
    with SessionWriter(tmp_path / "alt.abtui.jsonl", profile="synth") as w:
        for ev in evs:
            w.write(ev)
    assert w.final_path is not None
    return Session.load(w.final_path)


def test_the_text_report_of_an_alternation_fits_78_columns_and_leads_with_the_verdict(
        tmp_path: Path) -> None:
    text = render(_session(tmp_path), "text")
    lines = text.splitlines()
    assert max(cell_len(ln) for ln in lines) <= 78, [ln for ln in lines if cell_len(ln) > 78]
    assert "|" not in text and "```" not in text and "`" not in text
    # the title, then the answer before anything else
    first = [ln for ln in lines[2:] if ln.strip()]
    assert first[0] == "Alternation verdict"
    answer = "\n".join(lines[:lines.index("Session")])
    for row in ROWS:
        assert f"rmem={row['value']} vs 6M" in answer
    row = next(ln for ln in answer.splitlines() if "rmem=16k vs 6M" in ln and ln[0] == "A")
    assert "Δgeo -87.2% [-89.3," in row and "significant" in row and " 9 " in row
    assert "-84.8]" in answer.splitlines()[answer.splitlines().index(row) + 1]
    # the tables follow, aligned
    assert text.index("Alternation verdict") < text.index("Throughput per configuration")


def test_export_format_text_on_the_command_line(tmp_path: Path, capsys) -> None:
    session = _session(tmp_path)
    assert main(["export", str(session.path), "--format", "text"]) == 0
    out = capsys.readouterr().out
    assert out.startswith("synth") or out.splitlines()[1].startswith("=")
    assert max(cell_len(ln) for ln in out.splitlines()) <= 78


def test_every_golden_report_as_text_fits_78_columns() -> None:
    for gz in sorted(GOLDEN.glob("*.abtui.jsonl.gz")):
        text = render(Session.load(gz), "text")
        wide = [ln for ln in text.splitlines() if cell_len(ln) > 78]
        assert not wide, (gz.name, wide[:3])


def test_a_table_too_wide_for_columns_goes_a_row_at_a_time() -> None:
    md = ("# t\n\n| name | what |\n|---|---|\n| a | " + "word " * 40 + "|\n"
          "| " + "x" * 70 + " | " + "y" * 30 + " |\n")
    text = text_report(md)
    assert max(cell_len(ln) for ln in text.splitlines()) <= 78
    assert "x" * 70 in text and "y" * 30 in text  # nothing cut


def test_the_markdown_report_wraps_its_prose_at_80_columns_and_keeps_tables() -> None:
    md = render(Session.load(GOLDEN / "ix-enable-aim.abtui.jsonl.gz"), "md")
    for line in md.splitlines():
        if not line.startswith("|") and line.strip("`") == line:
            assert cell_len(line) <= 80 or " " not in line.strip(), line
    para = "word " * 50
    wrapped = wrap_markdown(f"- {para}\n\n| a | b |\n|---|---|\n| {para} | x |\n")
    assert all(cell_len(ln) <= 80 for ln in wrapped.splitlines()[:4])
    assert f"| {para} | x |" in wrapped  # a table row is never wrapped
    assert wrapped.splitlines()[1].startswith("  word")  # a list item's lines hang


def test_a_wrapped_line_never_starts_a_markdown_block() -> None:
    """A paragraph wrapped so a line starts `- `, `# ` or `12. ` would read as a list item
    or a heading: its first word stays on the line before."""
    for token in ("-", "#", "12.", "|", ">"):
        text = wrap_markdown("x " * 39 + f"{token} y " + "k " * 40)
        assert not any(ln.startswith(f"{token} ") for ln in text.splitlines()[1:]), text
