"""The console's file dialogs: save a copy of the session, export its report, compare it with a
saved session or phase by phase, a screenshot. Each asks for a path, then reads the session's
journal (abtui.ui.flow.on_disk) and writes off the event loop (abtui.sessions and
abtui.reports do the reading and writing) and says in the log what it did, or why it failed.
The dialogs and what they did are posted as messages (abtui.ui.flow.messages): the app shows
them."""

from __future__ import annotations

import dataclasses
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Any

from textual.screen import Screen

from abtui.core.errors import AbtuiError
from abtui.core.events import Event
from abtui.sessions import paths
from abtui.ui.flow.messages import Done, Failed, Post, RunWorker, ShowScreen
from abtui.ui.flow.on_disk import EventsOnDisk
from abtui.ui.flow.record import throughput_series
from abtui.ui.model.state import ConsoleState
from abtui.ui.render import tables
from abtui.ui.render.eventlog import EventLog

if TYPE_CHECKING:
    from abtui.measure.session import ControllerSession
    from abtui.sessions.session import Session

EXPORT_FORMATS = ("md", "text", "csv", "json")


class SessionFiles:
    """What `s`, `S`, `e`, the palette's compare-with-saved and its Screenshot do for the app.

    Given its collaborators, never the app: its dialogs, what they did and what failed are
    posted (`post`), its reading and writing run as the app's thread workers (`run_worker`),
    `width` is the screen's (the compare tables are laid out for it)."""

    def __init__(self, post: Post, run_worker: RunWorker, session: ControllerSession[Any],
                 state: ConsoleState, on_disk: EventsOnDisk, event_log: EventLog, *,
                 width: Callable[[], int], save_dir: str | Path | None = None,
                 sessions_dir: str | Path | None = None) -> None:
        self.post = post
        self.run_worker = run_worker
        self.width = width
        self.session = session  # its controller's journal (none: a replay's)
        self.profile = session.profile
        self.state = state
        self.on_disk = on_disk
        self.event_log = event_log
        self.save_dir = save_dir  # where saves and exports are offered (None: the sessions')
        self.sessions_dir = sessions_dir  # where sessions are (None: abtui's folder)

    def folder(self) -> Path:
        """Where the console offers to write: the sessions folder (or `save_dir`)."""
        return (Path(self.save_dir) if self.save_dir
                else paths.sessions_dir(self.sessions_dir))

    def export(self) -> None:
        def chosen(result: object) -> None:
            if isinstance(result, tuple):
                self._in_thread("export", lambda: _export(
                    result[0], result[1] or "md", self.on_disk.events(), self.profile.name,
                    self.state.base))

        from abtui.ui.render.screens import PathPrompt

        path = self.session.session_path
        name = paths.name_of(path) if path else paths.session_name(self.profile.name)
        self.post(ShowScreen(PathPrompt("Export the session (the report abtui export writes)",
                                        str(self.folder() / f"{name}.md"), EXPORT_FORMATS),
                             chosen))

    def save(self) -> None:
        def chosen(result: object) -> None:
            if isinstance(result, tuple):
                self._in_thread("save", lambda: _save_copy(
                    result[0], self.on_disk.events(), self.profile.name,
                    list(self.state.pairs), paths.name_of(live) if live else None))

        from abtui.ui.render.screens import PathPrompt

        # With the engine the session is journalled as it runs (controller.session_path):
        # `s` saves a copy of what the console has received, under another name.
        live = self.session.session_path
        note = (f"This session is being written to {live} as it runs (finished there when "
                "you quit); this saves a copy of it so far.") if live else ""
        default = paths.new_session_path(self.profile.name, self.folder() if self.save_dir
                                         else self.sessions_dir)
        self.post(ShowScreen(PathPrompt("Save the session", str(paths.finished_path(default)),
                                        note=note, resolve=paths.saved_path, replace=False),
                             chosen))

    def save_setup(self) -> None:
        """S: the live setup written into the profile's own file (each knob's value on every
        pair as its `initial`), after Enter confirms; abtui.profile.save does the saving (the
        file read and checked again, comments kept, replaced atomically), in a worker."""
        from abtui.profile.save import setup_changes
        from abtui.ui.render.screens import Confirm

        path = self.profile.source_path
        if not path:
            self.post(Failed("save setup: this session's profile has no file to save into (a "
                             "replay, or a profile read from a session)"))
            return
        live = self.live_setup()
        changes = setup_changes(self.profile, live)
        lines = [c.line() for c in changes] or [
            "the knobs' values are the profile's already: nothing to change"]

        def chosen(result: object) -> None:
            if result is True:
                self._in_thread("save setup", lambda: _save_setup(Path(path), live))

        self.post(ShowScreen(Confirm(f"Save the setup to {path}?", lines), chosen))

    def live_setup(self) -> dict[str, dict[str, str]]:
        """Each pair's knob values as the hosts reported them and the flips since set."""
        return {label: dict(ps.config) for label, ps in self.state.pairs.items()}

    def compare_saved(self) -> None:
        """This session against a saved one (`abtui compare`'s table): picked from the
        sessions folder, or typed as a file or a name."""
        from abtui.ui.render.screens import CompareScreen, SessionPicker

        def chosen(result: object) -> None:
            if isinstance(result, Path):
                self._in_thread("compare", lambda: CompareScreen(
                    tables.saved_comparison(_load(result), self.on_disk.events(),
                                            self.width())))

        live = self.session.session_path
        mine = {live, paths.finished_path(live)} if live else set()
        saved = [p for p in reversed(paths.list_sessions(self.sessions_dir)) if p not in mine]
        self.post(ShowScreen(SessionPicker(
            "Compare with a saved session", saved,
            lambda ref: paths.find_session(ref, self.sessions_dir)), chosen))

    def compare_session(self) -> None:
        """This session: the phase table, pairs over time, per-configuration bars. The table
        and bars are the live state's (taken now, on the loop); the lines over time are
        read from the journal in a worker, as the console keeps no series of its own."""
        from abtui.ui.render.screens import CompareScreen

        shown = tables.session_comparison(self.profile.name, self.state, {}, self.width())
        pairs, t0 = list(self.state.pairs), self.event_log.t0
        self._in_thread("compare", lambda: CompareScreen(dataclasses.replace(
            shown, lines=tables.unit_lines(throughput_series(self.on_disk.events(), pairs,
                                                             t0), shown.unit))))

    def screenshot(self, save: Callable[[str, str, str | None], str], filename: str | None,
                   path: str | None, time_format: str | None) -> None:
        """An SVG of the screen (`save` writes it: the app's save_screenshot), in the sessions
        folder (Textual's default, ~/Downloads, may not exist), and where it went said in the
        log."""
        folder = Path(path) if path else self.folder()
        name = filename or f"{paths.session_name(self.profile.name)}.svg"
        try:
            folder.mkdir(parents=True, exist_ok=True)
            written = save(name, str(folder), time_format)
        except OSError as exc:
            self.post(Failed(f"screenshot failed: {exc}"))
            return
        self.post(Done(f"screenshot saved to {written}"))

    def _in_thread(self, what: str, job: Callable[[], Any]) -> None:
        self.run_worker(lambda: self._job(what, job), thread=True, exit_on_error=False,
                            group="files")

    def _job(self, what: str, job: Callable[[], Any]) -> None:
        """A file written or read off the loop: `job()` returns the line the log says, or
        the screen to show (posted: Textual's post_message is safe from a thread)."""
        try:
            result = job()
        except (OSError, ValueError, AbtuiError) as exc:
            self.post(Failed(f"{what} failed: {exc}"))
            return
        self.post(ShowScreen(result) if isinstance(result, Screen) else Done(result))


def _save_copy(path: Path, events: list[Event], profile: str, pairs: list[str],
               copy_of: str | None) -> str:
    """A copy of the session so far at `path` (abtui.sessions.writer.save_events), marked
    as a copy of the live session's journal when there is one; the line the log says."""
    from abtui.sessions.writer import save_events

    written = save_events(path, events, profile=profile, pairs=pairs, copy_of=copy_of)
    return f"saved {len(events)} events to {written}"


def _save_setup(path: Path, live: dict[str, dict[str, str]]) -> str:
    """The setup saved into the profile at `path`; the line the log says, naming the file."""
    from abtui.profile.save import save_setup

    written, changes = save_setup(path, live)
    saved = [f"{c.knob}={c.value}" for c in changes if not c.why]
    kept = [c.line() for c in changes if c.why]
    head = (f"setup saved to {written}: {', '.join(saved)}" if saved
            else f"setup saved to {written}: nothing to change")
    return head + (f" ({'; '.join(kept)})" if kept else "")


def _export(path: Path, fmt: str, events: list[Event], name: str, base: str) -> str:
    """The report `abtui export` writes, of the session so far (abtui.reports.exports); the
    line the log says."""
    from abtui.reports.exports import export_events

    export_events(path, fmt, events, name, base)
    return f"exported {fmt} to {path}"


def _load(path: Path) -> Session:
    """A saved session, read (OSError or AbtuiError when it cannot be)."""
    from abtui.sessions.session import Session

    return Session.load(path)
