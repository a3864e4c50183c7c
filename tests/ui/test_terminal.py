"""The console's terminal driver (abtui.ui.render.textual_privates): its input thread sleeps
until input comes, delivers keys as Textual's does (a lone Escape once its parser's deadline
passes), and ends when input is disabled."""

from __future__ import annotations

import os
import queue
import selectors
import threading
from collections.abc import Iterator
from contextlib import contextmanager

import pytest
from textual import events
from textual.app import App
from textual.drivers.linux_driver import LinuxDriver

from abtui.ui.render import textual_privates as tp
from abtui.ui.render.textual_privates import QuietInputDriver, quiet_driver

pytestmark = pytest.mark.ui


@contextmanager
def _driven(monkeypatch: pytest.MonkeyPatch) -> Iterator[tuple[QuietInputDriver, int,
                                                               queue.Queue[object],
                                                               list[float | None]]]:
    """A driver reading a pipe instead of the terminal, its input thread running: the
    driver, the pipe's write end, the events it delivers, and each wait it asked for."""
    import signal

    handlers = {s: signal.getsignal(s) for s in (signal.SIGTSTP, signal.SIGCONT)}
    read_end, write_end = os.pipe()
    driver = QuietInputDriver(App())
    driver.fileno = read_end
    delivered: queue.Queue[object] = queue.Queue()
    monkeypatch.setattr(driver, "process_message", delivered.put)
    monkeypatch.setattr(driver, "_disable_mouse_support", lambda: None)  # (no terminal)
    waits: list[float | None] = []
    select = selectors.SelectSelector.select

    def counted(self: selectors.SelectSelector, timeout: float | None = None):  # type: ignore[no-untyped-def]
        waits.append(timeout)
        return select(self, timeout)

    monkeypatch.setattr(selectors.SelectSelector, "select", counted)
    thread = threading.Thread(target=driver.run_input_thread, daemon=True)
    driver._key_thread = thread
    thread.start()
    try:
        yield driver, write_end, delivered, waits
    finally:
        if thread.is_alive():
            driver.exit_event.set()
            os.write(write_end, b"x")
            thread.join(5)
        driver.close()
        os.close(read_end)
        os.close(write_end)
        for s, h in handlers.items():
            signal.signal(s, h)


def _key(delivered: queue.Queue[object]) -> str:
    while True:
        event = delivered.get(timeout=10)
        if isinstance(event, events.Key):
            return event.key


async def test_the_input_thread_sleeps_until_input_comes(
        monkeypatch: pytest.MonkeyPatch) -> None:
    """Between keys it waits with no timeout (Textual's looks again every 0.1 s); a key is
    delivered as it comes, and a lone Escape once the parser's deadline has passed. (The
    driver needs a running event loop: the test is async, its waits are the queue's.)"""
    with _driven(monkeypatch) as (_driver, write_end, delivered, waits):
        os.write(write_end, b"a")
        assert _key(delivered) == "a"
        asked = len(waits)
        os.write(write_end, b"b")  # (its wait, asked for after "a", is over)
        assert _key(delivered) == "b"
        assert len(waits) > asked and waits[asked] is None, waits[asked:]
        os.write(write_end, b"\x1b")  # maybe the start of a sequence: a deadline to wait for
        assert _key(delivered) == "escape"
        assert any(w is not None and 0 < w <= 1 for w in waits[asked:]), waits[asked:]


async def test_disabling_input_ends_the_sleeping_input_thread(
        monkeypatch: pytest.MonkeyPatch) -> None:
    """disable_input wakes the thread, which ends (Textual joins it), and empties the pipe
    it was woken through, for an input thread started later (after a suspend)."""
    with _driven(monkeypatch) as (driver, write_end, delivered, _waits):
        os.write(write_end, b"a")
        assert _key(delivered) == "a"
        driver.disable_input()  # (from the main thread, as Textual calls it: it joins)
        assert not driver._key_thread.is_alive()
        with pytest.raises(BlockingIOError):
            os.read(driver._wake_read, 1)


async def test_the_console_runs_on_it_where_textual_would_run_its_linux_driver() -> None:
    """The console's app picks it instead of Textual's Linux driver, no other (what it takes
    from Textual is pinned in test_textual_privates.py)."""
    from textual.drivers.headless_driver import HeadlessDriver

    from abtui.ui.app import AbtuiApp

    tp.reset()
    assert quiet_driver(LinuxDriver) is QuietInputDriver
    assert quiet_driver(HeadlessDriver) is HeadlessDriver
    assert AbtuiApp.get_driver_class is not App.get_driver_class


async def test_without_textual_s_input_parser_it_runs_textual_s_own_input_thread(
        monkeypatch: pytest.MonkeyPatch) -> None:
    """Textual's private input parser gone (a newer Textual): the driver's input thread is
    Textual's own, keys delivered as ever, said once; and Textual's Linux driver is the one
    picked from then on."""
    tp.reset()
    monkeypatch.setitem(tp._found, "XTermParser", None)
    try:
        with _driven(monkeypatch) as (_driver, write_end, delivered, waits):
            os.write(write_end, b"a")
            assert _key(delivered) == "a"
            assert waits and all(w is not None for w in waits)  # (Textual's: 0.1 s each)
        assert "quiet_input" in tp.fallen_back()
        assert quiet_driver(LinuxDriver) is LinuxDriver
    finally:
        monkeypatch.undo()
        tp.reset()
