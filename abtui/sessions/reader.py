"""Reading the session journal: its header, then its events in one streaming pass.

A journal is plain (live) or gzip'ed (finished); both read the same. A last line torn by a
crash is dropped, a cut-short gzip stream just ends early, any other damage is BadInput naming
file:line. `head_time`/`tail_time` read only a live journal's start or end, for listings.
The format is docs/session-format.md; `writer` writes it.
"""

from __future__ import annotations

import gzip
import json
import os
import sys
import zlib
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from abtui.core.errors import BadInput
from abtui.core.events import AnyEvent, Event, EventKind

FORMAT = "abtui-session"
VERSION = 1


def scan_facts(path: Path, header: dict[str, Any]) -> dict[str, Any]:
    """The finished header's facts ("start", "end", "events", "pairs") found by one pass over
    a journal whose writer did not give them."""
    events = 0
    first_t = last_t = header.get("created")
    pairs: list[str] = list(header.get("pairs") or [])
    for _lineno, obj in _records(path):
        events += 1
        if events == 1:
            first_t = obj.get("t", first_t)
        last_t = obj.get("t", last_t)
        pair = obj.get("pair")
        if pair is not None and pair not in pairs:
            pairs.append(pair)
    return {"start": first_t, "end": last_t, "events": events, "pairs": pairs}


def _open_lines(path: Path) -> Iterator[bytes]:
    """Raw lines of a plain or gzip'ed journal; a truncated gzip stream just ends early."""
    try:
        with open(path, "rb") as probe:
            magic = probe.read(2)
    except OSError as exc:
        raise BadInput(f"{path}: cannot read session ({exc.strerror or exc})") from None
    if magic != b"\x1f\x8b":
        with open(path, "rb") as f:
            yield from f
        return
    try:
        with gzip.open(path, "rb") as gz:
            yield from gz
    except EOFError:
        return  # cut short (a partial copy): what was read stands, the torn line is dropped
    except (gzip.BadGzipFile, zlib.error) as exc:
        raise BadInput(f"{path}: damaged compressed session ({exc})") from None


def _records(path: Path) -> Iterator[tuple[int, dict[str, Any]]]:
    """(line number, record) for every line after the header.

    A last line with no newline that does not parse is a record torn by a crash: ignored.
    Any other line that does not parse is damage: BadInput naming file:line.
    """
    lines = _open_lines(path)
    lineno = 0
    pending: tuple[int, bytes] | None = None
    for line in lines:
        lineno += 1
        if lineno == 1:
            continue
        if pending is not None:
            yield _parse(path, *pending)
        pending = (lineno, line)
    if pending is None:
        return
    num, line = pending
    if not line.endswith(b"\n"):
        try:
            obj = json.loads(line)
        except ValueError:
            return  # torn last record
        if isinstance(obj, dict):
            yield num, obj
        return
    yield _parse(path, num, line)


_decode = json.JSONDecoder().decode


def _parse(path: Path, lineno: int, line: bytes) -> tuple[int, dict[str, Any]]:
    try:
        obj = _decode(line.decode())
    except ValueError as exc:
        why = exc.msg if isinstance(exc, json.JSONDecodeError) else "not UTF-8"
        raise BadInput(f"{path}:{lineno}: damaged session record ({why}); to keep the "
                       f"records before it, cut the file before line {lineno}") from None
    if not isinstance(obj, dict) or "kind" not in obj or "t" not in obj:
        raise BadInput(f"{path}:{lineno}: not an event record (no \"kind\" and \"t\")")
    return lineno, obj


def read_header(path: str | os.PathLike[str]) -> dict[str, Any]:
    """The header record (first line); BadInput when the file is not an abtui session."""
    p = Path(path)
    if not p.is_file():
        raise BadInput(f"{p}: no such session file")
    first = next(iter(_open_lines(p)), b"")
    try:
        header = json.loads(first)
    except ValueError:
        header = None
    if not isinstance(header, dict) or header.get("format") != FORMAT:
        raise BadInput(f"{p}:1: not an abtui session (no \"format\": \"{FORMAT}\" header)")
    version = header.get("version")
    if not isinstance(version, int) or version > VERSION:
        raise BadInput(f"{p}:1: session format version {version!r} is newer than this abtui "
                       f"reads ({VERSION}); upgrade abtui")
    return header


def iter_events(path: str | os.PathLike[str]) -> Iterator[AnyEvent]:
    """Every event of a session, plain or gzip'ed, in order; kinds this abtui does not know
    (written by a newer minor version) are skipped with one warning on stderr."""
    p = Path(path)
    read_header(p)
    unknown: set[str] = set()
    known = {str(k) for k in EventKind}
    for lineno, obj in _records(p):
        kind = obj.get("kind")
        if kind not in known:
            if str(kind) not in unknown:
                unknown.add(str(kind))
                print(f"abtui: {p}:{lineno}: skipping unknown event kind {kind!r}",
                      file=sys.stderr)
            continue
        try:
            yield Event.from_json(obj)
        except (TypeError, ValueError, KeyError):
            raise BadInput(f"{p}:{lineno}: malformed {kind} record (\"t\" must be a "
                           "number, \"data\" an object)") from None


def load_events(path: str | os.PathLike[str]) -> list[AnyEvent]:
    """All events in a list (small sessions, tests); use iter_events or Session for big ones."""
    return list(iter_events(path))


def head_time(path: Path) -> float | None:
    """The time of a plain journal's first event (line 2), reading only the file's start."""
    with open(path, "rb") as f:
        f.readline()
        try:
            obj = json.loads(f.readline())
        except ValueError:
            return None
    return float(obj["t"]) if isinstance(obj, dict) and isinstance(obj.get("t"), int | float) \
        else None


def tail_time(path: Path) -> float | None:
    """The time of a plain journal's last complete record, reading only the file's end."""
    size = path.stat().st_size
    with open(path, "rb") as f:
        f.seek(max(0, size - 65536))
        chunk = f.read()
    for line in reversed(chunk.split(b"\n")):
        try:
            obj = json.loads(line)
        except ValueError:
            continue
        if isinstance(obj, dict) and isinstance(obj.get("t"), int | float):
            return float(obj["t"])
    return None
