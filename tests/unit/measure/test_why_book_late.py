"""A host folds its profile once its run is over, so its windows reach the why book after the
stretch they belong to has closed, often after the next one opened: each still counts in the
stretch whose span holds its start, never in the one in force when it came."""

from __future__ import annotations

from types import SimpleNamespace

from abtui.core import events
from abtui.core.events import Event
from abtui.core.folded import pack
from abtui.measure.why_book import WhyBook


def _window(start: float, stacks: dict[str, int]) -> Event[events.Profiled]:
    return Event.of(events.Profiled(run="A-1", role="sender", start=start, end=start + 1,
                                    event="cpu-clock", hz=99, samples=sum(stacks.values()),
                                    stacks=pack(stacks), shared=False),
                    t=start + 1, pair="A", host="snd")


def _book() -> tuple[WhyBook, SimpleNamespace]:
    stretches = SimpleNamespace(index=None, held={}, opened=float("-inf"), taken={},
                                spans={})
    book = WhyBook(stretches, {"A": ("on", "off", "off", "on")}, ("on", "off"), 4)  # type: ignore[arg-type]
    return book, stretches


def test_a_late_window_counts_in_the_closed_stretch_its_start_lies_in() -> None:
    book, st = _book()
    st.spans = {0: (100.0, 110.0)}  # stretch 0 closed; stretch 1 in force since 112
    st.index, st.held, st.opened = 1, {"A": "off"}, 112.0
    book(_window(103.0, {"iperfN;tcp_sendmsg": 5}))  # folded after stretch 0's run
    book(_window(113.0, {"iperfN;skb_segment": 2}))  # a window of the stretch in force
    assert book.stacks[("A", "snd")] == {0: {"iperfN;tcp_sendmsg": 5},
                                         1: {"iperfN;skb_segment": 2}}
    assert book.windows == 2


def test_a_window_outside_every_stretch_or_of_another_pair_counts_nowhere() -> None:
    book, st = _book()
    st.spans = {0: (100.0, 110.0)}
    st.index, st.held, st.opened = 1, {"A": "off"}, 112.0
    book(_window(111.0, {"x;y": 1}))  # between the stretches (the switch)
    book(_window(90.0, {"x;y": 1}))  # before the first
    other = _window(103.0, {"x;y": 1})
    other.pair = "B"
    book(other)
    assert book.stacks == {} and book.windows == 0
