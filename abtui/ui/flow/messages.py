"""What the console's workers tell the screen: typed Textual messages, posted from a worker
and handled with `@on` by the app, so no helper holds the app to write to it."""

from __future__ import annotations

from textual.message import Message

from abtui.core.controller import Mode


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
