"""A session file read as it grows, for a console that watches a session another abtui is
recording (`abtui view --follow`, `abtui serve`): the live journal (NAME.abtui.jsonl, one JSON
line per event, flushed as written) read from where the last poll stopped, a line still being
written left for the next poll; when the recording ends and the journal is compacted into
NAME.abtui.jsonl.gz (abtui.sessions.writer.compact: the journal removed once the finished
file is in place), the rest is read from the finished file. A finished session is read whole
at once. Read-only: the file is never written, locked or truncated.
"""

from __future__ import annotations

import gzip
from pathlib import Path

from abtui.core.events import AnyEvent
from abtui.sessions.paths import finished_path
from abtui.sessions.reader import event_of_line, read_header


class SessionTail:
    """`poll()` returns the events written since the last poll; `finished` once the whole
    session has been read (a finished file, or the journal compacted)."""

    def __init__(self, path: Path, once: bool = False) -> None:
        read_header(path)  # BadInput, one line, when it is no session
        self.path = path
        # `once`: what the file holds now, read at the first poll (not followed)
        self.finished = once or path.name.endswith(".gz")
        self._offset = 0  # bytes of the live journal consumed (header and whole lines)
        self._lineno = 0  # lines consumed, the header included
        self._pending = b""
        self._done = False

    def poll(self) -> list[AnyEvent]:
        if self._done:
            return []
        if self.finished:
            self._done = True
            return self._rest_of(self.path)
        try:
            f = open(self.path, "rb")  # noqa: SIM115 (closed below, whatever happens)
        except FileNotFoundError:
            final = finished_path(self.path)
            if not final.is_file():
                return []  # between the rename and the removal: next poll
            self.finished = self._done = True
            return self._rest_of(final)
        with f:
            f.seek(self._offset)
            data = self._pending + f.read()
        self._offset += len(data) - len(self._pending)
        *whole, self._pending = data.split(b"\n")
        return self._events([line + b"\n" for line in whole])

    def _events(self, lines: list[bytes]) -> list[AnyEvent]:
        out: list[AnyEvent] = []
        for line in lines:
            self._lineno += 1
            if self._lineno == 1:
                continue  # the header
            ev = event_of_line(self.path, self._lineno, line)
            if ev is not None:
                out.append(ev)
        return out

    def _rest_of(self, path: Path) -> list[AnyEvent]:
        """The lines of a finished file past those already read (its header is the
        journal's with totals added: one line, as the journal's; a torn last line of the
        journal was dropped by the compaction, as here)."""
        opener = gzip.open if path.name.endswith(".gz") else open
        with opener(path, "rb") as f:
            lines = [line for line in f if line.endswith(b"\n")]
        seen = self._lineno
        self.path = path
        return self._events(lines[seen:])
