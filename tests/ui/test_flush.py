"""When the console folds events into the screen: an interval at once while the refresh budget
allows, ping replies with the next flush (or within LAZY_S), a stream that never pauses at
FLUSH_HZ flushes a second; and an interval's latency counts from its line's arrival."""

from __future__ import annotations

import asyncio
import math
import time
from pathlib import Path
from typing import Any

from textual.pilot import Pilot
from textual.screen import Screen

from abtui.core.events import Event, EventKind, LinkBytes
from abtui.measure.replay.synthetic import synthetic_events, synthetic_profile
from abtui.ui.app import AbtuiApp
from abtui.ui.flow.feed import FLUSH_BURST, FLUSH_HZ, LAZY_S
from abtui.ui.render.textual_privates import styles_cache
from abtui.ui.render.widgets import PairPane
from tests.ui.console_kit import FakeClock, SpyController, started, until


def _quiet_app(**kw: object) -> tuple[AbtuiApp, list[Event]]:
    """A console whose controller says nothing by itself, and events to hand it."""
    profile = synthetic_profile(1)
    events = synthetic_events(profile, intervals=40, seed=3)
    app = AbtuiApp(SpyController(profile, [], speed=math.inf), autostart=False, **kw)
    return app, events


def _of(events: list[Event], kind: EventKind) -> list[Event]:
    return [e for e in events if e.kind is kind]


def _two_pairs(clock: FakeClock, **kw: Any) -> tuple[AbtuiApp, list[Event]]:
    """A 2-pair console on `clock` whose controller says nothing by itself, and events."""
    profile = synthetic_profile(2)
    events = synthetic_events(profile, intervals=10, seed=3)
    app = AbtuiApp(SpyController(profile, [], speed=math.inf), autostart=False, clock=clock,
                   **kw)
    return app, events


async def _up_to_the_first_interval(pilot: Pilot[Any], app: AbtuiApp,
                                    events: list[Event]) -> None:
    """The preamble and the run's start shown, nothing pending."""
    await started(pilot)
    for e in events:
        if e.kind is EventKind.INTERVAL:
            break
        app.receive(e)
    await app.settled()


async def test_an_interval_is_timed_from_its_arrival_on_the_ssh_channel(tmp_path: Path) -> None:
    app, events = _quiet_app(bench_file=str(tmp_path / "bench.jsonl"))
    async with app.run_test() as pilot:
        await started(pilot)
        first = _of(events, EventKind.INTERVAL)[0]
        arrived = time.perf_counter() - 5.0  # its line came in 5 s ago (the loop was busy)
        app.receive(Event.of(first.payload, first.t, first.pair, first.host, arrived=arrived))
        await until(pilot, lambda: app.bench.shown_intervals == 1)
        ((_, latency),) = app.bench.latencies
        assert 5.0 <= latency < 60


async def test_ping_replies_wait_for_the_next_flush_and_an_interval_never_does() -> None:
    clock = FakeClock()
    app, events = _quiet_app(clock=clock)
    async with app.run_test() as pilot:
        await started(pilot)
        clock.now += 1.0  # ... and the refresh budget is full again
        pings, intervals = _of(events, EventKind.PING), _of(events, EventKind.INTERVAL)
        app.receive(pings[0])
        assert app.feed.due is not None
        assert app.feed.due - clock.now >= LAZY_S  # the ping waits ...
        assert app.feed.pending  # ... and is not shown yet
        app.receive(intervals[0])
        assert app.feed.due <= clock.now  # the interval goes at once, the ping too
        await until(pilot, lambda: not app.feed.pending)
        assert app.state.pairs["A"].intervals == 1 and app.state.pairs["A"].rtt
        app.receive(intervals[1])  # right after that flush: at once still (a burst)
        assert app.feed.due <= clock.now


async def test_a_data_links_counters_wait_for_the_next_flush() -> None:
    """A LINK_BYTES reading shows nothing itself (what it finds comes as COMPETING): it rides
    on the next flush, never one of its own, and repaints no pane."""
    clock = FakeClock()
    app, _ = _quiet_app(clock=clock)
    async with app.run_test() as pilot:
        await started(pilot)
        await app.settled()
        clock.now += 1.0
        app.receive(Event.of(LinkBytes(run="A-1", device="data0", clock=1.0, tx_bytes=1,
                                       rx_bytes=2, tx_packets=1, rx_packets=1),
                             pair="A", host=app.state.pairs["A"].sender))
        assert app.feed.due is not None and app.feed.due - clock.now >= LAZY_S
        assert app.feed.pending


async def test_the_links_counters_leave_the_refresh_budget_to_the_intervals() -> None:
    """Each sender's counters are read on its run's beat, next to the intervals: flushed at
    once, the two readings and pair A's interval took the 3 flushes of the budget, and pair
    B's interval waited for the next (up to 100 ms, the live console's slow intervals)."""
    clock = FakeClock()
    app, events = _two_pairs(clock)
    async with app.run_test(size=(160, 48)) as pilot:
        await _up_to_the_first_interval(pilot, app, events)
        clock.now += 1.0
        for pair in "AB":
            app.receive(Event.of(LinkBytes(run=f"{pair}-1", device="data0", clock=1.0,
                                           tx_bytes=1, rx_bytes=2, tx_packets=1,
                                           rx_packets=1),
                                 pair=pair, host=app.state.pairs[pair].sender))
            await pilot.pause()
        a, b = (next(e for e in _of(events, EventKind.INTERVAL) if e.pair == p) for p in "AB")
        app.receive(a)
        await until(pilot, lambda: app.state.pairs["A"].intervals == 1)
        clock.now += 0.03
        app.receive(b)
        assert app.feed.due is not None and app.feed.due <= clock.now  # at once


async def test_a_stream_that_never_pauses_is_shown_in_fewer_flushes() -> None:
    """40 intervals a second: FLUSH_HZ flushes a second (after a burst of FLUSH_BURST), each
    showing several intervals, none lost."""
    app, events = _quiet_app()
    async with app.run_test() as pilot:
        await started(pilot)
        flushes = 0
        take = app.feed.take  # once a flush (the flush is the feed's from its making)

        def counted(ready: bool = True) -> list:  # type: ignore[type-arg]
            nonlocal flushes
            flushes += 1
            return take(ready)

        app.feed.take = counted  # type: ignore[method-assign]
        intervals = _of(events, EventKind.INTERVAL)
        t0 = time.perf_counter()
        for ev in intervals:  # 40 intervals, one every 25 ms: 1 s
            app.receive(ev)
            await asyncio.sleep(0.025)
        elapsed = time.perf_counter() - t0
        await until(pilot, lambda: not app.feed.pending)
        assert app.state.pairs["A"].intervals == len(intervals)  # none lost
        assert 2 <= flushes <= FLUSH_BURST + FLUSH_HZ * elapsed + 1, (flushes, elapsed)
        assert flushes < len(intervals) / 2  # each flush showed several


async def test_two_pairs_intervals_ms_apart_show_their_numbers_in_that_burst() -> None:
    """Pair B's interval 10 ms after A's: B's numbers are repainted with its flush (the frame
    that burst makes anyway), not deferred to a frame of their own a throttle window later."""
    clock = FakeClock()
    app, events = _two_pairs(clock)
    async with app.run_test(size=(160, 48)) as pilot:
        await _up_to_the_first_interval(pilot, app, events)
        clock.now += 1.0
        a, b = (next(e for e in _of(events, EventKind.INTERVAL) if e.pair == p) for p in "AB")
        app.receive(a)
        await until(pilot, lambda: app.state.pairs["A"].intervals == 1)
        clock.now += 0.01
        before = app.query_one("#pane-B", PairPane).text("bps-label")
        app.receive(b)
        await until(pilot, lambda: app.state.pairs["B"].intervals == 1)
        assert not app.text_throttle.pending  # nothing left for a frame of its own
        await pilot.pause()
        assert app.query_one("#pane-B", PairPane).text("bps-label") != before  # its numbers


async def test_the_table_is_repainted_with_the_last_pairs_interval_not_the_first() -> None:
    """Pair B's interval 40 ms after A's: A's flush does not repaint the phase table (B's
    number is not in yet); B's, the last pair's, carries it, so the table shows both in B's
    frame and has no frame of its own. (A flush a second: the repaint's wake-up, TABLE_AFTER
    periods on, is due in 1.5 s of real time, well after B's interval however slow the
    machine.)"""
    clock = FakeClock()
    app, events = _two_pairs(clock, flush_hz=1)
    async with app.run_test(size=(160, 48)) as pilot:
        await _up_to_the_first_interval(pilot, app, events)
        repaints: list[tuple[int, int]] = []
        cells = app.table.refresh_cells

        def counted(*args: object) -> None:
            repaints.append((app.state.pairs["A"].intervals, app.state.pairs["B"].intervals))
            cells(*args)  # type: ignore[arg-type]

        app.table.refresh_cells = counted  # type: ignore[method-assign,assignment]
        clock.now += 1.0
        a, b = (next(e for e in _of(events, EventKind.INTERVAL) if e.pair == p) for p in "AB")
        app.receive(a)
        await until(pilot, lambda: app.state.pairs["A"].intervals == 1)
        assert repaints == []
        clock.now += 0.04
        app.receive(b)
        await until(pilot, lambda: app.state.pairs["B"].intervals == 1)
        assert repaints == [(1, 1)]
        assert not app._table_soon.pending  # no repaint of its own left to come
        clock.now += 1.5
        await pilot.pause()
        assert repaints == [(1, 1)]


async def test_the_table_waits_for_its_timer_while_a_pair_sends_nothing() -> None:
    """Only pair A's intervals come (B idle): the table is repainted TABLE_AFTER flush
    periods after A's flush, as before the last pair's flush carried it."""
    clock = FakeClock()
    app, events = _two_pairs(clock, flush_hz=1)
    async with app.run_test(size=(160, 48)) as pilot:
        await _up_to_the_first_interval(pilot, app, events)
        repaints: list[int] = []
        cells = app.table.refresh_cells

        def counted(*args: object) -> None:
            repaints.append(app.state.pairs["A"].intervals)
            cells(*args)  # type: ignore[arg-type]

        app.table.refresh_cells = counted  # type: ignore[method-assign,assignment]
        clock.now += 1.0
        a = next(e for e in _of(events, EventKind.INTERVAL) if e.pair == "A")
        app.receive(a)
        await until(pilot, lambda: app.state.pairs["A"].intervals == 1)
        assert repaints == []
        assert app._table_soon.pending
        clock.now += 1.5
        await until(pilot, lambda: bool(repaints))
        assert repaints == [1]


async def test_an_interval_is_stamped_shown_after_a_frame_that_drew_it(tmp_path: Path) -> None:
    """The bench's "shown" stamp comes after the frame that drew the interval's pane, never
    before: a callback asked for after a refresh runs on an idle screen at once, which can
    be before the pane's own message pump has asked for its repaint."""
    clock = FakeClock()
    app, events = _two_pairs(clock, bench_file=str(tmp_path / "bench.jsonl"))
    async with app.run_test(size=(160, 48)) as pilot:
        await _up_to_the_first_interval(pilot, app, events)
        pane = app.query_one("#pane-A", PairPane)
        seen: list[tuple[str, int]] = []
        frame = styles_cache(pane)  # draws the pane's rows in each frame (FramedLines)
        render_line, shown = frame.render_line, app.bench.shown

        def drawn(*args: Any):  # type: ignore[no-untyped-def]
            seen.append(("drawn", pane.state.intervals))
            return render_line(*args)

        def stamped(stamps: list[float]) -> None:
            seen.append(("shown", pane.state.intervals))
            shown(stamps)

        frame.render_line = drawn  # type: ignore[method-assign]
        app.bench.shown = stamped  # type: ignore[method-assign]
        intervals = [e for e in _of(events, EventKind.INTERVAL) if e.pair == "A"]
        for k, ev in enumerate(intervals[:5], 1):
            clock.now += 1.0
            app.receive(ev)
            await until(pilot, lambda k=k: ("shown", k) in seen)  # type: ignore[misc]
            first_shown = seen.index(("shown", k))
            runs = [x for i, x in enumerate(seen) if i == 0 or seen[i - 1] != x]
            assert ("drawn", k) in seen[:first_shown], (k, runs)
        assert app.bench.shown_intervals == 5 and len(app.bench.latencies) == 5


async def test_an_interval_whose_pane_is_not_on_screen_is_counted_but_not_timed(
        tmp_path: Path) -> None:
    """Under a screen that hides the panes no frame draws an interval: it is counted shown
    (the 8-pair bench's backlog check counts every one) without a latency, which no frame
    measured."""
    clock = FakeClock()
    app, events = _two_pairs(clock, bench_file=str(tmp_path / "bench.jsonl"))
    async with app.run_test(size=(160, 48)) as pilot:
        await _up_to_the_first_interval(pilot, app, events)
        await app.push_screen(Screen())
        await pilot.pause()
        clock.now += 1.0
        app.receive(_of(events, EventKind.INTERVAL)[0])
        await until(pilot, lambda: app.bench.shown_intervals == 1)
        assert app.bench.hidden == 1 and app.bench.latencies == []


async def test_without_a_bench_file_the_panes_report_no_drawing() -> None:
    app, _ = _quiet_app()
    async with app.run_test() as pilot:
        await started(pilot)
        assert not app.bench.on
        assert all(pane.probe is None for pane in app.query(PairPane))


async def test_an_intervals_chart_is_drawn_without_waiting_for_the_update_timer(
        tmp_path: Path) -> None:
    """The frame that draws an interval's chart comes on the screen's next idle, not on
    Textual's update timer, which ticks on a grid and after a long frame skips to a point one
    to two periods later (8-17 ms at 120 frames a second, on the interval's path). (Waited
    for without the pilot, whose pause draws the screen itself.)"""
    clock = FakeClock()
    app, events = _two_pairs(clock, bench_file=str(tmp_path / "bench.jsonl"))
    async with app.run_test(size=(160, 48)) as pilot:
        await _up_to_the_first_interval(pilot, app, events)
        timer = app.screen._update_timer
        timer.pause()
        timer.resume = lambda: None  # type: ignore[method-assign]  # it never ticks again
        shown, drawn = app.bench.shown, asyncio.Event()

        def stamped(stamps: list[float]) -> None:
            shown(stamps)
            drawn.set()

        app.bench.shown = stamped  # type: ignore[method-assign]
        clock.now += 1.0
        app.receive(_of(events, EventKind.INTERVAL)[0])
        await asyncio.wait_for(drawn.wait(), 10)
        assert len(app.bench.latencies) == 1 and app.bench.hidden == 0


async def test_the_table_s_repaint_is_drawn_without_waiting_for_the_update_timer() -> None:
    """The phase table, repainted at TABLE_HZ at most, is drawn on the screen's next idle
    like a pane: not on Textual's update timer, whose task woke twice for each tick (its
    grid's wait, then the frame). (Waited for without the pilot, whose pause draws the
    screen itself.)"""
    clock = FakeClock()
    app, events = _two_pairs(clock, flush_hz=1)
    async with app.run_test(size=(160, 48)) as pilot:
        await _up_to_the_first_interval(pilot, app, events)
        first = _of(events, EventKind.INTERVAL)[0]
        clock.now += 1.0
        app.receive(first)
        await until(pilot, lambda: app.state.pairs[first.pair].intervals == 1)
        timer = app.screen._update_timer
        timer.pause()
        timer.resume = lambda: None  # type: ignore[method-assign]  # it never ticks again
        repainted, drawn = asyncio.Event(), asyncio.Event()
        cells, frame = app.table.refresh_cells, app.screen._compositor_refresh

        def counted(*args: object) -> None:
            cells(*args)  # type: ignore[arg-type]
            repainted.set()

        def framed() -> None:
            if repainted.is_set() and app.table in app.screen._dirty_widgets:
                drawn.set()
            frame()

        app.table.refresh_cells = counted  # type: ignore[method-assign,assignment]
        app.screen._compositor_refresh = framed  # type: ignore[method-assign]
        clock.now += 1.5  # the table's repaint is due (TABLE_AFTER flush periods on)
        await asyncio.wait_for(repainted.wait(), 10)
        await asyncio.wait_for(drawn.wait(), 10)
        assert app.table not in app.screen._dirty_widgets
