"""Run the console so that the hosts are restored however it ends.

ctrl+q restores inside the console, with its progress on screen. Any other end is caught here,
in the same event loop once the console has given the terminal back: an exception in a handler
(Textual leaves with its traceback), or SIGTERM, SIGHUP (the terminal closed: the screen's
output then goes nowhere) or SIGINT, which start the same restore as ctrl+q (a second one
leaves at once, as a second ctrl+q does). When the console did not finish restoring, the
controller's shutdown runs here, each host's line printed as it is restored. Where even that
cannot finish, one line says `abtui recover` will.

Restoring after a signal (or after the console died) is bounded: hosts that went away or a
link that hangs must not keep an unattended console alive for good. After `bound_s` seconds
it stops waiting, says in one line that `abtui recover` will finish, and leaves with a
non-zero status; if even that does not end the process within `grace_s` more (an event loop
that no longer turns), a watchdog thread puts the terminal back and ends it.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import signal
import sys
import termios
import threading
from typing import Any, TextIO

from abtui.core.events import Event, EventKind
from abtui.core.text import visible
from abtui.ui.app import AbtuiApp
from abtui.ui.render.textual_privates import ended_with, silence_dead_writer

SIGNALS = (signal.SIGTERM, signal.SIGHUP, signal.SIGINT)
RECOVER = "not everything was restored: `abtui recover` will finish it (it reads the undo " \
          "journal abtui keeps)"
RESTORE_BOUND_S = 60.0  # restoring after a signal or a crash gives up after this long
GRACE_S = 5.0  # ... and the process ends at the latest this long after giving up
# what a terminal needs to be usable again (what Textual's driver undoes on a normal exit)
TERMINAL_RESET = ("\x1b[<u\x1b[?1049l\x1b[?25h\x1b[?1004l\x1b[?1000l\x1b[?1003l"
                  "\x1b[?1015l\x1b[?1006l\x1b[?2004l\x1b[?7h")


async def run_console(app: AbtuiApp, *, out: TextIO | None = None, recover_hint: bool = True,
                      bound_s: float = RESTORE_BOUND_S, grace_s: float = GRACE_S,
                      linger: bool = False, **run: Any) -> int:
    """Run `app` (keyword arguments go to App.run_async) and restore the hosts if it ended
    without doing so; returns the exit code (128 + the signal's number after a signal).
    `linger`: once it gave up, the watchdog stays until the process ends (`abtui tui`,
    whose asyncio.run then cancels and awaits what hung)."""
    out = out or sys.stderr
    loop = asyncio.get_running_loop()
    seen: list[int] = []
    restoring: list[asyncio.Task[None]] = []
    gave_up: list[str] = []
    timer: list[asyncio.TimerHandle] = []
    watchdog = _Watchdog(app, out, gave_up, lambda: 128 + seen[0] if seen else 1,
                         bound_s + grace_s)

    def give_up() -> None:
        """The bound passed: stop waiting for the hosts, say so once, leave."""
        if gave_up:
            return
        gave_up.append(f"restoring did not finish within {bound_s:g} s; {RECOVER}")
        _say(out, gave_up[0])
        if restoring:
            restoring[0].cancel()
        if app.is_running:
            app.exit_flow.forced_out = True
            app.exit(1, return_code=1)

    def bound() -> None:
        """Restoring has begun without anyone watching: from now on it is bounded."""
        if not timer:
            timer.append(loop.call_later(bound_s, give_up))

    def on_signal(signum: int) -> None:
        seen.append(signum)
        bound()
        if restoring:  # a second signal while the guard restores: leave now
            restoring[0].cancel()
        elif app.is_running and (len(seen) > 1 or not app.leaving):
            app.exit_flow.stop_reason = app.exit_flow.stop_reason or signal.Signals(signum).name
            app.call_later(app.action_quit)  # as ctrl+q; a second one forces out

    def on_os_signal(signum: int, _frame: object) -> None:
        """In the main thread, whatever the event loop is doing (even stuck): the watchdog
        starts here, the rest runs in the loop."""
        if signum == signal.SIGHUP:
            _terminal_gone(app)  # at once: before Textual writes again
        watchdog.arm()
        loop.call_soon_threadsafe(on_signal, signum)

    previous = {sig: signal.getsignal(sig) for sig in SIGNALS}
    for sig in SIGNALS:
        signal.signal(sig, on_os_signal)
    try:
        await app.run_async(**run)
        code = int(app.return_code or 0)
        if app.exit_flow.restore_outcome != "done" and not app.exit_flow.forced_out:
            bound()
            watchdog.arm()
            task = asyncio.ensure_future(_restore(app, out))
            restoring.append(task)
            try:
                await task
            except asyncio.CancelledError:
                if not gave_up:
                    _say(out, "left before restoring finished")
                app.exit_flow.restore_outcome = "failed"
            code = code or 1
        failed = app.exit_flow.forced_out or app.exit_flow.restore_outcome == "failed" or \
            app.record.restore_failed
        if failed and recover_hint and not gave_up:
            _say(out, RECOVER)
        if failed and recover_hint:  # left set on hosts: never exit 0 (ctrl+q's restore may
            code = code or 1  # end so; a replay's recorded RESTORE is not this console's)
    finally:
        for t in timer:
            t.cancel()
        if not (gave_up and linger):  # else it ends the process if clean-up hangs too
            watchdog.disarm()
        for sig in SIGNALS:
            signal.signal(sig, previous[sig] if previous[sig] is not None else signal.SIG_DFL)
    return 128 + seen[0] if seen else (code or (1 if gave_up else 0))


class _Watchdog:
    """Ends the process `after` seconds once armed, unless disarmed first: the bound on
    restoring must hold even when the event loop no longer turns (a handler stuck, a busy
    loop), so it is a thread of its own. It puts the terminal back as Textual would, says
    the line (once), and exits with `code()`."""

    def __init__(self, app: AbtuiApp, out: TextIO, said: list[str],
                 code: Any, after: float) -> None:
        self.app, self.out, self.said, self.code, self.after = app, out, said, code, after
        self.modes = terminal_modes()  # (made before the console takes the terminal)
        self._done = threading.Event()
        self._thread: threading.Thread | None = None

    def arm(self) -> None:
        if self._thread is None:
            self._thread = threading.Thread(target=self._run, name="abtui-guard",
                                            daemon=True)
            self._thread.start()

    def disarm(self) -> None:
        self._done.set()

    def _run(self) -> None:
        if self._done.wait(self.after):
            return
        saved = self.modes
        if saved is not None:
            with contextlib.suppress(termios.error, OSError, ValueError):
                termios.tcsetattr(saved[0], termios.TCSANOW, saved[1])
        with contextlib.suppress(OSError):
            if os.isatty(2):
                os.write(2, TERMINAL_RESET.encode())
        if not self.said:
            _say(self.out, f"restoring did not finish in time; {RECOVER}")
        with contextlib.suppress(OSError):
            self.app.on_disk.close()  # os._exit runs no clean-up: a spool would be left
        os._exit(self.code())


def terminal_modes() -> tuple[int, list[Any]] | None:
    """The terminal's file descriptor and its modes as the console found them, to put back
    if the console cannot (what Textual's Linux driver saves from the same descriptor as it
    starts and puts back on a normal exit); None when stdin is no terminal."""
    try:
        fd = sys.__stdin__.fileno() if sys.__stdin__ is not None else -1
        return (fd, termios.tcgetattr(fd)) if fd >= 0 and os.isatty(fd) else None
    except (OSError, ValueError, termios.error):
        return None


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
    silence_dead_writer(app)


async def _restore(app: AbtuiApp, out: TextIO) -> None:
    """The controller's shutdown after the console has gone; its lines go to `out`."""
    error = ended_with(app)  # what Textual left with, if anything
    why = (f"{type(error).__name__}: {error}" if error is not None
           else app.exit_flow.stop_reason or "the console ended")
    _say(out, f"{visible(why)}; restoring the hosts…")
    listening = True

    def show(event: Event) -> None:
        if listening and event.kind in (EventKind.RESTORE, EventKind.ERROR):
            line = app.state.apply(event)
            if line:
                _say(out, "  " + line)
        if listening:
            app.record.keep(event)  # what the console would have kept
    app.controller.subscribe(show)
    try:
        await app.calls.session.shutdown()
    except Exception as exc:
        app.exit_flow.restore_outcome = "failed"
        _say(out, f"restoring failed: {type(exc).__name__}: {exc}")
    else:
        app.exit_flow.restore_outcome = "done"
        _say(out, "restoring ended" if app.record.restore_failed else "hosts restored")
    finally:
        listening = False


def _say(out: TextIO, line: str) -> None:
    """One line to `out`; a terminal that has gone (SIGHUP) is no reason to stop restoring."""
    with contextlib.suppress(OSError, ValueError):
        out.write(f"abtui: {visible(line)}\n")
        out.flush()
