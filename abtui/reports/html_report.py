"""`abtui export --format html`: the Markdown report as one self-contained HTML page (its
headings, tables and paragraphs; no script, no external font or style sheet), with the
differential flame graphs of the alternation's profiles (abtui.reports.why_report) inline as
SVG."""

from __future__ import annotations

import html

from abtui.sessions.session import Session

STYLE = ("body{font-family:sans-serif;max-width:80em;margin:1em auto;padding:0 1em}"
         "table{border-collapse:collapse;margin:.5em 0}td,th{border:1px solid #bbb;"
         "padding:2px 6px;text-align:left}pre{background:#f4f4f4;padding:.5em;overflow:auto}"
         "figure{margin:0;overflow:auto}")


def _cells(line: str) -> list[str]:
    return [c.strip() for c in line.strip().strip("|").split("|")]


def from_markdown(lines: list[str]) -> str:
    """The few Markdown forms the report writes, as HTML; anything else a paragraph."""
    out: list[str] = []
    i = 0
    while i < len(lines):
        line = lines[i]
        if line.startswith("```"):
            j = i + 1
            while j < len(lines) and not lines[j].startswith("```"):
                j += 1
            out.append("<pre>" + html.escape("\n".join(lines[i + 1:j])) + "</pre>")
            i = j + 1
            continue
        if line.startswith("#"):
            level = min(6, len(line) - len(line.lstrip("#")))
            out.append(f"<h{level}>{html.escape(line[level:].strip())}</h{level}>")
        elif line.startswith("|"):
            rows = []
            while i < len(lines) and lines[i].startswith("|"):
                rows.append(_cells(lines[i]))
                i += 1
            head, body = rows[0], [r for r in rows[1:] if not all(set(c) <= set("-: ")
                                                                 for c in r)]
            out.append("<table><tr>" + "".join(f"<th>{html.escape(c)}</th>" for c in head)
                       + "</tr>" + "".join("<tr>" + "".join(f"<td>{html.escape(c)}</td>"
                                                            for c in r) + "</tr>" for r in body)
                       + "</table>")
            continue
        elif line.startswith("- "):
            out.append(f"<ul><li>{html.escape(line[2:])}</li></ul>")
        elif line.strip():
            out.append(f"<p>{html.escape(line)}</p>")
        i += 1
    return "\n".join(out)


def page(session: Session, markdown_text: str) -> str:
    from abtui.reports.why_report import html_section

    title = markdown_text.splitlines()[0].lstrip("# ") if markdown_text else session.name
    return ("<!DOCTYPE html>\n<html><head><meta charset=\"utf-8\">"
            f"<title>{html.escape(title)}</title><style>{STYLE}</style></head><body>\n"
            f"{from_markdown(markdown_text.splitlines())}\n{html_section(session)}\n"
            "</body></html>\n")
