"""The engine's event fan-out: every part emits through one bus, every viewer subscribes.

A subscription is a handle: closing it (or leaving its `with` block) stops the callback's
events, so a viewer that goes away (a console screen, a test) leaves nothing behind. Events
reach the callbacks in order, on the event loop's thread; a callback that subscribes or
unsubscribes while an event is delivered takes effect from the next event.
"""

from __future__ import annotations

from collections.abc import Callable
from types import TracebackType

from abtui.core.events import AnyEvent

Callback = Callable[[AnyEvent], None]


class Subscription:
    """One callback's subscription; `close()` ends it (a second close does nothing)."""

    def __init__(self, subscribers: list[Callback], callback: Callback) -> None:
        self._subscribers = subscribers
        self._callback: Callback | None = callback
        subscribers.append(callback)

    @property
    def active(self) -> bool:
        return self._callback is not None

    def close(self) -> None:
        if self._callback is not None:
            self._subscribers.remove(self._callback)
            self._callback = None

    def __enter__(self) -> Subscription:
        return self

    def __exit__(self, kind: type[BaseException] | None, exc: BaseException | None,
                 tb: TracebackType | None) -> None:
        self.close()


class EventBus:
    """Fans each event out to the subscribers of the moment, in subscription order."""

    def __init__(self) -> None:
        self._subscribers: list[Callback] = []

    def subscribe(self, callback: Callback) -> Subscription:
        return Subscription(self._subscribers, callback)

    def emit(self, event: AnyEvent) -> None:
        for callback in tuple(self._subscribers):
            callback(event)
