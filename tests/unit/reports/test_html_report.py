"""`abtui export --format html`: the report as one page, its Markdown's headings, tables,
lists and paragraphs as HTML elements (one reading of the Markdown, shared with the plain-text
report), and the Why section of a profiled session."""

from __future__ import annotations

from pathlib import Path

import pytest

from abtui.cli import main
from abtui.reports.html_report import from_markdown

PROFILED = Path(__file__).resolve().parents[2] / "fixtures" / "sessions" / "profile.abtui.jsonl.gz"


def test_each_markdown_form_becomes_its_element() -> None:
    md = ["# Title", "", "A paragraph that", "goes on.", "", "- an item", "  wrapped",
          "", "| a | b \\| c |", "|---|---|", "| `1` | **2** |", "", "```", "x < y", "```"]
    assert from_markdown(md).splitlines() == [
        "<h1>Title</h1>", "<p>A paragraph that goes on.</p>",
        "<ul><li>an item wrapped</li></ul>",
        "<table><tr><th>a</th><th>b | c</th></tr><tr><td>1</td><td>2</td></tr></table>",
        "<pre>x &lt; y</pre>"]


def test_a_profiled_session_s_page_is_valid_html_with_its_why(tmp_path: Path) -> None:
    html5lib = pytest.importorskip("html5lib")
    out = tmp_path / "r.html"
    assert main(["export", str(PROFILED), "--format", "html", "--out", str(out)]) == 0
    doc = html5lib.HTMLParser(strict=True, namespaceHTMLElements=False).parse(out.read_text())
    headings = ["".join(h.itertext()) for h in doc.iter() if h.tag in ("h1", "h2", "h3")]
    assert any(h.startswith("Why") for h in headings), headings
    assert doc.findall(".//table") and doc.find(".//title") is not None
