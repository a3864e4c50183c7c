"""The console's terminal driver: Textual's Linux driver, its input thread asleep until input
comes.

Textual's input thread waits for the terminal's input with a 0.1 s timeout, so it wakes ten
times a second whether or not a key came (to give its parser a look at the clock: a lone
Escape is a key only once no sequence follows it). On a live 2-pair console that thread took
0.10-0.15 % of a core, as much as the phase table's frames (docs/performance.md, "The
console's share of its own CPU"). Here it waits with no timeout while its parser waits for
nothing, and until the parser's own deadline when it does (the lone Escape is delivered as
before); disabling input wakes it through a pipe of its own.

Textual 8.2's privates used, here alone (PRIVATES; tests/ui/test_terminal.py fails when the
installed Textual lacks one): the parser `textual._xterm_parser.XTermParser` and its
deadline `_timeout_time` (on `textual._time.get_time`'s clock), `textual._loop.loop_last`,
and the driver's `exit_event`, `fileno`, `_debug` and `process_message`. `run_input_thread`
is Textual's, but for the wait and the wake-up pipe.
"""

from __future__ import annotations

import contextlib
import os
import selectors
from codecs import getincrementaldecoder
from typing import Any

from textual._loop import loop_last
from textual._parser import ParseError
from textual._time import get_time
from textual._xterm_parser import XTermParser
from textual.driver import Driver
from textual.drivers.linux_driver import LinuxDriver

__all__ = ["PRIVATES", "QuietInputDriver", "quiet_driver"]

PRIVATES: tuple[tuple[type, str], ...] = (
    (XTermParser, "_timeout_time"), (XTermParser, "tick"), (XTermParser, "feed"),
    (LinuxDriver, "exit_event"), (LinuxDriver, "fileno"), (LinuxDriver, "_debug"),
    (LinuxDriver, "process_message"), (LinuxDriver, "disable_input"),
    (LinuxDriver, "run_input_thread"),
)


def quiet_driver(driver: type[Driver]) -> type[Driver]:
    """The driver the console runs on: QuietInputDriver where Textual would pick its Linux
    driver (not one named in TEXTUAL_DRIVER, nor the headless one of tests)."""
    return QuietInputDriver if driver is LinuxDriver else driver


def _wait(parser: XTermParser) -> float | None:
    """How long the input thread may sleep: until the parser's deadline, or for good."""
    deadline: float | None = parser._timeout_time
    return None if deadline is None else max(0.0, deadline - get_time())


class QuietInputDriver(LinuxDriver):
    """LinuxDriver whose input thread sleeps until input comes, its parser's deadline, or
    input is disabled (a byte on its wake-up pipe)."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self._wake_read, self._wake_write = os.pipe()
        os.set_blocking(self._wake_read, False)

    def disable_input(self) -> None:
        """Textual's, the input thread woken first to see its exit event (the byte stays in
        the pipe, so a thread that looks before the event is set waits on the event, not on
        input: see run_input_thread), then the pipe emptied for the next input thread."""
        os.write(self._wake_write, b"\0")
        try:
            super().disable_input()
        finally:
            with contextlib.suppress(BlockingIOError):
                while os.read(self._wake_read, 512):
                    pass

    def close(self) -> None:
        super().close()
        for fd in (self._wake_read, self._wake_write):
            with contextlib.suppress(OSError):
                os.close(fd)

    def run_input_thread(self) -> None:
        """Wait for input and dispatch events (Textual's, but for the wait)."""
        selector = selectors.SelectSelector()
        selector.register(self.fileno, selectors.EVENT_READ)
        selector.register(self._wake_read, selectors.EVENT_READ)
        fileno = self.fileno
        parser = XTermParser(self._debug)
        feed = parser.feed
        tick = parser.tick
        decode = getincrementaldecoder("utf-8")().decode
        read = os.read

        def process_selector_events(
            selector_events: list[tuple[selectors.SelectorKey, int]], final: bool = False
        ) -> None:
            for last, (key, mask) in loop_last(selector_events):
                if key.fd == fileno and mask & selectors.EVENT_READ:
                    unicode_data = decode(read(fileno, 1024 * 4), final=final and last)
                    if not unicode_data:
                        break  # (stdin piped, and at its end)
                    for event in feed(unicode_data):
                        self.process_message(event)
            for event in tick():
                self.process_message(event)

        try:
            while not self.exit_event.is_set():
                ready = selector.select(_wait(parser))
                if any(key.fd == self._wake_read for key, _ in ready):
                    self.exit_event.wait(1.0)  # disable_input sets it right after the byte
                process_selector_events(ready)
            selector.unregister(self.fileno)
            selector.unregister(self._wake_read)
            process_selector_events(selector.select(0.1), final=True)
        finally:
            selector.close()
            try:
                for _event in feed(""):
                    pass
            except (EOFError, ParseError):
                pass
