"""Run the console so that the hosts are restored however it ends.

ctrl+q restores inside the console, with its progress on screen. Any other end is caught here,
in the same event loop once the console has given the terminal back: an exception in a handler
(Textual leaves with its traceback), or SIGTERM, SIGHUP (the terminal closed: the screen's
output then goes nowhere) or SIGINT, which start the same restore as ctrl+q (a second one
leaves at once, as a second ctrl+q does). When the console did not finish restoring, the
controller's shutdown runs here, each host's line printed as it is restored. Where even that
cannot finish, one line says `abtui recover` will.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import signal
import sys
from typing import Any, TextIO

from abtui.core.events import Event, EventKind
from abtui.core.text import visible
from abtui.ui.app import AbtuiApp

SIGNALS = (signal.SIGTERM, signal.SIGHUP, signal.SIGINT)
RECOVER = "not everything was restored: `abtui recover` will finish it (it reads the undo " \
          "journal abtui keeps)"


async def run_console(app: AbtuiApp, *, out: TextIO | None = None, recover_hint: bool = True,
                      **run: Any) -> int:
    """Run `app` (keyword arguments go to App.run_async) and restore the hosts if it ended
    without doing so; returns the exit code (128 + the signal's number after a signal)."""
    out = out or sys.stderr
    loop = asyncio.get_running_loop()
    seen: list[int] = []
    restoring: list[asyncio.Task[None]] = []

    def on_signal(signum: int) -> None:
        seen.append(signum)
        if restoring:  # a second signal while the guard restores: leave now
            restoring[0].cancel()
        elif app.is_running and (len(seen) > 1 or not app.leaving):
            app.stop_reason = app.stop_reason or signal.Signals(signum).name
            app.call_later(app.action_quit)  # as ctrl+q; a second one forces out

    def on_hangup(signum: int, _frame: object) -> None:
        _terminal_gone(app)  # at once, in the main thread: before Textual writes again
        loop.call_soon_threadsafe(on_signal, signum)

    previous = {sig: signal.getsignal(sig) for sig in SIGNALS}
    for sig in SIGNALS:
        if sig == signal.SIGHUP:
            signal.signal(sig, on_hangup)
        else:
            loop.add_signal_handler(sig, on_signal, sig)
    try:
        await app.run_async(**run)
        code = int(app.return_code or 0)
        if app.restore_outcome != "done" and not app.forced_out:
            task = asyncio.ensure_future(_restore(app, out))
            restoring.append(task)
            try:
                await task
            except asyncio.CancelledError:
                _say(out, "left before restoring finished")
                app.restore_outcome = "failed"
            code = code or 1
        failed = app.forced_out or app.restore_outcome == "failed" or any(
            e.kind is EventKind.RESTORE and not e.data.get("ok") for e in app.events)
        if failed and recover_hint:
            _say(out, RECOVER)
    finally:
        for sig in SIGNALS:
            if sig != signal.SIGHUP:
                loop.remove_signal_handler(sig)
            signal.signal(sig, previous[sig] if previous[sig] is not None else signal.SIG_DFL)
    return 128 + seen[0] if seen else code


def _terminal_gone(app: AbtuiApp) -> None:
    """SIGHUP: the terminal has gone. Writing to it fails, which ends Textual's writer thread,
    and the frames queued after that would block the event loop for good, restoring with it.
    So output goes to /dev/null from now on, and a writer thread already ended writes
    nothing."""
    devnull = os.open(os.devnull, os.O_WRONLY)
    for fd in (1, 2):
        with contextlib.suppress(OSError):
            os.dup2(devnull, fd)
    os.close(devnull)
    writer = getattr(getattr(app, "_driver", None), "_writer_thread", None)
    if writer is not None and not writer.is_alive():
        writer.write = writer.stop = lambda *_: None


async def _restore(app: AbtuiApp, out: TextIO) -> None:
    """The controller's shutdown after the console has gone; its lines go to `out`."""
    error = getattr(app, "_exception", None)  # what Textual left with, if anything
    why = (f"{type(error).__name__}: {error}" if error is not None
           else app.stop_reason or "the console ended")
    _say(out, f"{visible(why)}; restoring the hosts…")
    listening = True

    def show(event: Event) -> None:
        if listening and event.kind in (EventKind.RESTORE, EventKind.ERROR):
            line = app.state.apply(event)
            if line:
                _say(out, "  " + line)
        if listening:
            app.events.append(event)  # what the console would have kept
    app.controller.subscribe(show)
    try:
        await app.controller.shutdown()
    except Exception as exc:
        app.restore_outcome = "failed"
        _say(out, f"restoring failed: {type(exc).__name__}: {exc}")
    else:
        app.restore_outcome = "done"
        _say(out, "hosts restored" if not any(
            e.kind is EventKind.RESTORE and not e.data.get("ok") for e in app.events)
            else "restoring ended")
    finally:
        listening = False


def _say(out: TextIO, line: str) -> None:
    """One line to `out`; a terminal that has gone (SIGHUP) is no reason to stop restoring."""
    with contextlib.suppress(OSError, ValueError):
        out.write(f"abtui: {visible(line)}\n")
        out.flush()
