"""Line numbers for keys and tables of a TOML text that tomllib already accepted.

tomllib returns plain dicts with no positions, so errors found after parsing (a wrong type, an
unknown key, a duplicate label) would have no line. This scanner maps each key path, with
array-of-tables indices, e.g. ("pairs", 1, "sender"), to the line where it is written.
"""

from __future__ import annotations

import re
import tomllib
from typing import Any

_PART = r'(?:[A-Za-z0-9_-]+|"(?:[^"\\\n]|\\.)*"|\'[^\'\n]*\')'
_KEY = rf"{_PART}(?:[ \t]*\.[ \t]*{_PART})*"
_HEADER = re.compile(rf"[ \t]*(\[\[?)[ \t]*({_KEY})[ \t]*\]\]?")
_KEYLINE = re.compile(rf"[ \t]*({_KEY})[ \t]*=")

Path = tuple[str | int, ...]


def _key_path(key_text: str) -> tuple[str, ...]:
    """Decode a (dotted, maybe quoted) TOML key with tomllib itself, so escapes are exact."""
    node: Any = tomllib.loads(f"{key_text} = 0")
    parts: list[str] = []
    while isinstance(node, dict):
        (name, node), = node.items()
        parts.append(name)
    return tuple(parts)


def _scan(line: str, i: int, in_ml: str | None, depth: int) -> tuple[str | None, int]:
    """Advance over strings, brackets and comments; the state carried to the next line."""
    n = len(line)
    while i < n:
        if in_ml:
            if in_ml == '"""' and line[i] == "\\":
                i += 2
                continue
            if line.startswith(in_ml, i):
                i += 3
                while i < n and line[i] == in_ml[0]:  # up to two quotes may close the string
                    i += 1
                in_ml = None
                continue
            i += 1
            continue
        c = line[i]
        if c == "#":
            break
        if c in "\"'":
            if line.startswith(c * 3, i):
                in_ml, i = c * 3, i + 3
                continue
            i += 1
            while i < n and line[i] != c:
                i += 2 if c == '"' and line[i] == "\\" else 1
        elif c in "[{":
            depth += 1
        elif c in "]}":
            depth -= 1
        i += 1
    return in_ml, depth


def key_lines(text: str) -> dict[Path, int]:
    """Map key paths (with array-of-tables indices) to 1-based line numbers."""
    lines: dict[Path, int] = {}
    counts: dict[Path, int] = {}  # array-of-tables path -> index of its latest table
    table: Path = ()
    in_ml: str | None = None
    depth = 0

    def resolve(parts: tuple[str, ...]) -> Path:
        out: Path = ()
        for p in parts:
            out = (*out, p)
            if out in counts:
                out = (*out, counts[out])
        return out

    for lineno, line in enumerate(text.split("\n"), 1):
        start = 0
        if in_ml is None and depth == 0:
            m = _HEADER.match(line)
            k = None if m else _KEYLINE.match(line)
            try:
                if m:
                    parts = _key_path(m.group(2))
                    if m.group(1) == "[[":
                        array = (*resolve(parts[:-1]), parts[-1])
                        counts[array] = counts.get(array, -1) + 1
                        lines.setdefault(array, lineno)
                        table = (*array, counts[array])
                    else:
                        table = resolve(parts)
                    lines.setdefault(table, lineno)
                    start = m.end()
                elif k:
                    parts = _key_path(k.group(1))
                    for j in range(1, len(parts) + 1):
                        lines.setdefault((*table, *parts[:j]), lineno)
                    start = k.end()
            except (tomllib.TOMLDecodeError, ValueError):
                start = 0
        in_ml, depth = _scan(line, start, in_ml, depth)
    return lines


def line_of(lines: dict[Path, int], path: Path) -> int:
    """The line of `path`, or of its nearest written ancestor; 1 when none is written."""
    for j in range(len(path), 0, -1):
        if path[:j] in lines:
            return lines[path[:j]]
    return 1
