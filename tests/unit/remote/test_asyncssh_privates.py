"""abtui.remote.asyncssh_privates is the one place that uses asyncssh's undocumented API: what
it names is in the installed asyncssh with the parameters it passes, nothing else in abtui
calls it, and without it a streamed command's lines still arrive (a task reading stdout)."""

from __future__ import annotations

import asyncio
import re
from collections.abc import Iterator
from pathlib import Path

import asyncssh
import pytest

from abtui.remote import asyncssh_privates as ap
from abtui.remote.streams import LineFeed

ABTUI = Path(__file__).resolve().parents[3] / "abtui"


@pytest.fixture(autouse=True)
def _fence() -> Iterator[None]:
    ap.reset()
    yield
    ap.reset()


def test_the_asyncssh_privates_used_are_there_with_their_parameters() -> None:
    """An upgrade of asyncssh that moves one fails here, by name; and the check can fail."""
    assert ap.missing() == []
    assert ap.missing(object) == ["SSHClientProcess.set_writer",
                                  "SSHClientProcess.feed_recv_buf"]

    class Changed:
        def set_writer(self, writer: object) -> None: ...

        def feed_recv_buf(self, datatype: object, writer: object) -> None: ...

    assert ap.missing(Changed) == ["SSHClientProcess.set_writer('self', 'writer')"]


def test_nothing_else_in_abtui_calls_them() -> None:
    names = "|".join(name for name, _ in ap.PRIVATES)
    pattern = re.compile(rf"\.(?:{names})\(")
    found = [str(path.relative_to(ABTUI)) for path in ABTUI.rglob("*.py")
             if path.name != "asyncssh_privates.py" and pattern.search(path.read_text())]
    assert found == []


class _Channel:
    """What a client process asks of its SSH channel when it opens (asyncssh's
    SSHClientChannel answers these): a str session, stdout and stderr to read."""

    def get_connection(self) -> None:
        return None

    def get_encoding(self) -> tuple[str, str]:
        return "utf-8", "strict"

    def get_loop(self) -> asyncio.AbstractEventLoop:
        return asyncio.get_running_loop()

    def get_recv_window(self) -> int:
        return 2 * 1024 * 1024

    def get_read_datatypes(self) -> set[int | None]:
        return {None, asyncssh.EXTENDED_DATA_STDERR}

    def get_write_datatypes(self) -> set[int | None]:
        return {None}


def _process(cls: type = asyncssh.SSHClientProcess) -> asyncssh.SSHClientProcess[str]:
    """asyncssh's own client process, opened on a channel (its stdout a reader), the
    channel's data dispatched to it as a channel would."""
    proc: asyncssh.SSHClientProcess[str] = cls()
    proc.connection_made(_Channel())  # type: ignore[arg-type]
    proc.session_started()
    return proc


async def _streamed(proc: asyncssh.SSHClientProcess[str]) -> list[list[str]]:
    calls: list[list[str]] = []
    proc.data_received("before the feed\n", None)  # buffered: handed on first
    feed = LineFeed(calls.append)
    ap.hand_output(proc, feed)
    for data in ("one\ntwo\nthr", "ee\n", "no end"):
        await asyncio.sleep(0)
        proc.data_received(data, None)
    await asyncio.sleep(0)
    proc.eof_received()
    await asyncio.wait_for(feed.until_end(), 5)
    return calls


async def test_the_private_way_hands_each_packet_on_from_asyncssh_s_callback() -> None:
    calls = await _streamed(_process())
    assert calls == [["before the feed"], ["one", "two"], ["three"], ["no end"]]
    assert ap.fallen_back() is None


@pytest.mark.parametrize("gone", ["set_writer", "feed_recv_buf"])
async def test_without_a_private_the_lines_arrive_the_public_way(
        gone: str, monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture) -> None:
    """A private gone (renamed, as a newer asyncssh might): the stream's lines all arrive,
    through a task reading stdout, the same lines (packets may come together), said once."""
    monkeypatch.setattr(ap, "PRIVATES", tuple((n + "_gone" if n == gone else n, p)
                                              for n, p in ap.PRIVATES))
    lines = [line for call in await _streamed(_process()) for line in call]
    assert lines == ["before the feed", "one", "two", "three", "no end"]
    assert gone in (ap.fallen_back() or "")
    lines = [line for call in await _streamed(_process()) for line in call]
    assert lines == ["before the feed", "one", "two", "three", "no end"]
    assert len([r for r in caplog.records if "public way" in r.getMessage()]) == 1


async def test_a_private_of_another_shape_at_its_first_use_goes_the_public_way(
        monkeypatch: pytest.MonkeyPatch) -> None:
    """feed_recv_buf raising TypeError (its parameters checked, its behaviour changed): the
    stream goes the public way from its first use."""
    class Changed(asyncssh.SSHClientProcess):  # type: ignore[type-arg]
        def feed_recv_buf(self, datatype: object, writer: object) -> None:
            raise TypeError("changed")

    proc = _process(Changed)
    calls: list[list[str]] = []
    feed = LineFeed(calls.append)
    ap.hand_output(proc, feed)
    assert "TypeError" in (ap.fallen_back() or "")
    proc.clear_writer(None)  # (what the private way had set before it failed)
    proc.data_received("a\n", None)
    await asyncio.sleep(0)
    proc.data_received("b", None)
    proc.eof_received()
    await asyncio.wait_for(feed.until_end(), 5)
    assert [line for call in calls for line in call] == ["a", "b"]
