"""What the console's flow helpers tell the screen: typed Textual messages, posted from a key's
action or a worker (a thread's too) and handled with `@on` by the app, which hands them to the
render wing's widgets; so no helper holds the app, queries a widget, pushes a screen or exits."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from textual.message import Message
from textual.screen import Screen

from abtui.core.controller import Mode

Post = Callable[[Message], object]  # a message handed to the app (its post_message)
RunWorker = Callable[..., object]  # a coroutine or function run as the app's worker


class Said(Message):
    """A line for the event log."""

    def __init__(self, line: str) -> None:
        super().__init__()
        self.line = line


class Failed(Message):
    """A call failed: said in the log and a notification, and in the panes of `pairs`."""

    def __init__(self, text: str, pairs: list[str] | None = None) -> None:
        super().__init__()
        self.text = text
        self.pairs = list(pairs or [])


class Started(Message):
    """The controller is about to start in `mode`: the last plan's progress is gone."""

    def __init__(self, mode: Mode) -> None:
        super().__init__()
        self.mode = mode


class KnobSet(Message):
    """A knob's change went through on `pairs`: their panes' last error goes."""

    def __init__(self, pairs: list[str]) -> None:
        super().__init__()
        self.pairs = list(pairs)


class Done(Message):
    """What a dialog did: said in the log and a notification."""

    def __init__(self, line: str) -> None:
        super().__init__()
        self.line = line


class Notice(Message):
    """A passing notification (a key's refusal, a setting's new value), not in the log."""

    def __init__(self, text: str, *, warning: bool = False,
                 timeout: float | None = None) -> None:
        super().__init__()
        self.text = text
        self.warning = warning
        self.timeout = timeout


class VerdictsShown(Message):
    """The verdict panel's lines (an alternation's or a bisection's; None: the panel
    hidden), `ended` once what they judge has ended; the render wing draws them."""

    def __init__(self, lines: list[str] | None, ended: bool = False) -> None:
        super().__init__()
        self.lines = None if lines is None else list(lines)
        self.ended = ended


class ShowScreen(Message):
    """A dialog or screen to show over the console; `chosen` is given what it returns."""

    def __init__(self, screen: Screen[Any],
                 chosen: Callable[[Any], None] | None = None) -> None:
        super().__init__()
        self.screen = screen
        self.chosen = chosen


class Leave(Message):
    """The console ends with `code` (the hosts restored, or a second ctrl+q forcing out)."""

    def __init__(self, code: int) -> None:
        super().__init__()
        self.code = code
