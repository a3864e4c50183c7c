"""The report for a mail, and the Markdown report's prose wrapped.

Kernel reviews happen in plain-text mail (LKP's `%change` mails, mmtests' compare tables):
`abtui export --format text` is the Markdown report made plain, every line at most
`TEXT_WIDTH` columns, the answer first (an alternation's or a bisection's verdict: values
compared, Δ with its interval, verdict, blocks), then the overview and the tables. A table
that fits is laid out in aligned columns; one that does not is printed a row at a time, each
cell on a line of its own under the row's first cell, so no line is cut and no figure lost.

The Markdown report itself keeps its tables as they are (a table row cannot be wrapped) and
wraps its paragraphs and list items at `MD_WIDTH` (`wrap_markdown`)."""

from __future__ import annotations

import re
import textwrap
from collections.abc import Iterator

from rich.cells import cell_len

TEXT_WIDTH = 78
MD_WIDTH = 80
# the sections a mail leads with: the answer, before the overview
ANSWERS = ("Alternation verdict", "Bisect")
_BULLET = re.compile(r"^(\s*)([-*]|\d+\.)\s+")
_CODE = re.compile(r"`([^`]*)`")
_STRONG = re.compile(r"\*\*([^*]+)\*\*")
# what starts a block of its own in Markdown, at a line's start
_MARKDOWN_START = re.compile(r"([-*+>|#]|\d+[.)])(\s|$)")


def markdown_blocks(md: str) -> Iterator[tuple[str, list[str]]]:
    """The Markdown as (kind, lines): `heading`, `table`, `code` (a fence, fences kept),
    `item` (one list item), `para`, `blank`."""
    lines = md.splitlines()
    i = 0
    while i < len(lines):
        line = lines[i]
        if line.startswith("```"):
            j = i + 1
            while j < len(lines) and not lines[j].startswith("```"):
                j += 1
            yield "code", lines[i:j + 1]
            i = j + 1
        elif line.startswith("#"):
            yield "heading", [line]
            i += 1
        elif line.startswith("|"):
            j = i
            while j < len(lines) and lines[j].startswith("|"):
                j += 1
            yield "table", lines[i:j]
            i = j
        elif not line.strip():
            yield "blank", [line]
            i += 1
        else:
            kind = "item" if _BULLET.match(line) else "para"
            j = i + 1
            while (j < len(lines) and lines[j].strip() and not lines[j].startswith(("#", "|",
                                                                                    "```"))
                   and not _BULLET.match(lines[j])):
                j += 1
            yield kind, lines[i:j]
            i = j


def _wrap(lines: list[str], width: int) -> list[str]:
    """A paragraph or a list item wrapped at `width`, a list item's lines hanging under its
    text; words are never split inside (a path longer than the line stays whole on a line of
    its own), and no wrapped line starts with what Markdown would read as a list item, a
    heading, a quote or a table (its first word stays on the line before)."""
    m = _BULLET.match(lines[0])
    if m:
        first = m.group(1) + m.group(2) + " "
        rest = " " * len(first)
        text = " ".join([lines[0][m.end():].strip(), *(ln.strip() for ln in lines[1:])])
    else:
        first = rest = ""
        text = " ".join(ln.strip() for ln in lines)
    out = textwrap.wrap(text, width, initial_indent=first, subsequent_indent=rest,
                        break_long_words=False, break_on_hyphens=False) or [first.rstrip()]
    for i in range(len(out) - 1, 0, -1):
        body = out[i][len(rest):]
        if _MARKDOWN_START.match(body):
            word, _, tail = body.partition(" ")
            out[i - 1] += " " + word
            if tail:
                out[i] = rest + tail
            else:
                del out[i]
    return out


def wrap_markdown(md: str, width: int = MD_WIDTH) -> str:
    """The report's paragraphs and list items wrapped at `width` (soft line breaks, which
    Markdown joins again); headings, tables and code kept as they are."""
    out: list[str] = []
    for kind, lines in markdown_blocks(md):
        if kind == "heading" and cell_len(lines[0]) > width and ": " in lines[0]:
            # a heading cannot be wrapped: the title's description goes below it
            head, rest = lines[0].split(": ", 1)
            out += [head, "", *_wrap([rest], width)]
            continue
        out += _wrap(lines, width) if kind in ("para", "item") else lines
    return "\n".join(out) + ("\n" if md.endswith("\n") else "")


def table_cells(row: str) -> list[str]:
    """A Markdown table row's cells, plain (an escaped `\\|` a bar inside a cell)."""
    inner = row.strip()
    inner = inner[1:-1] if inner.endswith("|") else inner[1:]
    cells = re.split(r"(?<!\\)\|", inner)
    return [_plain(c.strip().replace("\\|", "|")) for c in cells]


def _plain(text: str) -> str:
    """Inline Markdown made plain: code spans and bold lose their marks."""
    return _STRONG.sub(r"\1", _CODE.sub(r"\1", text))


def _longest_word(text: str) -> int:
    return max((cell_len(w) for w in text.split()), default=0)


def _table(lines: list[str], width: int) -> list[str]:
    """A Markdown table in aligned columns when it fits `width`: the widest columns' cells
    (headers included) wrapped over lines of their own, never inside a word, as LKP's mails
    lay out `%change`; else a row at a time: its first cell, then each other cell as
    `header: value`, wrapped and indented."""
    rows = [table_cells(ln) for ln in lines if not re.fullmatch(r"\|(\s*:?-+:?\s*\|)+\s*", ln)]
    if not rows:
        return []
    header, body = rows[0], rows[1:]
    n = len(header)
    body = [(r + [""] * n)[:n] for r in body]
    floor = [max([_longest_word(header[i]), *(_longest_word(r[i]) for r in body)])
             for i in range(n)]
    widths = [max([floor[i], *(cell_len(r[i]) for r in body)]) for i in range(n)]
    gap = 2 if sum(floor) + 2 * (n - 1) <= width else 1
    while sum(widths) + gap * (n - 1) > width:
        slack = [w - f for w, f in zip(widths, floor, strict=True)]
        if max(slack) <= 0:
            return _records(header, body, width)
        widest = max(range(n), key=lambda i: (widths[i] if slack[i] > 0 else -1))
        widths[widest] -= 1
    return _columns(header, body, widths, gap)


def _columns(header: list[str], body: list[list[str]], widths: list[int],
             gap: int) -> list[str]:
    sep = " " * gap

    def lines_of(row: list[str], is_header: bool) -> list[str]:
        cells = [textwrap.wrap(c, w, break_on_hyphens=False) or [""]
                 for c, w in zip(row, widths, strict=True)]
        tall = max(map(len, cells))
        if is_header:  # a header's words sit on its last lines, over the column
            cells = [[""] * (tall - len(c)) + c for c in cells]
        out = []
        for k in range(tall):
            parts = [(c[k] if k < len(c) else "") for c in cells]
            out.append(sep.join(p + " " * (w - cell_len(p))
                                for p, w in zip(parts, widths, strict=True)).rstrip())
        return out

    out = [*lines_of(header, True), sep.join("-" * w for w in widths)]
    for r in body:
        out += lines_of(r, False)
    return out


def _records(header: list[str], body: list[list[str]], width: int) -> list[str]:
    out: list[str] = []
    for r in body:
        if r[0]:
            if out:
                out.append("")
            out += textwrap.wrap(r[0], width, subsequent_indent="  ")
        for name, cell in zip(header[1:], r[1:], strict=True):
            if cell in ("", "—"):
                continue
            out += textwrap.wrap(f"{name}: {cell}", width, initial_indent="  ",
                                 subsequent_indent="      ", break_on_hyphens=False)
    return out


def _heading(line: str) -> list[str]:
    level = len(line) - len(line.lstrip("#"))
    text = _plain(line.lstrip("#").strip())
    if level == 1:
        wrapped = textwrap.wrap(text, TEXT_WIDTH) or [""]
        return [*wrapped, "=" * min(TEXT_WIDTH, max(map(cell_len, wrapped)))]
    return [text, "-" * min(TEXT_WIDTH, cell_len(text))]


def _sections(md: str) -> list[list[str]]:
    """The report cut at each `## ` heading (the first part: title and overview)."""
    parts: list[list[str]] = [[]]
    for line in md.splitlines():
        if line.startswith("## "):
            parts.append([])
        parts[-1].append(line)
    return parts


def _answer_first(md: str) -> str:
    """The answer's sections moved before the title's overview."""
    head, *rest = _sections(md)
    answers = [s for s in rest if s[0][3:].strip().startswith(ANSWERS)]
    others = [s for s in rest if s not in answers]
    title = [ln for ln in head if ln.startswith("# ")]
    overview = [ln for ln in head if not ln.startswith("# ")]
    ordered = [title, [""], *answers, ["## Session", "", *overview], *others]
    return "\n".join(ln for part in ordered for ln in part)


def text_report(md: str, width: int = TEXT_WIDTH) -> str:
    """The Markdown report as plain text for a mail: every line at most `width` columns,
    the answer first."""
    out: list[str] = []
    for kind, lines in markdown_blocks(_answer_first(md)):
        if kind == "heading":
            if out and out[-1]:
                out.append("")
            out += _heading(lines[0])
        elif kind == "table":
            out += _table(lines, width)
        elif kind == "code":
            out += [ln if cell_len(ln) <= width else ln[:width - 1] + "…"
                    for ln in lines[1:-1]]
        elif kind in ("para", "item"):
            for ln in _wrap([_plain(x) for x in lines], width):
                out += textwrap.wrap(ln, width, subsequent_indent="    ") if \
                    cell_len(ln) > width else [ln]
        elif out and out[-1]:
            out.append("")
    while out and not out[-1]:
        out.pop()
    return "\n".join(out) + "\n"
