"""A streamed command's channel session (abtui.remote.streams.StreamSession), written to
asyncssh's public session API: what a reader gets line by line, what a writer gets packet
by packet, stderr's last lines, the end said once, and the channel paused while a reader
lags (READ_AHEAD) and resumed once it caught up; RemoteProcess's exit status from the
channel."""

from __future__ import annotations

import asyncio
from types import SimpleNamespace

import asyncssh

from abtui.core.model import LinkState
from abtui.remote import streams
from abtui.remote.streams import LineFeed, RemoteProcess, StreamSession, session_class


class _Chan:
    """What a session asks of its SSHClientChannel."""

    def __init__(self, status: int | None = 0) -> None:
        self.calls: list[str] = []
        self.written: list[str] = []
        self.status = status
        self.closed = asyncio.Event()

    def pause_reading(self) -> None:
        self.calls.append("pause")

    def resume_reading(self) -> None:
        self.calls.append("resume")

    def write(self, data: str) -> None:
        self.written.append(data)

    def write_eof(self) -> None:
        self.written.append("<eof>")

    def close(self) -> None:
        self.closed.set()

    async def wait_closed(self) -> None:
        await self.closed.wait()

    def get_exit_status(self) -> int | None:
        return self.status


def _session(chan: _Chan | None = None, stderr_lines: int = 3) -> StreamSession:
    session = session_class()(stderr_lines)
    assert isinstance(session, asyncssh.SSHClientSession)  # asyncssh's defaults beneath
    session.connection_made(chan or _Chan())
    return session


async def test_a_reader_gets_each_line_then_the_partial_last_one_then_the_end() -> None:
    s = _session()
    s.data_received("__PGID__ 42\none\ntw", None)
    assert await s.readline() == "__PGID__ 42\n"
    s.data_received("o\nthree\nno end", None)
    assert await s.read_lines() == ["one", "two", "three"]
    waiting = asyncio.ensure_future(s.read_lines())
    await asyncio.sleep(0)
    assert not waiting.done()  # a partial line is not a line until the end
    s.eof_received()
    assert await waiting == ["no end"]
    assert await s.read_lines() == [] and await s.readline() == ""


async def test_a_writer_gets_what_came_before_then_each_packet_from_the_callback() -> None:
    s = _session()
    s.data_received("before\n", None)
    calls: list[list[str]] = []
    feed = LineFeed(calls.append)
    s.hand_to(feed)
    assert calls == [["before"]]
    s.data_received("a\nb\nc", None)
    assert calls == [["before"], ["a", "b"]]  # in the callback itself: no task between
    s.connection_lost(asyncssh.ConnectionLost("gone"))  # a lost link: the end, no error
    assert calls[-1] == ["c"] and feed.ended.done() and feed.ended.result() is None


async def test_a_writer_set_after_the_end_gets_the_rest_and_the_end() -> None:
    s = _session()
    s.data_received("last", None)
    s.eof_received()
    calls: list[list[str]] = []
    feed = LineFeed(calls.append)
    s.hand_to(feed)
    assert calls == [["last"]] and feed.ended.done()


async def test_stderr_keeps_its_last_lines_and_the_partial_one_at_the_end() -> None:
    s = _session(stderr_lines=2)
    s.data_received("e1\ne2\ne3\npart", asyncssh.EXTENDED_DATA_STDERR)
    s.data_received("out\n", None)
    assert list(s.stderr) == ["e2", "e3"]
    s.eof_received()
    assert list(s.stderr) == ["e3", "part"]
    assert await s.readline() == "out\n"  # stdout untouched by stderr


async def test_a_lagging_reader_pauses_the_channel_until_it_caught_up(monkeypatch) -> None:
    monkeypatch.setattr(streams, "READ_AHEAD", 10)
    chan = _Chan()
    s = _session(chan)
    s.data_received("12345\n", None)
    assert chan.calls == []
    s.data_received("67890\nabc\n", None)  # 16 characters not read: paused, once
    s.data_received("d\n", None)
    assert chan.calls == ["pause"]
    assert await s.readline() == "12345\n"
    assert chan.calls == ["pause"]  # 12 still waiting, over half of READ_AHEAD
    assert await s.read_lines() == ["67890", "abc", "d"]
    assert chan.calls == ["pause", "resume"]


async def test_a_remote_process_reads_its_group_streams_and_says_its_status() -> None:
    chan = _Chan(status=3)
    s = _session(chan)
    link = SimpleNamespace(alias="h", state=LinkState.CLOSED)
    rp = RemoteProcess(link, chan, s, "cmd")
    s.data_received(f"{streams.PGID_MARK} 4242\nx\ny\n", None)
    await rp._read_pgid()
    assert rp.pgid == 4242
    s.data_received("z", None)
    s.eof_received()
    assert [line async for line in rp.lines()] == ["x", "y", "z"]
    rp.write("in")
    rp.close_stdin()
    assert chan.written == ["in", "<eof>"]
    chan.close()
    assert await rp.wait(1.0) == 3
    chan.status = -1  # ended by a signal
    assert await rp.wait(1.0) is None


async def test_a_wait_that_times_out_says_no_status() -> None:
    chan = _Chan(status=None)
    rp = RemoteProcess(SimpleNamespace(alias="h", state=LinkState.CLOSED), chan,
                       _session(chan), "cmd")
    assert await rp.wait(0.05) is None
    await rp.terminate(0.1)
    assert chan.closed.is_set()
