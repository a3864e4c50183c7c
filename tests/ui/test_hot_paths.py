"""The two hot paths, counted (docs/architecture.md walks both with these counts): a knob's
flip from the console's key to the command that sets the value on a host, and an interval
from its iperf3 line read off the SSH stream to the pane's repaint request. The console runs
headless on the engine itself (its session, its knob changer, the knob layer over fake
links; its run scheduler as a run's owner, the real text parser), and every call on the way
is recorded: the frames inside the abtui package on the stack when the command is handed to
the link (the repaint asked of the screen), joined across the tasks the way goes through
(a task's frames, then those that made it) and across the console's one deferral (the
flush: the frames that posted it, then those that ran it). Each count is the abtui functions
entered from the first (the key's action, the reader that got the line) to the last (the
one that hands the command to the link, the one that asks for the repaint), both included.

A relay put back on either way (a forwarder, the app receiving an event before its feed, a
lambda around a call) adds a frame and fails here; so does docs/architecture.md's walk of
either way once it no longer names the functions recorded, in their order, and their count."""

from __future__ import annotations

import asyncio
import re
import sys
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from types import FrameType, SimpleNamespace
from typing import Any

import pytest

import abtui
from abtui.core.model import Knob, KnobKind, LinkState, Pair, Profile, Scope
from abtui.hosts.applier import HostKnobs
from abtui.measure.engine.front import Engine
from abtui.measure.run.context import RunContext, RunParsers, RunSpec
from abtui.measure.run.reader import IntervalReader
from abtui.measure.session import ControllerSession
from abtui.remote.lines import OutputLines
from abtui.remote.streams import LineFeed
from abtui.ui.app import AbtuiApp
from abtui.ui.render import widgets
from tests.ui.console_kit import until
from tests.unit.hosts.fake_hosts import FakeDialect, FakeLink

pytestmark = pytest.mark.ui

FLIP_HOPS = 8  # the targets (issue #50): a flip, key to command ...
INTERVAL_CALLS = 12  # ... an interval, line to repaint
ABTUI = str(Path(abtui.__file__).parent)
KNOB = Knob(name="x", kind=KnobKind.SYSCTL, key="net.x", values=("1", "2"),
            scope=Scope.RECEIVER)
PAIR = Pair(label="A", sender="s", receiver="r", target="198.18.1.2")
READ = "reader.IntervalReader.read_client"  # where the line is read off the stream
# one iperf3 -i 1 client line (text mode): the reader makes it an interval
LINE = "[  5]   0.00-1.00   sec   112 MBytes   941 Mbits/sec    0    512 KBytes"


def _walked(start: str) -> tuple[int, list[str]]:
    """docs/architecture.md's count of the way that starts at `start`, and the functions it
    names on it, in order."""
    doc = (Path(ABTUI).parent / "docs" / "architecture.md").read_text(encoding="utf-8")
    for para in doc.split("\n\n"):
        if para.startswith("Counted (`tests/ui/test_hot_paths.py`") and f"`{start}`" in para:
            count = re.search(r"\*\*(\d+) calls\*\*", para)
            assert count is not None, para
            names = re.findall(r"`([A-Z]\w*\.\w+)`", para)
            return int(count.group(1)), names[names.index(start):]
    raise AssertionError(f"docs/architecture.md walks no way from {start}")


def _checked_against_the_docs(way: list[str]) -> None:
    """The docs' walk is the way recorded: its count, and each function in its order."""
    names = [w.split(".", 1)[1] for w in way]  # (module.Class.method -> Class.method)
    count, walked = _walked(names[0])
    assert count == len(way) and walked[:len(names)] == names, (count, walked, names)


def _ours(frame: FrameType) -> bool:
    return frame.f_code.co_filename.startswith(ABTUI)


def _stack(frame: FrameType | None) -> list[str]:
    """The abtui functions on the stack from `frame` outwards, innermost first."""
    out = []
    while frame is not None:
        if _ours(frame):
            out.append(f"{Path(frame.f_code.co_filename).stem}.{frame.f_code.co_qualname}")
        frame = frame.f_back
    return out


class Calls:
    """Every task's maker recorded (the loop's task factory): a task's frames are followed
    by those of the code that made it, so a way through several tasks reads as one."""

    def __init__(self) -> None:
        self.made: dict[asyncio.Task[Any], tuple[asyncio.Task[Any] | None, list[str]]] = {}

    def factory(self, loop: asyncio.AbstractEventLoop, coro: Any,
                **kw: Any) -> asyncio.Task[Any]:
        task = asyncio.Task(coro, loop=loop, **kw)
        self.made[task] = (asyncio.current_task(loop), _stack(sys._getframe(1)))
        return task

    def chain(self, frame: FrameType | None) -> list[str]:
        """The abtui functions from `frame` back through every task's maker, innermost
        first."""
        out = _stack(frame)
        task = asyncio.current_task()
        while task in self.made:
            task, made_by = self.made[task]
            out += made_by
        return out

    @contextmanager
    def recording(self) -> Iterator[None]:
        loop = asyncio.get_running_loop()
        before = loop.get_task_factory()
        loop.set_task_factory(self.factory)  # type: ignore[arg-type]
        try:
            yield
        finally:
            loop.set_task_factory(before)


def _from(chain: list[str], first: str) -> list[str]:
    """The way from `first` (outermost) to the innermost call, in calling order."""
    way = list(reversed(chain))
    assert first in way, way
    return way[way.index(first):]


def _engine() -> tuple[Engine, dict[str, FakeLink], list[tuple[str, str]]]:
    """The engine on fake hosts: links whose settings are a dict, the knob layer over them
    (as `connect` makes it), nothing connected over SSH."""
    profile = Profile(name="hot", knobs=[KNOB], pairs=[PAIR])
    engine = Engine(profile, use_journal=False)
    sent: list[tuple[str, str]] = []
    links = {a: FakeLink(a, sent) for a in ("s", "r")}
    for link in links.values():
        link.state = LinkState.CONNECTED  # type: ignore[attr-defined]
    dialects = dict.fromkeys(links, FakeDialect())
    engine.hosts.links = links  # type: ignore[assignment]
    engine.hosts.dialects = dialects  # type: ignore[assignment]
    engine.knobs.use(HostKnobs(profile, links, dialects, engine.emit))  # type: ignore[arg-type]
    return engine, links, sent


async def test_a_flip_goes_from_its_key_to_the_host_in_at_most_8_calls(
        monkeypatch: pytest.MonkeyPatch) -> None:
    engine, links, _sent = _engine()
    calls, ways = Calls(), []
    run = FakeLink.run

    async def recorded(self: FakeLink, command: str, *args: Any, **kw: Any) -> Any:
        if command.startswith("swap"):  # the command that sets the value
            ways.append(calls.chain(sys._getframe(1)))
        return await run(self, command, *args, **kw)

    monkeypatch.setattr(FakeLink, "run", recorded)
    app = AbtuiApp(ControllerSession(engine), autostart=False, keymap={})
    key = next(k for k, name in app.knob_keys.items() if name == KNOB.name)
    async with app.run_test() as pilot:
        await engine.knobs.read_current()  # the hosts' value, as connecting reads it
        await until(pilot, lambda: app.state.pairs["A"].config.get(KNOB.name) == "1")
        with calls.recording():
            await pilot.press(key)
            await until(pilot, lambda: links["r"].values["net.x"] == "2")
    assert ways, "no command set the value"
    way = _from(ways[0], "main_screen.MainScreen.action_knob")
    # the key's action, the knob's next value, the change as a task of its own, the engine's
    # one knob entry point, the knob layer, the host's command: 8
    print(f"a flip: {len(way)} calls", *way, sep="\n  ")
    assert len(way) <= FLIP_HOPS, "\n".join(way)
    assert way[-1] == "knobs.KnobManager.swap"  # (the one that hands it to the link)
    _checked_against_the_docs(way)
    assert "measure.session" not in " ".join(way) and "DeferredEngine" not in " ".join(way)


class _Stream:
    """A streamed process whose stdout the test writes as the SSH channel would."""

    def __init__(self) -> None:
        self.channel: LineFeed | None = None
        self.link = SimpleNamespace(alias="s", state=LinkState.CONNECTED)

    def feed(self, handle: Callable[[list[str]], None]) -> LineFeed:
        self.channel = LineFeed(handle)
        return self.channel


async def test_an_interval_goes_from_its_line_to_the_pane_in_at_most_12_calls(
        monkeypatch: pytest.MonkeyPatch) -> None:
    engine, _links, _sent = _engine()
    app = AbtuiApp(ControllerSession(engine), autostart=False, keymap={})
    posted: dict[int, list[str]] = {}  # the deferred call -> the way that posted it
    ways: list[list[str]] = []
    calls = Calls()

    def repaint_rows(widget: Any, spans: Any) -> None:  # the pane asks for its repaint
        frame = sys._getframe(1)
        running = next((f for f in _frames(frame) if f.f_code.co_name == "_fire"), None)
        before = posted.get(id(running.f_locals["self"])) if running else None
        ways.append(calls.chain(frame) + (before or []))

    monkeypatch.setattr(widgets, "repaint_rows", repaint_rows)
    async with app.run_test() as pilot:
        await pilot.pause()
        post = app.scheduler.post

        def posting(call: Callable[[], None]) -> object:  # the one deferral: the flush
            wakeup = getattr(call, "func", None)
            if wakeup is not None:  # a wake-up's call: the way that asked for it
                posted[id(wakeup.__self__)] = calls.chain(sys._getframe(1))
            return post(call)

        app.scheduler.post = posting  # type: ignore[method-assign]
        spec = RunSpec(run_id="A-1", pair=PAIR, options=engine.book.options(PAIR),
                       target=PAIR.target, seconds=10, port=5201)
        ctx = RunContext(spec, _links["s"], _links["r"], engine.runs,  # type: ignore[arg-type]
                         RunParsers(engine.runs.parser_factory))
        stream = _Stream()
        lines = OutputLines(stream)  # type: ignore[arg-type]
        reader = IntervalReader(ctx)
        with calls.recording():
            reading = asyncio.get_running_loop().create_task(reader.read_client(lines))
            assert stream.channel is not None
            stream.channel.write(LINE + "\n")  # the SSH channel's data, as asyncssh hands it
            await until(pilot, lambda: any(READ in w for w in ways))
            stream.channel.write_eof()
            await reading
    assert reader.count == 1
    way = _from(next(w for w in ways if READ in w), READ)  # (others: the screen's own)
    print(f"an interval: {len(way)} calls", *way, sep="\n  ")
    assert len(way) <= INTERVAL_CALLS, "\n".join(way)
    assert way[-1] == "widgets.PairPane._flush"  # (the one that asks for the repaint)
    _checked_against_the_docs(way)
    # the event goes from the engine's bus to the console's feed, never back to the app
    # first: the app is entered once, by the flush
    # first, then entered once, by the flush the feed was given when it was made
    app_at = [i for i, f in enumerate(way) if f.startswith("app.")]
    assert app_at and app_at[0] > way.index("feed.EventFeed.receive"), way
    assert way[app_at[0]] == "app.AbtuiApp._flush_events"
    assert app_at == list(range(app_at[0], app_at[0] + len(app_at))), way


def _frames(frame: FrameType | None) -> Iterator[FrameType]:
    while frame is not None:
        yield frame
        frame = frame.f_back
