"""A streamed command's stdout handed on from the SSH channel's own callback
(abtui.remote.streams.LineFeed, set on the channel's session: asyncssh's public
SSHClientSession, as abtui.remote.streams.StreamSession is): every line one packet
carried in one call, no task woken for it, and the end of the stream kept as `lines` had it."""

from __future__ import annotations

import asyncio
import time
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import asyncssh

from abtui.core.events import Event, EventKind
from abtui.core.model import LinkState
from abtui.measure.run.context import RunContext, RunParsers, RunSpec
from abtui.measure.run.cpu import CpuSampler
from abtui.measure.run.sampling import RunSamplers
from abtui.parse import PingParser
from abtui.remote.iperf_cmd import ARMED_MARK
from abtui.remote.lines import OutputLines
from abtui.remote.streams import LineFeed, StreamSession, session_class
from tests.unit.measure.run.fake_feed import Follows
from tests.unit.measure.run.owner import Owner

PING = Path(__file__).parents[3] / "fixtures" / "ping" / "iputils.txt"


def _process() -> StreamSession:
    """A stream's session, its channel's data dispatched to it as a channel would."""
    session = session_class()(10)
    assert isinstance(session, asyncssh.SSHClientSession)
    return session


def _fed(proc: StreamSession, calls: list[list[str]]) -> LineFeed:
    feed = LineFeed(calls.append)
    proc.hand_to(feed)
    return feed


async def test_every_line_of_a_packet_in_one_call() -> None:
    proc, calls = _process(), []  # type: ignore[var-annotated]
    proc.data_received("before the feed\n", None)  # buffered, handed on when it is set
    feed = _fed(proc, calls)
    proc.data_received("one\ntwo\nthr", None)
    proc.data_received("ee\n", None)
    proc.data_received("no end", None)
    assert calls == [["before the feed"], ["one", "two"], ["three"]]
    assert not feed.ended.done()
    proc.eof_received()
    assert calls[-1] == ["no end"] and feed.ended.done() and feed.ended.result() is None


async def test_a_lost_link_ends_the_stream_without_an_error() -> None:
    proc, calls = _process(), []  # type: ignore[var-annotated]
    feed = _fed(proc, calls)
    proc.data_received("a\n", None)
    proc.connection_lost(asyncssh.ConnectionLost("gone"))
    assert calls == [["a"]] and feed.ended.done() and feed.ended.result() is None


async def test_what_the_handler_raises_goes_to_the_awaiter_not_to_asyncssh() -> None:
    def handle(lines: list[str]) -> None:
        raise ValueError(lines[0])

    proc = _process()
    feed = LineFeed(handle)
    proc.hand_to(feed)
    proc.data_received("bad\n", None)  # raises nothing here
    proc.data_received("later\n", None)
    try:
        await feed.ended
    except ValueError as exc:
        assert str(exc) == "bad"
    else:
        raise AssertionError("the handler's error was lost")


async def test_after_stop_lines_are_drained_and_dropped() -> None:
    proc, calls = _process(), []  # type: ignore[var-annotated]
    feed = _fed(proc, calls)
    feed.stop()
    proc.data_received("dropped\n", None)
    assert calls == [] and feed.ended.done()


class _Feeding(Follows):
    """A RemoteProcess whose stdout is a real asyncssh process's channel data."""

    def __init__(self) -> None:
        self.proc = _process()
        self.link = SimpleNamespace(alias="s", state=LinkState.CONNECTED)

    def feed(self, handle: Any) -> LineFeed:
        feed = LineFeed(handle)
        self.proc.hand_to(feed)
        return feed


async def test_output_lines_queue_a_packet_with_one_arrival_time() -> None:
    fake = _Feeding()
    lines = OutputLines(fake)  # type: ignore[arg-type]
    t0 = time.perf_counter()
    fake.proc.data_received("a\nb\n", None)
    assert lines.queue.qsize() == 2  # queued by the channel's callback, no task in between
    assert await lines.get(1.0) == "a"
    first = lines.arrived
    assert await lines.get(1.0) == "b" and lines.arrived == first
    assert first is not None and t0 <= first <= time.perf_counter()
    fake.proc.eof_received()
    assert await lines.get(1.0) is None


async def test_output_lines_cancelled_end_with_none() -> None:
    lines = OutputLines(_Feeding())  # type: ignore[arg-type]
    await asyncio.sleep(0)
    lines.task.cancel()
    assert await lines.get(1.0) is None


async def test_ping_replies_become_events_as_their_packet_arrives() -> None:
    """Each reply is an event in the phase of the moment its packet came, emitted from the
    channel's callback itself: no task wakes per reply."""
    got: list[Event] = []
    phases: list[float] = []

    def phase_for(_label: str, received: float, _d: float) -> tuple[int, bool]:
        phases.append(received)
        return (len(phases), False)

    from abtui.core.model import Pair, TestOptions
    spec = RunSpec(run_id="A-1", pair=Pair("A", "s", "r", "t"), options=TestOptions(),
                   target="t", seconds=10, port=5201)
    link = SimpleNamespace(alias="s", state=LinkState.CONNECTED)
    ctx = RunContext(spec, link, link, Owner(got.append, phase_for),  # type: ignore[arg-type]
                     RunParsers(lambda _f: None, PingParser))  # type: ignore[arg-type,return-value]
    samplers = RunSamplers(ctx, CpuSampler)
    fake = _Feeding()
    samplers.start(fake, [])  # type: ignore[arg-type]
    await asyncio.sleep(0)  # the ping's task has set its feed
    text = PING.read_text().splitlines()
    fake.proc.data_received(f"{ARMED_MARK}\n1700000000.000001\n{text[0]}\n", None)
    assert got == []
    fake.proc.data_received(text[1] + "\n", None)
    assert [e.kind for e in got] == [EventKind.PING] and got[0].payload.phase == 1
    fake.proc.data_received(text[2] + "\n" + text[3] + "\n", None)  # two in one packet
    assert [e.payload.seq for e in got] == [1, 2, 3] and [e.payload.phase for e in got] == \
        [1, 2, 3]
    fake.proc.data_received("\n".join(text[4:]) + "\n", None)
    fake.proc.eof_received()
    outcome = await asyncio.wait_for(samplers._ping_task, 1.0)  # type: ignore[arg-type]
    assert outcome.summary is not None and outcome.summary.sent == 5 and len(got) == 5
