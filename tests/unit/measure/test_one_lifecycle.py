"""The console (`abtui tui PROFILE`) and `abtui run` go through one session lifecycle
(abtui.measure.session.ControllerSession): each builds one on its journal, and however the
session ends the controller is shut down and the journal closed once."""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from pathlib import Path
from typing import Any, ClassVar

import pytest

import abtui.commands.tui as tui
import abtui.measure.engine.front
import abtui.measure.headless as headless
import abtui.measure.ports
from abtui.core import signals
from abtui.core.errors import AbtuiError, KnobRefused
from abtui.core.events import AnyEvent
from abtui.core.model import Profile
from abtui.measure.session import ControllerSession
from abtui.profile import load_profile
from tests.reliability import Reliability
from tests.unit.commands.test_tui_command import lab_profile_text


class Journal:
    """The session's writer, counting its closes."""

    def __init__(self, path: Path) -> None:
        self.path, self.closes, self.written = path, 0, 0
        self.error: str | None = None
        self.on_error: Callable[[str], None] | None = None

    def write(self, event: AnyEvent) -> None:
        self.written += 1

    def close(self) -> Path:
        self.closes += 1
        return self.path


class Engine:
    """The engine's lifecycle calls, recorded; `fail` names the one that raises."""

    fail: ClassVar[str] = ""
    left: ClassVar[list[str]] = []  # what its shutdown could not set back
    made: ClassVar[list[Engine]] = []

    def __init__(self, profile: Profile, **_options: object) -> None:
        self.profile, self.session_path = profile, _options.get("session_path")
        self.calls: list[str] = []
        self.not_restored: list[str] = []
        self.failed_runs = 0
        Engine.made.append(self)

    def subscribe(self, callback: Callable[[AnyEvent], None]) -> None:
        pass

    async def _call(self, name: str) -> None:
        self.calls.append(name)
        if name.split(" ")[0] == Engine.fail:
            raise AbtuiError(f"{name} failed")

    async def connect(self) -> None:
        await self._call("connect")

    async def start(self, mode: str = "continuous", **_kw: object) -> None:
        await self._call(f"start {mode}")

    async def stop(self) -> None:
        await self._call("stop")

    async def wait(self) -> None:
        await self._call("wait")

    async def shutdown(self, reason: str = "shutdown") -> None:
        await self._call(f"shutdown {reason}")
        self.not_restored = list(Engine.left)

    async def set_knob(self, knob: str, value: str) -> None:
        self.calls.append(f"set {knob}={value}")
        if Engine.fail == "set":
            raise KnobRefused(f"knob {knob}={value!r} refused: no such value")


@pytest.fixture
def journals(tmp_path, monkeypatch) -> list[Journal]:  # type: ignore[no-untyped-def]
    """Every journal a session opens, in both commands; the engine a recording one."""
    monkeypatch.setenv("XDG_STATE_HOME", str(tmp_path / "state"))
    monkeypatch.setenv("XDG_DATA_HOME", str(tmp_path / "data"))
    made: list[Journal] = []

    def open_writer(path: Path, profile: Profile, compact: bool) -> Journal:
        made.append(Journal(path))
        return made[-1]

    monkeypatch.setattr(abtui.measure.ports, "open_session_writer", open_writer)
    monkeypatch.setattr(headless, "open_session_writer", open_writer)
    monkeypatch.setattr(abtui.measure.engine.front, "Engine", Engine)
    monkeypatch.setattr(headless, "Engine", Engine)
    monkeypatch.setattr(Engine, "made", [])
    monkeypatch.setattr(Engine, "fail", "")
    monkeypatch.setattr(Engine, "left", [])
    return made


def _profile(tmp_path: Path) -> Profile:
    path = tmp_path / "lab.toml"
    path.write_text(lab_profile_text())
    return load_profile(path)


def _session_of(journal: Journal) -> ControllerSession[Any]:
    """The session a journal was handed to (it told the journal where to say a failure)."""
    owner = getattr(journal.on_error, "__self__", None)
    assert isinstance(owner, ControllerSession), journal.on_error
    return owner


def test_abtui_run_goes_through_the_session_and_closes_its_journal_once(
        tmp_path, journals) -> None:  # type: ignore[no-untyped-def]
    code = asyncio.run(headless.run_headless(_profile(tmp_path), tmp_path / "s.jsonl"))
    assert code == 0
    [journal] = journals
    assert _session_of(journal).closed == journal.path and journal.closes == 1
    assert Engine.made[0].calls == ["connect", "stop", "start plan", "wait", "shutdown done"]


def test_abtui_run_that_fails_to_connect_still_shuts_down_and_closes_once(
        tmp_path, journals) -> None:  # type: ignore[no-untyped-def]
    Engine.fail = "connect"
    with pytest.raises(AbtuiError, match="connect failed"):
        asyncio.run(headless.run_headless(_profile(tmp_path), tmp_path / "s.jsonl"))
    assert journals[0].closes == 1
    assert Engine.made[0].calls == ["connect", "shutdown done"]


class Lines:
    """The progress stream's lines."""

    def __init__(self) -> None:
        self.text = ""

    def write(self, s: str) -> None:
        self.text += s

    def flush(self) -> None:
        pass


@pytest.mark.reliability(
    "46c", "an end that leaves something set on the hosts: a refused `--set` of headless `run`, "
    "ctrl+q of the console whose restore left a host",
    "the `abtui recover` line said and a non-zero exit (the console said the line and exited "
    "0; the refused `--set` said nothing)")
def test_a_refused_set_that_leaves_something_set_says_the_recover_line_and_fails(
        tmp_path, journals, reliability: Reliability) -> None:  # type: ignore[no-untyped-def]
    """Any end that leaves something on the hosts says `abtui recover` and exits non-zero,
    the refused --set's way out included (it returned before the check and said nothing)."""
    Engine.fail, Engine.left = "set", ["h1: tcp_rmem left at '4096 8192 16384'"]
    lines = Lines()
    code = asyncio.run(headless.run_headless(_profile(tmp_path), tmp_path / "s.jsonl",
                                             settings=[("tcp_rmem", "x")], progress=lines))
    assert code != 0
    assert "refused, not started" in lines.text
    assert lines.text.rstrip().endswith("run `abtui recover` to finish"), lines.text
    reliability.row(headless_exit=code)


@pytest.mark.parametrize("left", [[], ["h1: tcp_rmem left"]])
def test_a_signal_stops_the_run_and_says_what_was_set_back(
        tmp_path, journals, monkeypatch, left) -> None:  # type: ignore[no-untyped-def]
    """SIGTERM mid-run: the session shuts down ("interrupted"), one line says whether every
    host was set back (else the recover line), then Signalled (exit 143)."""
    import os
    import signal

    Engine.left = left

    async def wait_forever(self: Engine) -> None:
        self.calls.append("wait")
        asyncio.get_running_loop().call_soon(os.kill, os.getpid(), signal.SIGTERM)
        await asyncio.sleep(30)

    monkeypatch.setattr(Engine, "wait", wait_forever)
    lines = Lines()
    with pytest.raises(signals.Signalled) as ended:
        signals.run(headless.run_headless(_profile(tmp_path), tmp_path / "s.jsonl",
                                          progress=lines))
    assert ended.value.exit_code == 143
    assert Engine.made[0].calls[-1] == "shutdown interrupted"
    said = "every host set back" if not left else "run `abtui recover` to finish"
    assert f"stopped, {said if not left else 'not everything'}" in lines.text, lines.text
    assert said in lines.text


def test_the_console_on_hosts_goes_through_the_same_session(
        tmp_path, journals, monkeypatch) -> None:  # type: ignore[no-untyped-def]
    """The command builds the session (the engine deferred to its first use), the app's
    calls shut down through that very session (leaving, or the guard after a crash), and the
    command closes the journal once."""
    from abtui.ui.app import AbtuiApp

    seen: list[ControllerSession[Any]] = []

    def console(session: Any, title: str, subtitle: str = "", **_kw: object) -> int:
        assert isinstance(session, ControllerSession)
        app = AbtuiApp(session, title=title, keymap={})
        assert not session.built  # the engine is built by the session on first use
        assert app.calls.session is session  # ctrl+q's and the guard's shutdown
        seen.append(session)
        asyncio.run(app.calls.shutdown())
        return 0

    monkeypatch.setattr(tui, "open_console", console)
    assert tui.open_on_hosts(_profile(tmp_path), "t") == 0
    [journal], [session] = journals, seen
    assert _session_of(journal) is session
    assert journal.closes == 1 and session.closed == journal.path
    assert Engine.made[0].calls == ["shutdown shutdown"]  # the console's reason, as before


def test_a_console_that_dies_still_closes_the_journal_once(
        tmp_path, journals, monkeypatch) -> None:  # type: ignore[no-untyped-def]
    def dies(*_args: object, **_kw: object) -> int:
        raise RuntimeError("the console died")

    monkeypatch.setattr(tui, "open_console", dies)
    with pytest.raises(RuntimeError, match="died"):
        tui.open_on_hosts(_profile(tmp_path), "t")
    assert journals[0].closes == 1


def test_a_terminal_that_has_gone_does_not_stop_the_set_back(
        tmp_path, journals) -> None:  # type: ignore[no-untyped-def]
    """SIGHUP: the terminal closed, so every progress line fails (EIO); the run still shuts
    down and closes its journal, and says its exit code."""

    class Gone:
        def write(self, s: str) -> None:
            raise OSError(5, "Input/output error")

        def flush(self) -> None:
            raise OSError(5, "Input/output error")

    Engine.left = ["h1: tcp_rmem left"]
    code = asyncio.run(headless.run_headless(_profile(tmp_path), tmp_path / "s.jsonl",
                                             progress=Gone()))  # type: ignore[arg-type]
    assert code == 1
    assert Engine.made[0].calls[-1] == "shutdown done" and journals[0].closes == 1
