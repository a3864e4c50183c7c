"""Where the console's events are on disk, for save, export and compare to read in a worker
(the console keeps only a bounded window of them in memory: abtui.ui.flow.record).

On hosts the engine journals the session as it runs (its file is there before the console
opens, and written before the console is handed each event): that journal is read. A
controller that journals nothing (a replay) gets a spool of the console's own, written as
events arrive, in a temporary folder removed when the console closes. No Textual here.
"""

from __future__ import annotations

import math
import shutil
import tempfile
import weakref
from collections.abc import Callable, Sequence
from pathlib import Path

from abtui.core.errors import WriteFailed
from abtui.core.events import Event
from abtui.sessions import reader
from abtui.sessions.writer import SessionWriter


class EventsOnDisk:
    """The session's events on disk: `events()` reads them all (call it off the event loop);
    `write` is the controller's subscriber (a no-op when the controller journals itself)."""

    def __init__(self, live: Path | None, profile: str, pairs: Sequence[str]) -> None:
        self._writer: SessionWriter | None = None
        # removes the spool on close(), or when the console is collected without one
        self._cleanup: Callable[[], object] | None = None
        if live is not None and live.exists():
            self.path = live  # the engine's journal, written as the session runs
            return
        folder = Path(tempfile.mkdtemp(prefix="abtui-console-"))
        self.path = folder / "console.abtui.jsonl"
        # a spool, not a record to keep: no fsync of the frequent kinds
        self._writer = SessionWriter(self.path, profile=profile, pairs=pairs, compact=False,
                                     fsync_interval=math.inf)
        self._cleanup = weakref.finalize(self, _remove, self._writer, folder)

    @property
    def spooled(self) -> bool:
        """The console writes this journal itself (the controller journals nothing)."""
        return self._cleanup is not None

    def write(self, event: Event) -> None:
        """One event received (the controller's subscriber); nothing once closed."""
        if self._writer is not None:
            self._writer.write(event)

    def events(self) -> list[Event]:
        """Every event received so far, read from disk (seconds for a day's session: call it
        in a worker); WriteFailed when the spool could not hold them all (its disk full): a
        save or export of part of them would pass for the whole."""
        if self._writer is not None and self._writer.error is not None:
            raise WriteFailed(self._writer.error)
        return reader.load_events(self.path)

    def close(self) -> None:
        """The console has closed: a spool of its own is removed (the engine's journal is
        the engine's to finish)."""
        self._writer = None
        if self._cleanup is not None:
            self._cleanup()


def _remove(writer: SessionWriter, folder: Path) -> None:
    writer.discard()
    shutil.rmtree(folder, ignore_errors=True)
