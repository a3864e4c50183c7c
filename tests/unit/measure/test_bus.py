"""The engine's event bus (abtui.measure.bus): a subscription is a handle that ends it."""

from __future__ import annotations

from abtui.core.events import Event, Mark
from abtui.measure.bus import EventBus


def mark(text: str) -> Event:
    return Event.of(Mark(text=text))


def test_a_closed_subscription_gets_nothing_more_and_closing_twice_is_harmless():
    bus = EventBus()
    seen: list[str] = []
    handle = bus.subscribe(lambda e: seen.append(e.payload.text))
    bus.emit(mark("one"))
    handle.close()
    handle.close()
    bus.emit(mark("two"))
    assert seen == ["one"] and not handle.active
    with bus.subscribe(lambda e: seen.append("with " + e.payload.text)):
        bus.emit(mark("three"))
    bus.emit(mark("four"))
    assert seen == ["one", "with three"]


def test_unsubscribing_while_an_event_is_delivered_skips_no_other_subscriber():
    bus = EventBus()
    seen: list[str] = []
    handles = []

    def once(e: Event) -> None:
        seen.append("once")
        handles[0].close()

    handles.append(bus.subscribe(once))
    bus.subscribe(lambda e: seen.append("always"))
    bus.emit(mark("a"))
    bus.emit(mark("b"))
    assert seen == ["once", "always", "always"]


def test_the_engine_s_subscribe_returns_the_handle():
    from abtui.measure.engine.front import Engine
    from tests.profiles import profile

    prof = profile()
    engine = Engine(prof, parser_factory=lambda _f: None,  # type: ignore[arg-type,return-value]
                    use_journal=False)
    seen: list[Event] = []
    handle = engine.subscribe(seen.append)
    engine.emit(mark("x"))
    handle.close()
    engine.emit(mark("y"))
    assert [e.payload.text for e in seen] == ["x"]
