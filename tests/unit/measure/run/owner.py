"""A run's owner for the run's unit tests (the engine's is its run scheduler,
abtui.measure.engine.runs.RunScheduler): what a run tells it, handed to the callables given;
what is not given is not wanted."""

from __future__ import annotations

from collections.abc import Callable
from typing import Protocol

from abtui.core.events import AnyEvent
from abtui.remote.link import HostLink


class ProcessBook(Protocol):
    def record_pgid(self, host: str, pgid: int, what: str = "") -> None: ...

    def forget_pgid(self, host: str, pgid: int) -> None: ...


class Owner:
    """A RunOwner (abtui.measure.run.context) of `emit` and `phase_for(label, received,
    duration)`; `book` writes process groups down, `orphan` takes those left behind."""

    def __init__(self, emit: Callable[[AnyEvent], None],
                 phase_for: Callable[[str, float, float], tuple[int, bool]], *,
                 raw_sink: Callable[[str, str], None] | None = None,
                 book: ProcessBook | None = None,
                 orphan: Callable[[HostLink, int], None] | None = None) -> None:
        self.emit = emit
        self._phase_for = phase_for
        self._raw_sink, self._book, self._orphan = raw_sink, book, orphan

    def phase_for(self, label: str, received: float, duration: float,
                  settings: int) -> tuple[int, bool]:
        return self._phase_for(label, received, duration)

    def raw_line(self, run_id: str, line: str) -> None:
        if self._raw_sink is not None:
            self._raw_sink(run_id, line)

    def started(self, host: str, pgid: int, what: str) -> None:
        if self._book is not None:
            self._book.record_pgid(host, pgid, what)

    def ended(self, host: str, pgid: int) -> None:
        if self._book is not None:
            self._book.forget_pgid(host, pgid)

    def orphaned(self, link: HostLink, pgid: int) -> None:
        if self._orphan is not None:
            self._orphan(link, pgid)
