"""Writing the session journal: one JSON line per event, appended as events arrive, crash-safe.

A live session is `NAME.abtui.jsonl`: a header line, then `Event.to_json()` per line, each
written with one `write()` system call so a SIGKILL loses at most the record in flight (data
handed to the kernel survives the process). Records that matter for restoring hosts (knob
originals and changes, runs, errors) are also fsync'ed at once; high-rate records (intervals,
pings, watches) at most once per `fsync_interval`, so a power cut loses at most that much.
That periodic fsync runs in a thread of the writer's own: on the console's event loop it
held up the screen 2-14 ms a second, at the moment the intervals came.
`close()` compacts the finished journal into `NAME.abtui.jsonl.gz` (atomic rename) with a
header that also carries the end time and event count. See docs/session-format.md.

A write that fails (the disk full, an I/O error, the folder gone) never reaches the caller as
an exception: the writer keeps the journal as it was after its last whole record (a record cut
short is truncated away), writes nothing more, says why in one line (`error`) and calls
`on_error` once, so whoever runs the session stops it and sets the hosts back. Its `close()`
then leaves the journal as it is (readable, never compacted: the session is not whole).
"""

from __future__ import annotations

import contextlib
import gzip
import json
import os
import time
from collections.abc import Callable, Sequence
from concurrent.futures import Future, ThreadPoolExecutor
from pathlib import Path
from typing import Any

from abtui.core.errors import AbtuiError, BadInput, CannotWrite, WriteFailed
from abtui.core.events import AnyEvent, EventKind
from abtui.core.files import atomic_file, fsync_dir, why
from abtui.core.text import visible_json
from abtui.sessions.paths import finished_path, name_of, part_path
from abtui.sessions.reader import FORMAT, VERSION, read_header, scan_facts

# kinds written often; every other kind is fsync'ed as soon as it is written
_BULK_KINDS = frozenset({EventKind.INTERVAL, EventKind.PING, EventKind.RR, EventKind.WATCH,
                         EventKind.CPU,
                         EventKind.PROFILE, EventKind.COUNTERS,
                         EventKind.PROGRESS, EventKind.LINK, EventKind.LINK_BYTES,
                         EventKind.COMPETING})
# One line's JSON, by one encoder made once: json.dumps with options builds one per call
# (0.7 of a ping record's 5.5 µs in a tight loop); the same bytes. What a host said is kept
# exactly, but a non-printable character is escaped (the encoder escapes C0 only: a C1 control
# such as U+009B or a bidi override was written as it is, and `tail -f` of a journal obeyed
# it); an ASCII line, nearly every line, is returned as the encoder made it.
_JSON = json.JSONEncoder(separators=(",", ":"), ensure_ascii=False).encode
# a session tells who ran what against which hosts: its owner's only, as ssh keeps its files
SESSION_MODE = 0o600


def _ENCODE(obj: object) -> str:
    return visible_json(_JSON(obj))


def save_events(path: Path, events: Sequence[AnyEvent], *, profile: str = "",
                pairs: Sequence[str] = (), copy_of: str | None = None) -> Path:
    """Write `events` as a finished session at exactly `path` (gzip'ed when it ends in
    `.gz`, plain otherwise); journalled beside it first, so a crash leaves no torn file
    there. BadInput when a file is there already. `copy_of`: the name of the session this
    is a copy of (the header says so, and `abtui sessions` with it)."""
    journal = part_path(path)
    with contextlib.suppress(FileNotFoundError):
        journal.unlink()  # an earlier save's, cut short
    try:
        writer = SessionWriter(journal, profile=profile, pairs=pairs, final=path,
                               copy_of=copy_of)
    except WriteFailed as exc:
        raise CannotWrite(f"{path}: {exc}") from None
    try:
        for event in events:
            writer.write(event)
            if writer.error is not None:
                break
    except BaseException:
        writer.discard()
        raise
    written = writer.close()
    if writer.error is not None:
        writer.discard()
        raise CannotWrite(f"{path}: not saved: {writer.error}")
    return written



class SessionWriter:
    """Appends events to a live journal; `close()` compacts it. Usable as `subscribe` callback.

    `profile` and `pairs` go into the header so `abtui sessions` can list a session by reading
    one line. `compact=False` keeps the plain journal on close (for tools that tail it);
    `final` is where close() puts the finished session (default: NAME.abtui.jsonl.gz
    beside the journal; plain when it does not end in `.gz`).
    """

    def __init__(self, path: str | os.PathLike[str], *, profile: str = "",
                 pairs: Sequence[str] = (), fsync_interval: float = 1.0,
                 compact: bool = True, final: Path | None = None,
                 copy_of: str | None = None) -> None:
        self.path = Path(path)
        self.final = final or finished_path(self.path)
        if compact and self.final.exists():
            raise BadInput(f"{self.final}: a session file exists there already")
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
        if copy_of:
            self._header["copy_of"] = copy_of
        # why writing stopped (one line naming the file), once it did; told to `on_error`
        self.error: str | None = None
        self.on_error: Callable[[str], None] | None = None
        self.lost = 0  # events not written after a failure
        # events that came after the session was closed (a sampler's last reading racing a
        # stop): the file is whole without them, so they are counted, never raised
        self.late = 0
        self._size = 0  # bytes in the journal up to the end of its last whole record
        try:
            self.path.parent.mkdir(parents=True, exist_ok=True)
            self._fd = os.open(self.path, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_APPEND,
                               SESSION_MODE)
        except FileExistsError:
            raise BadInput(f"{self.path}: a session file exists there already") from None
        except OSError as exc:
            raise WriteFailed(f"{self.path}: cannot write the session ({why(exc)})") from None
        self._last_sync = time.monotonic()
        self._dirty = False
        self._syncer: ThreadPoolExecutor | None = None  # made on the first periodic fsync
        self._syncing: Future[None] | None = None  # the periodic fsync in flight, if one is
        try:
            self._write_line(self._header)
            self._sync()
            fsync_dir(self.path.parent)
        except OSError as exc:  # not even a header: no session to keep
            os.close(self._fd)
            self._fd = -1
            with contextlib.suppress(OSError):
                self.path.unlink()
            raise WriteFailed(f"{self.path}: cannot write the session ({why(exc)})") from None

    def __enter__(self) -> SessionWriter:
        return self

    def __exit__(self, kind: type[BaseException] | None, *exc: object) -> None:
        """Closed; a write that failed inside the block raises WriteFailed here (the block
        itself ran on: the writer never raises from `write`)."""
        self.close()
        if kind is None and self.error is not None:
            raise WriteFailed(self.error)

    def __call__(self, event: AnyEvent) -> None:
        self.write(event)

    def write(self, event: AnyEvent) -> None:
        """Append one event (one write() call); fsync per the policy in the module docstring.
        After a failed write, nothing (the module docstring)."""
        if self.error is not None:
            self.lost += 1
            return
        if self._fd < 0:
            self.late += 1
            return
        try:
            self._append(event)
        except OSError as exc:
            self._fail(exc)

    def _append(self, event: AnyEvent) -> None:
        self._write_line(event.to_json())
        self.events += 1
        self._last_t = event.t
        if self._first_t is None:
            self._first_t = event.t
        if event.pair is not None and event.pair not in self._pairs:
            self._pairs.append(event.pair)
        self._dirty = True
        if event.kind not in _BULK_KINDS:
            self._sync()
        elif time.monotonic() - self._last_sync >= self.fsync_interval:
            self._sync_behind()

    def close(self) -> Path:
        """Finish the session: fsync, then compact (gzip, atomic rename). Returns the file:
        after a failure (`error` says it), the journal as its last whole record left it."""
        if self._fd < 0:
            return self.final_path or self.path
        try:
            self._settle()
            if self._dirty and self.error is None:
                self._sync()
        except OSError as exc:
            self._fail(exc)
        os.close(self._fd)
        self._fd = -1
        self.final_path = self.path
        if self.error is not None or not self.compact:
            return self.path
        created = self._header["created"]
        facts = {"start": created if self._first_t is None else self._first_t,
                 "end": self._last_t if self._last_t is not None else created,
                 "events": self.events, "pairs": self._pairs}
        try:
            self.final_path = compact(self.path, facts, self.final)
        except (AbtuiError, OSError) as exc:
            self.error = (f"{self.final}: could not finish the session ({_reason(exc)}); "
                          f"it is whole in {self.path}")
        return self.final_path

    def discard(self) -> None:
        """Give the journal up: closed and removed, nothing finished."""
        if self._fd >= 0:
            with contextlib.suppress(OSError):
                self._settle()
            os.close(self._fd)
            self._fd = -1
        with contextlib.suppress(FileNotFoundError):
            self.path.unlink()

    def _write_line(self, obj: dict[str, Any]) -> None:
        data = (_ENCODE(obj) + "\n").encode()
        size = len(data)
        try:
            while data:  # one call in practice; loop only on a short write
                n = os.write(self._fd, data)
                data = data[n:]
        except OSError:
            self._cut()
            raise
        self._size += size

    def _cut(self) -> None:
        """A record cut short by a failed write: truncated away, so the journal ends with its
        last whole record (or, if even that fails, its line ended, so no two records are
        ever glued into one line)."""
        try:
            os.ftruncate(self._fd, self._size)
        except OSError:
            with contextlib.suppress(OSError):
                os.write(self._fd, b"\n")

    def _fail(self, exc: OSError) -> None:
        """Writing stopped: said once, in one line naming the file and the error."""
        if self.error is not None:
            return
        self.error = (f"{self.path}: could not write the session ({why(exc)}); the "
                      f"{self.events} events before it are kept there")
        if self.on_error is not None:
            self.on_error(self.error)

    def _sync(self) -> None:
        self._reap()
        os.fsync(self._fd)
        self._dirty = False
        self._last_sync = time.monotonic()

    def _sync_behind(self) -> None:
        """The periodic fsync, in the writer's thread: what was written so far reaches the
        disk as it would on the caller, without holding the caller up. One at a time (one
        still in flight makes the next wait for the next record); its error, if any, is
        raised by the next write."""
        self._reap()
        if self._syncing is not None:
            return
        if self._syncer is None:
            self._syncer = ThreadPoolExecutor(1, thread_name_prefix="abtui-fsync")
        self._dirty = False
        self._last_sync = time.monotonic()
        self._syncing = self._syncer.submit(os.fsync, self._fd)

    def _reap(self) -> None:
        """The periodic fsync done: forgotten, its error raised."""
        done, self._syncing = self._syncing, None
        if done is None:
            return
        if not done.done():
            self._syncing = done
            return
        done.result()

    def _settle(self) -> None:
        """No fsync in flight any more (before the descriptor is closed), its thread gone."""
        if self._syncing is not None:
            self._syncing.result()  # waited for; its error raised
            self._syncing = None
        if self._syncer is not None:
            self._syncer.shutdown()
            self._syncer = None


def _reason(exc: BaseException) -> str:
    return why(exc) if isinstance(exc, OSError) else str(exc)


def compact(path: Path, facts: dict[str, Any] | None = None,
            target: Path | None = None) -> Path:
    """Gzip a live journal into NAME.abtui.jsonl.gz (or `target`: gzip'ed if it ends in
    `.gz`, else plain), then remove the journal.

    The header gains "end" (last record's time), "events" and the full "pairs" list; `facts`
    gives them when the writer knows them, else one pass over the journal finds them. Atomic:
    a crash leaves either the journal or the finished file. A torn last line is dropped."""
    target = target or finished_path(path)
    header = read_header(path)
    header.update(facts if facts is not None else scan_facts(path, header))
    zipped = target.name.endswith(".gz")
    with atomic_file(target, SESSION_MODE) as raw:
        out: Any = gzip.GzipFile(fileobj=raw, mode="wb", mtime=0) if zipped else raw
        out.write((_ENCODE(header) + "\n").encode())
        with open(path, "rb") as src:
            src.readline()
            for line in src:
                if line.endswith(b"\n"):
                    out.write(line)
        if zipped:
            out.close()
    path.unlink()
    fsync_dir(target.parent)
    return target
