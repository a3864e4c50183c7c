"""`abtui export --format html`: the Markdown report as one self-contained HTML page (its
headings, tables and paragraphs; no script, no external font or style sheet), with the
differential flame graphs of the alternation's profiles (abtui.reports.why_report) inline as
SVG."""

from __future__ import annotations

import html

from abtui.reports.plaintext import markdown_blocks, table_cells
from abtui.sessions.session import Session

STYLE = ("body{font-family:sans-serif;max-width:80em;margin:1em auto;padding:0 1em}"
         "table{border-collapse:collapse;margin:.5em 0}td,th{border:1px solid #bbb;"
         "padding:2px 6px;text-align:left}pre{background:#f4f4f4;padding:.5em;overflow:auto}"
         "figure{margin:0;overflow:auto}")


def from_markdown(lines: list[str]) -> str:
    """The few Markdown forms the report writes, as HTML; anything else a paragraph."""
    out: list[str] = []
    for kind, block in markdown_blocks("\n".join(lines)):
        if kind == "code":
            inner = block[1:-1] if block[-1].startswith("```") and len(block) > 1 else block[1:]
            out.append("<pre>" + html.escape("\n".join(inner)) + "</pre>")
        elif kind == "heading":
            line = block[0]
            level = min(6, len(line) - len(line.lstrip("#")))
            out.append(f"<h{level}>{html.escape(line[level:].strip())}</h{level}>")
        elif kind == "table":
            rows = [table_cells(x) for x in block]
            head, body = rows[0], [r for r in rows[1:] if not all(set(c) <= set("-: ")
                                                                 for c in r)]
            out.append("<table><tr>" + "".join(f"<th>{html.escape(c)}</th>" for c in head)
                       + "</tr>" + "".join("<tr>" + "".join(f"<td>{html.escape(c)}</td>"
                                                            for c in r) + "</tr>" for r in body)
                       + "</table>")
        elif kind == "item" and block[0].startswith("- "):
            text = " ".join([block[0][2:], *(x.strip() for x in block[1:])])
            out.append(f"<ul><li>{html.escape(text)}</li></ul>")
        elif kind != "blank":
            out.append(f"<p>{html.escape(' '.join(x.strip() for x in block))}</p>")
    return "\n".join(out)


def page(session: Session, markdown_text: str) -> str:
    from abtui.reports.why_report import html_section

    title = markdown_text.splitlines()[0].lstrip("# ") if markdown_text else session.name
    return ("<!DOCTYPE html>\n<html><head><meta charset=\"utf-8\">"
            f"<title>{html.escape(title)}</title><style>{STYLE}</style></head><body>\n"
            f"{from_markdown(markdown_text.splitlines())}\n{html_section(session)}\n"
            "</body></html>\n")
