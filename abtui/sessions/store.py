"""The session journal: one JSON line per event, appended as events arrive, crash-safe.

A live session is `NAME.abtui.jsonl`: a header line, then `Event.to_json()` per line, each
written with one `write()` system call so a SIGKILL loses at most the record in flight (data
handed to the kernel survives the process). Records that matter for restoring hosts (knob
originals and changes, runs, errors) are also fsync'ed at once; high-rate records (intervals,
pings, watches) at most once per `fsync_interval`, so a power cut loses at most that much.
`close()` compacts the finished journal into `NAME.abtui.jsonl.gz` (atomic rename) with a
header that also carries the end time and event count. See docs/session-format.md.
"""

from __future__ import annotations

import contextlib
import gzip
import json
import os
import re
import sys
import time
import zlib
from collections.abc import Iterator, Sequence
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from abtui.core.errors import BadInput
from abtui.core.events import Event, EventKind

FORMAT = "abtui-session"
VERSION = 1
LIVE_SUFFIX = ".abtui.jsonl"
FINISHED_SUFFIX = ".abtui.jsonl.gz"
ENV_DIR = "ABTUI_SESSIONS_DIR"

# kinds written often; every other kind is fsync'ed as soon as it is written
_BULK_KINDS = frozenset({EventKind.INTERVAL, EventKind.PING, EventKind.WATCH,
                         EventKind.PROGRESS, EventKind.LINK})


def sessions_dir(override: str | os.PathLike[str] | None = None) -> Path:
    """Where sessions live: `override`, else $ABTUI_SESSIONS_DIR, else the user's data dir."""
    if override:
        return Path(override).expanduser()
    env = os.environ.get(ENV_DIR)
    if env:
        return Path(env).expanduser()
    import platformdirs

    return Path(platformdirs.user_data_dir("abtui")) / "sessions"


def session_name(profile_name: str, when: float | None = None) -> str:
    """`<profile>-<UTC timestamp>`, safe as a file name, sorting by time within a profile."""
    stamp = datetime.fromtimestamp(time.time() if when is None else when, UTC)
    safe = re.sub(r"[^A-Za-z0-9._-]+", "_", profile_name).strip("._") or "session"
    return f"{safe}-{stamp:%Y%m%dT%H%M%SZ}"


def new_session_path(profile_name: str, directory: str | os.PathLike[str] | None = None,
                     when: float | None = None) -> Path:
    """A fresh live-journal path for a profile, never one that exists already."""
    folder = sessions_dir(directory)
    base = session_name(profile_name, when)
    path = folder / f"{base}{LIVE_SUFFIX}"
    n = 1
    while path.exists() or path.with_name(path.name + ".gz").exists():
        n += 1
        path = folder / f"{base}-{n}{LIVE_SUFFIX}"
    return path


def name_of(path: Path) -> str:
    """The session's name: its file name without the journal suffixes."""
    name = path.name
    for suffix in (FINISHED_SUFFIX, LIVE_SUFFIX, ".jsonl.gz", ".gz", ".jsonl"):
        if name.endswith(suffix):
            return name[: -len(suffix)]
    return name


def saved_path(path: Path) -> Path:
    """Where a session saved under a typed `path` goes: exactly there when it names a session
    file (`.jsonl`, a plain journal, or `.jsonl.gz`), else NAME.abtui.jsonl.gz."""
    if path.name.endswith((".jsonl", ".jsonl.gz")):
        return path
    return finished_path(path)


def save_events(path: Path, events: Sequence[Event], *, profile: str = "",
                pairs: Sequence[str] = ()) -> Path:
    """Write `events` as a finished session at exactly `path` (gzip'ed when it ends in
    `.gz`, plain otherwise); journalled beside it first, so a crash leaves no torn file
    there. BadInput when a file is there already."""
    journal = path.with_name(f".{path.name}.part")
    with contextlib.suppress(FileNotFoundError):
        journal.unlink()  # an earlier save's, cut short
    writer = SessionWriter(journal, profile=profile, pairs=pairs, final=path)
    try:
        for event in events:
            writer.write(event)
    except BaseException:
        writer.discard()
        raise
    return writer.close()


def finished_path(path: Path) -> Path:
    """Where a session journalled at `path` is once finished: NAME.abtui.jsonl.gz beside it
    (whatever suffix `path` has)."""
    return path.with_name(name_of(path) + FINISHED_SUFFIX)


class SessionWriter:
    """Appends events to a live journal; `close()` compacts it. Usable as `subscribe` callback.

    `profile` and `pairs` go into the header so `abtui sessions` can list a session by reading
    one line. `compact=False` keeps the plain journal on close (for tools that tail it);
    `final` is where close() puts the finished session (default: NAME.abtui.jsonl.gz
    beside the journal; plain when it does not end in `.gz`).
    """

    def __init__(self, path: str | os.PathLike[str], *, profile: str = "",
                 pairs: Sequence[str] = (), fsync_interval: float = 1.0,
                 compact: bool = True, final: Path | None = None) -> None:
        self.path = Path(path)
        self.final = final or finished_path(self.path)
        if compact and self.final.exists():
            raise BadInput(f"{self.final}: a session file exists there already")
        self.path.parent.mkdir(parents=True, exist_ok=True)
        self.fsync_interval = fsync_interval
        self.compact = compact
        self.events = 0
        self.final_path: Path | None = None
        self._first_t: float | None = None
        self._last_t: float | None = None
        self._pairs: list[str] = list(pairs)
        self._header: dict[str, Any] = {
            "format": FORMAT, "version": VERSION, "name": name_of(self.final),
            "profile": profile, "created": time.time(), "pairs": list(pairs),
        }
        try:
            self._fd = os.open(self.path, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_APPEND,
                               0o644)
        except FileExistsError:
            raise BadInput(f"{self.path}: a session file exists there already") from None
        self._last_sync = time.monotonic()
        self._dirty = False
        self._write_line(self._header)
        self._sync()
        _fsync_dir(self.path.parent)

    def __enter__(self) -> SessionWriter:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def __call__(self, event: Event) -> None:
        self.write(event)

    def write(self, event: Event) -> None:
        """Append one event (one write() call); fsync per the policy in the module docstring."""
        if self._fd < 0:
            raise ValueError(f"session {self.path} is closed")
        self._write_line(event.to_json())
        self.events += 1
        self._last_t = event.t
        if self._first_t is None:
            self._first_t = event.t
        if event.pair is not None and event.pair not in self._pairs:
            self._pairs.append(event.pair)
        self._dirty = True
        if event.kind not in _BULK_KINDS or (
                time.monotonic() - self._last_sync >= self.fsync_interval):
            self._sync()

    def close(self) -> Path:
        """Finish the session: fsync, then compact (gzip, atomic rename). Returns the file."""
        if self._fd < 0:
            return self.final_path or self.path
        if self._dirty:
            self._sync()
        os.close(self._fd)
        self._fd = -1
        created = self._header["created"]
        facts = {"start": created if self._first_t is None else self._first_t,
                 "end": self._last_t if self._last_t is not None else created,
                 "events": self.events, "pairs": self._pairs}
        self.final_path = compact(self.path, facts, self.final) if self.compact \
            else self.path
        return self.final_path

    def discard(self) -> None:
        """Give the journal up: closed and removed, nothing finished."""
        if self._fd >= 0:
            os.close(self._fd)
            self._fd = -1
        with contextlib.suppress(FileNotFoundError):
            self.path.unlink()

    def _write_line(self, obj: dict[str, Any]) -> None:
        data = (json.dumps(obj, separators=(",", ":"), ensure_ascii=False) + "\n").encode()
        while data:  # one call in practice; loop only on a short write
            n = os.write(self._fd, data)
            data = data[n:]

    def _sync(self) -> None:
        os.fsync(self._fd)
        self._dirty = False
        self._last_sync = time.monotonic()


def compact(path: Path, facts: dict[str, Any] | None = None,
            target: Path | None = None) -> Path:
    """Gzip a live journal into NAME.abtui.jsonl.gz (or `target`: gzip'ed if it ends in
    `.gz`, else plain), then remove the journal.

    The header gains "end" (last record's time), "events" and the full "pairs" list; `facts`
    gives them when the writer knows them, else one pass over the journal finds them. Atomic:
    a crash leaves either the journal or the finished file. A torn last line is dropped."""
    target = target or finished_path(path)
    tmp = target.with_name(target.name + ".tmp")
    header = read_header(path)
    header.update(facts if facts is not None else _scan(path, header))
    zipped = target.name.endswith(".gz")
    with open(tmp, "wb") as raw:
        out: Any = gzip.GzipFile(fileobj=raw, mode="wb", mtime=0) if zipped else raw
        out.write((json.dumps(header, separators=(",", ":"), ensure_ascii=False) + "\n")
                  .encode())
        with open(path, "rb") as src:
            src.readline()
            for line in src:
                if line.endswith(b"\n"):
                    out.write(line)
        if zipped:
            out.close()
        raw.flush()
        os.fsync(raw.fileno())
    os.replace(tmp, target)
    path.unlink()
    _fsync_dir(target.parent)
    return target


def _scan(path: Path, header: dict[str, Any]) -> dict[str, Any]:
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


def _fsync_dir(folder: Path) -> None:
    fd = os.open(folder, os.O_RDONLY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


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


def iter_events(path: str | os.PathLike[str]) -> Iterator[Event]:
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


def load_events(path: str | os.PathLike[str]) -> list[Event]:
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


def find_session(ref: str, directory: str | os.PathLike[str] | None = None) -> Path:
    """A session file from a path, or from a name in the sessions folder; BadInput if none."""
    p = Path(ref).expanduser()
    if p.is_file():
        return p
    if p.name.endswith(".jsonl") and finished_path(p).is_file():
        return finished_path(p)  # a journal's path, once the journal was finished
    folder = sessions_dir(directory)
    for cand in (folder / ref, folder / f"{ref}{FINISHED_SUFFIX}", folder / f"{ref}{LIVE_SUFFIX}"):
        if cand.is_file():
            return cand
    raise BadInput(f"{ref}: no such session (not a file, nor a session in {folder})")


def list_sessions(directory: str | os.PathLike[str] | None = None) -> list[Path]:
    """Session files in the folder, oldest first by name."""
    folder = sessions_dir(directory)
    if not folder.is_dir():
        return []
    files = [p for p in folder.iterdir()
             if p.name.endswith((FINISHED_SUFFIX, LIVE_SUFFIX)) and p.is_file()]
    return sorted(files, key=lambda p: (p.stat().st_mtime, p.name))
