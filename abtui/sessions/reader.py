"""Reading the session journal: its header, then its events in one streaming pass.

A journal is plain (live) or gzip'ed (finished); both read the same. A last line torn by a
crash is dropped, a cut-short gzip stream just ends early, any other damage is BadInput naming
file:line: a line that does not parse, and one that parses but is no event (`t` not a finite
number, `pair` or `host` not a string, `data` not an object). A header's fields of the wrong
type are read as absent (the file's name stands for a name that is not a string), and a
payload's are the session's to note (abtui.sessions.session): nothing read raises anything
but BadInput. `head_time`/`tail_time` read only a live journal's start or end, for listings.
The format is docs/session-format.md; `writer` writes it.
"""

from __future__ import annotations

import gzip
import json
import math
import os
import sys
import zlib
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from abtui.core.errors import BadInput
from abtui.core.events import AnyEvent, Event, EventKind
from abtui.core.text import visible

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
        t = time_of(obj.get("t"))
        if events == 1:
            first_t = t if t is not None else first_t
        last_t = t if t is not None else last_t
        pair = obj.get("pair")
        if isinstance(pair, str) and pair not in pairs:
            pairs.append(pair)
    return {"start": first_t, "end": last_t, "events": events, "pairs": pairs}


def time_of(value: object) -> float | None:
    """A recorded time: a finite number (not a bool), else None."""
    if isinstance(value, bool) or not isinstance(value, int | float):
        return None
    try:
        t = float(value)
    except OverflowError:  # an integer too large for a float
        return None
    return t if math.isfinite(t) else None


# a header's fields as readers use them: (key, the check a value passes, else it is dropped)
_HEADER_FIELDS: dict[str, Any] = {
    "name": lambda v: isinstance(v, str) and bool(v),
    "profile": lambda v: isinstance(v, str),
    "created": lambda v: time_of(v) is not None,
    "start": lambda v: time_of(v) is not None,
    "end": lambda v: time_of(v) is not None,
    "events": lambda v: isinstance(v, int) and not isinstance(v, bool),
    "copy_of": lambda v: isinstance(v, str) and bool(v),
}


def _sane_header(header: dict[str, Any]) -> dict[str, Any]:
    """The header with every field readers use of the type they read (others dropped), its
    pairs the labels that are strings."""
    out = {k: v for k, v in header.items()
           if k not in _HEADER_FIELDS or _HEADER_FIELDS[k](v)}
    pairs = header.get("pairs")
    out["pairs"] = list(dict.fromkeys(p for p in pairs if isinstance(p, str))) \
        if isinstance(pairs, list) else []
    for key in ("created", "start", "end"):
        if key in out:
            out[key] = time_of(out[key])
    return out


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
        except (ValueError, RecursionError):
            return  # torn last record
        if isinstance(obj, dict):
            yield num, obj
        return
    yield _parse(path, num, line)


_decode = json.JSONDecoder().decode


def _parse(path: Path, lineno: int, line: bytes) -> tuple[int, dict[str, Any]]:
    try:
        obj = _decode(line.decode())
    except RecursionError:
        raise BadInput(f"{path}:{lineno}: damaged session record (nested too deep); to keep "
                       f"the records before it, cut the file before line {lineno}") from None
    except ValueError as exc:
        why = exc.msg if isinstance(exc, json.JSONDecodeError) else "not UTF-8"
        raise BadInput(f"{path}:{lineno}: damaged session record ({why}); to keep the "
                       f"records before it, cut the file before line {lineno}") from None
    if not isinstance(obj, dict) or "kind" not in obj or "t" not in obj:
        raise BadInput(f"{path}:{lineno}: not an event record (no \"kind\" and \"t\")")
    return lineno, obj


def _misshapen(obj: dict[str, Any]) -> str | None:
    """Why a parsed record is no event (None: it is one)."""
    if time_of(obj.get("t")) is None:
        return "\"t\" must be a finite number"
    for key in ("pair", "host"):
        if obj.get(key) is not None and not isinstance(obj[key], str):
            return f"\"{key}\" must be a string"
    if obj.get("data") is not None and not isinstance(obj["data"], dict):
        return "\"data\" must be an object"
    return None


def read_header(path: str | os.PathLike[str]) -> dict[str, Any]:
    """The header record (first line); BadInput when the file is not an abtui session."""
    p = Path(path)
    if not p.is_file():
        raise BadInput(f"{p}: no such session file")
    first = next(iter(_open_lines(p)), b"")
    try:
        header = json.loads(first)
    except (ValueError, RecursionError):
        header = None
    if not isinstance(header, dict) or header.get("format") != FORMAT:
        raise BadInput(f"{p}:1: not an abtui session (no \"format\": \"{FORMAT}\" header)")
    version = header.get("version")
    if not isinstance(version, int) or isinstance(version, bool):
        raise BadInput(f"{p}:1: session format version {visible(repr(version)[:40])} is not "
                       "a whole number: not a session abtui wrote")
    if version > VERSION:
        raise BadInput(f"{p}:1: session format version {version!r} is newer than this abtui "
                       f"reads ({VERSION}); upgrade abtui")
    return _sane_header(header)


def iter_events(path: str | os.PathLike[str]) -> Iterator[AnyEvent]:
    """Every event of a session, plain or gzip'ed, in order; kinds this abtui does not know
    (written by a newer minor version) are skipped with one warning on stderr."""
    p = Path(path)
    read_header(p)
    unknown: set[str] = set()
    known = {str(k) for k in EventKind}
    for lineno, obj in _records(p):
        kind = obj.get("kind")
        if not isinstance(kind, str) or kind not in known:
            shown = repr(kind)[:40]
            if shown not in unknown:
                unknown.add(shown)
                print(f"abtui: {p}:{lineno}: skipping unknown event kind {visible(shown)}",
                      file=sys.stderr)
            continue
        why = _misshapen(obj)
        if why is not None:
            raise BadInput(f"{p}:{lineno}: malformed {kind} record ({why})")
        yield Event.from_json(obj)


def load_events(path: str | os.PathLike[str]) -> list[AnyEvent]:
    """All events in a list (small sessions, tests); use iter_events or Session for big ones."""
    return list(iter_events(path))


def head_time(path: Path) -> float | None:
    """The time of a plain journal's first event (line 2), reading only the file's start."""
    with open(path, "rb") as f:
        f.readline()
        try:
            obj = json.loads(f.readline())
        except (ValueError, RecursionError):
            return None
    return time_of(obj.get("t")) if isinstance(obj, dict) else None


def tail_time(path: Path) -> float | None:
    """The time of a plain journal's last complete record, reading only the file's end."""
    size = path.stat().st_size
    with open(path, "rb") as f:
        f.seek(max(0, size - 65536))
        chunk = f.read()
    for line in reversed(chunk.split(b"\n")):
        try:
            obj = json.loads(line)
        except (ValueError, RecursionError):
            continue
        t = time_of(obj.get("t")) if isinstance(obj, dict) else None
        if t is not None:
            return t
    return None
