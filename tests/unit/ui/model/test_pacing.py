"""The console's one scheduler (abtui.ui.model.pacing), driven by a test clock and a test queue."""

from __future__ import annotations

import asyncio
from collections.abc import Callable

from abtui.ui.model.pacing import STALE_S, Scheduler, Throttle


class Queue:
    """The app's call_later: callbacks kept until the test runs them (or drops them)."""

    def __init__(self) -> None:
        self.calls: list[Callable[[], None]] = []
        self.closing = False
        self.posted = asyncio.Event()

    def __call__(self, fn: Callable[[], None]) -> bool:
        if self.closing:
            return False
        self.calls.append(fn)
        self.posted.set()
        return True

    def run(self) -> None:
        calls, self.calls = self.calls, []
        for fn in calls:
            fn()


class Clock:
    def __init__(self) -> None:
        self.now = 100.0

    def __call__(self) -> float:
        return self.now


async def test_a_lost_wakeup_is_scheduled_again_once_stale() -> None:
    queue, clock, ran = Queue(), Clock(), []
    w = Scheduler(queue, clock).wakeup(lambda: ran.append(clock.now))
    w.at(clock.now)
    queue.calls.clear()  # the posted call is lost
    w.at(clock.now + 0.1)
    assert not queue.calls  # a call no later is on its way: kept
    clock.now += STALE_S + 0.1
    w.at(clock.now)  # ... but it is overdue: taken as lost, posted again
    queue.run()
    assert ran == [clock.now] and not w.pending


async def test_a_cancelled_call_already_posted_does_nothing() -> None:
    queue, clock, ran = Queue(), Clock(), []
    w = Scheduler(queue, clock).wakeup(lambda: ran.append(1))
    w.at(clock.now)
    w.cancel()
    w.at(clock.now)
    queue.run()  # two posted calls: only the live one runs
    assert ran == [1]


async def test_a_closing_app_leaves_nothing_pending() -> None:
    queue, clock = Queue(), Clock()
    s = Scheduler(queue, clock)
    w = s.wakeup(lambda: None)
    queue.closing = True
    w.at(clock.now)
    assert not w.pending and not s.busy


async def test_until_wakes_when_a_wakeup_runs_not_on_a_poll() -> None:
    queue, clock = Queue(), Clock()
    s = Scheduler(queue, clock)
    done: list[int] = []
    w = s.wakeup(lambda: done.append(1))
    w.at(clock.now)
    waiter = asyncio.create_task(s.until(lambda: bool(done)))
    await asyncio.sleep(0)
    assert not waiter.done()
    queue.run()
    await asyncio.wait_for(waiter, 1.0)


async def test_a_throttle_runs_at_most_once_a_period_and_the_last_call_shows() -> None:
    queue, clock, ran = Queue(), Clock(), []
    t = Throttle(Scheduler(queue, clock), 2, lambda: ran.append(clock.now))
    t()
    t()
    t()
    assert ran == [100.0] and t.pending  # the later calls wait for the window's end
    clock.now += 0.5
    await asyncio.wait_for(queue.posted.wait(), 5.0)  # asyncio's timer posted the call
    queue.run()
    assert ran == [100.0, 100.5] and not t.pending


async def test_a_throttle_with_slack_rides_on_the_next_call_instead_of_a_call_of_its_own(
) -> None:
    """The console's numbers and table (slack: a flush's period) are repainted by a flush
    while flushes keep coming, so they share its frame; the deferred run comes only when
    none does, `slack` past the window's end."""
    queue, clock, ran = Queue(), Clock(), []
    t = Throttle(Scheduler(queue, clock), 5, lambda: ran.append(round(clock.now, 3)),
                 slack=0.1)
    t()  # runs: at 100.0
    clock.now += 0.01
    t()  # the same burst (another pair's interval, 10 ms later): its flush's frame shows it
    assert ran == [100.0, 100.01]
    clock.now += 0.09
    t()  # no run left before 100.2 (two spent, refilled at 5 a second): deferred to 100.3
    assert ran == [100.0, 100.01] and t.due is not None and round(t.due, 3) == 100.3
    clock.now += 0.09  # 100.19: a flush a little before the window's end runs it
    t()
    assert ran == [100.0, 100.01, 100.19] and not t.pending
    clock.now += 0.06
    t()  # no flush after this one: the deferred run comes at the window's end + slack
    assert t.due is not None and round(t.due, 3) == 100.49
    clock.now = 100.5
    await asyncio.wait_for(queue.posted.wait(), 5.0)
    queue.run()
    assert ran == [100.0, 100.01, 100.19, 100.5]


async def test_a_throttle_with_slack_runs_for_each_pair_of_intervals_tens_of_ms_apart() -> None:
    """Two pairs' intervals at 1 s come 20-55 ms apart, a flush and a frame each: both
    flushes repaint the numbers, none is left for a frame of its own."""
    queue, clock, ran = Queue(), Clock(), []
    t = Throttle(Scheduler(queue, clock), 5, lambda: ran.append(round(clock.now, 3)),
                 slack=0.1)
    for second in range(3):
        clock.now = 100.0 + second
        t()
        clock.now += 0.06  # the other pair's interval
        t()
        assert not t.pending
    assert ran == [100.0, 100.06, 101.0, 101.06, 102.0, 102.06]


async def test_a_throttle_keeps_its_rate_under_a_stream_of_calls() -> None:
    """Flushes at 10 a second (8 pairs at 0.1 s): the numbers are repainted 5 times a
    second over time, the bucket's burst of 2 once."""
    queue, clock, ran = Queue(), Clock(), []
    t = Throttle(Scheduler(queue, clock), 5, lambda: ran.append(round(clock.now, 3)),
                 slack=0.1)
    for k in range(40):
        clock.now = 100.0 + k / 10
        t()
    assert len(ran) <= 2 + 5 * 3.9 and len(ran) >= 5 * 3.9


async def test_a_throttle_of_one_run_a_burst_rides_on_the_next_bursts_flush() -> None:
    """The phase table (burst 1, lazy 1 s): repainted in the first flush of each second's
    burst only, the second pair's interval carried by the next second's first flush; with
    no flush after it, the deferred run comes `lazy` past the moment a run is available."""
    queue, clock, ran = Queue(), Clock(), []
    t = Throttle(Scheduler(queue, clock), 2, lambda: ran.append(round(clock.now, 3)),
                 slack=0.1, burst=1, lazy=1.0)
    for second in range(3):
        clock.now = 100.0 + second
        t()
        clock.now += 0.04  # the other pair's interval: not a run of its own
        t()
    assert ran == [100.0, 101.0, 102.0]
    assert t.due is not None and round(t.due, 3) == 103.5
