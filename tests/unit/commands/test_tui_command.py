"""`abtui tui` without an engine, and bad inputs: one clear line, right exit code."""

from __future__ import annotations

import subprocess
import sys

from abtui.lab.profile import render_lab_profile
from abtui.profile import load_profile


def abtui(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "abtui", *args], capture_output=True,
                          text=True, timeout=60)


class _H:
    def __init__(self, alias: str, pair: str, role: str, addr: str) -> None:
        self.alias, self.pair, self.role, self.data_address = alias, pair, role, addr


def lab_profile_text() -> str:
    hosts = [_H("lab-a-snd", "A", "sender", "198.18.1.1"), _H("lab-a-rcv", "A", "receiver",
             "198.18.1.2"), _H("lab-b-snd", "B", "sender", "198.18.2.1"),
             _H("lab-b-rcv", "B", "receiver", "198.18.2.2")]
    return render_lab_profile(lab_name="lab", ssh_config="/x/ssh_config",
                              known_hosts="/x/known_hosts", hosts=hosts, pairs=2,
                              congestion=["reno", "bbr"])


def test_lab_profile_loads(tmp_path) -> None:  # type: ignore[no-untyped-def]
    path = tmp_path / "lab.toml"
    path.write_text(lab_profile_text())
    prof = load_profile(path)
    assert [p.label for p in prof.pairs] == ["A", "B"]
    assert {k.name: k.binding for k in prof.knobs} == {
        "tcp_wmem": "w", "tcp_rmem": "r", "tso": "t", "cc": "c", "tunnel": "u"}
    assert prof.base_pair == "A"
    assert "wireguard" in prof.tunnels


def test_a_profile_opens_on_its_hosts_and_replay_on_a_replay(tmp_path, monkeypatch) -> None:  # type: ignore[no-untyped-def]
    import abtui.commands.tui as tui
    from abtui.cli import build_parser
    from abtui.measure.replay.controller import ReplayController

    path = tmp_path / "lab.toml"
    path.write_text(lab_profile_text())
    opened: list[tuple[str, object]] = []
    monkeypatch.setattr(tui, "open_on_hosts", lambda p, t: opened.append(("hosts", p)) or 0)
    monkeypatch.setattr(tui, "open_console", lambda c, t, subtitle="": opened.append((t, c)) or 0)
    parser = build_parser()
    assert tui.run(parser.parse_args(["tui", str(path)])) == 0
    assert opened[-1][0] == "hosts" and opened[-1][1].name == "lab"  # type: ignore[attr-defined]
    assert tui.run(parser.parse_args(["tui", str(path), "--replay"])) == 0
    title, ctl = opened[-1]
    assert isinstance(ctl, ReplayController) and "REPLAY (synthetic)" in title
    assert [p.label for p in ctl.profile.pairs] == ["A", "B"]


def test_bad_inputs_are_one_line(tmp_path) -> None:  # type: ignore[no-untyped-def]
    bad = tmp_path / "bad.toml"
    bad.write_text("[[pairs]]\nlabel = 'A'\n")
    for args, words in [(("tui", str(tmp_path / "none.toml")), "cannot read"),
                        (("tui", str(bad), "--replay"), "bad.toml:"),
                        (("tui", "--replay", str(bad)), "bad.toml:1:"),
                        (("tui", "--replay", "nosuchsession"), "no such session"),
                        (("tui", "--replay", "--pairs", "9"), "--pairs must be between")]:
        r = abtui(*args)
        assert r.returncode == 2, (args, r.stderr)
        assert words in r.stderr and r.stderr.count("\n") == 1, r.stderr


def test_demo_leaving_decides_from_flags_and_never_asks_without_a_terminal(
        monkeypatch) -> None:  # type: ignore[no-untyped-def]
    import argparse
    import io

    from abtui.commands.demo import _take_down

    assert _take_down(argparse.Namespace(down=True, keep_lab=False)) is True
    assert _take_down(argparse.Namespace(down=False, keep_lab=True)) is False
    monkeypatch.setattr("sys.stdin", io.StringIO("y\n"))  # not a tty: no question asked
    assert _take_down(argparse.Namespace(down=False, keep_lab=False)) is False


class _Terminal:
    """A stdin that says it is a terminal and must not be read."""

    def isatty(self) -> bool:
        return True

    def fileno(self) -> int:
        return 0

    def readline(self) -> str:
        raise AssertionError("asked after a signal")


def test_demo_after_a_signal_never_asks(monkeypatch) -> None:  # type: ignore[no-untyped-def]
    """The console ended by SIGTERM or SIGHUP: nobody is there to answer, so no question,
    even on a terminal (the lab stays up)."""
    import argparse
    import builtins

    from abtui.commands import demo

    monkeypatch.setattr("sys.stdin", _Terminal())
    monkeypatch.setattr(demo, "_can_ask", lambda: True)
    monkeypatch.setattr(builtins, "input", lambda _q="": _Terminal().readline())
    assert demo._take_down(argparse.Namespace(down=False, keep_lab=False),
                           signalled=True) is False


def test_demo_in_the_background_never_asks(monkeypatch) -> None:  # type: ignore[no-untyped-def]
    """A terminal this process is not the foreground of (`abtui demo &`): reading it would
    stop the process (SIGTTIN), so no question; the lab stays up."""
    import argparse
    import builtins
    import os

    from abtui.commands import demo

    monkeypatch.setattr("sys.stdin", _Terminal())
    monkeypatch.setattr(os, "tcgetpgrp", lambda _fd: os.getpgrp() + 1)
    monkeypatch.setattr(builtins, "input", lambda _q="": _Terminal().readline())
    assert demo._take_down(argparse.Namespace(down=False, keep_lab=False)) is False


def test_demo_signal_while_asking_answers_no(monkeypatch) -> None:  # type: ignore[no-untyped-def]
    """SIGTERM while the question waits: it stops waiting, with the signal's number (the
    demo then ends with 128 + it, the lab left up), and the handlers are as they were."""
    import builtins
    import os
    import signal

    import pytest

    from abtui.commands import demo

    def waiting(_question: str = "") -> str:
        os.kill(os.getpid(), signal.SIGTERM)
        for _ in range(10**8):  # the handler runs at the next bytecode boundary
            pass
        raise AssertionError("SIGTERM did not end the question")

    monkeypatch.setattr(builtins, "input", waiting)
    before = signal.getsignal(signal.SIGTERM)
    with pytest.raises(demo._Signalled) as got:
        demo._ask("Take the lab down? [y/N] ")
    assert got.value.signum == signal.SIGTERM
    assert signal.getsignal(signal.SIGTERM) == before


def test_the_demo_title_names_the_lab_once() -> None:
    from abtui.commands.demo import demo_title

    assert demo_title("lab") == "abtui demo — lab"
    assert demo_title("h5labu") == "abtui demo — h5labu"
    assert demo_title("bench") == "abtui demo — lab bench"


def test_the_lab_left_up_is_named_once() -> None:
    from abtui.commands.demo import left_up

    assert left_up("lab") == "lab left up (`abtui lab down` removes it)"  # not "lab lab"
    assert left_up("bench").startswith("lab bench left up")


def test_the_console_is_built_with_the_collector_off_and_it_comes_back(monkeypatch) -> None:  # type: ignore[no-untyped-def]
    """Start-up runs without collector passes (abtui.commands.tui.collector_paused); the
    collector is back on however the console ends (the console itself turns it on at its
    first frame: tests/ui/test_start_order.py)."""
    import gc

    import pytest

    import abtui.commands.tui as tui
    from abtui.cli import build_parser

    args = build_parser("tui").parse_args(["tui", "--replay"])
    seen: list[bool] = []
    monkeypatch.setattr(tui, "open_console",
                        lambda c, t, subtitle="": seen.append(gc.isenabled()) or 0)
    assert gc.isenabled()
    assert tui.run(args) == 0
    assert seen == [False] and gc.isenabled()

    def fails(c, t, subtitle=""):  # type: ignore[no-untyped-def]
        raise RuntimeError("the console could not open")

    monkeypatch.setattr(tui, "open_console", fails)
    with pytest.raises(RuntimeError):
        tui.run(args)
    assert gc.isenabled()


async def test_a_session_file_that_cannot_be_written_stops_the_consoles_measuring() -> None:
    """The console's journal fails (the disk full): its log gets the writer's line with what
    happens next, and measuring stops (the hosts are set back when the console is left)."""
    import asyncio

    from abtui.commands.tui import stop_measuring
    from abtui.core.events import EventKind

    class Engine:
        def __init__(self) -> None:
            self.said: list[str] = []
            self.stopped = asyncio.Event()

        def emit(self, event) -> None:  # type: ignore[no-untyped-def]
            assert event.kind is EventKind.ERROR
            self.said.append(event.payload.message)

        async def stop(self) -> None:
            self.stopped.set()

    engine = Engine()
    stop_measuring(engine, "s.jsonl: could not write the session (No space left on device)")
    await asyncio.wait_for(engine.stopped.wait(), 5)
    assert engine.said == ["s.jsonl: could not write the session (No space left on device); "
                           "measuring stopped (quit to set the hosts back)"]


def test_a_journal_that_fails_once_the_console_has_ended_asks_nothing() -> None:
    """The journal's last fsync fails as the console's process ends (no event loop left):
    nothing is asked of the engine; the last line says the error."""
    from abtui.commands.tui import stop_measuring

    class Engine:
        def emit(self, event) -> None:  # type: ignore[no-untyped-def]
            raise AssertionError("nothing to tell: the console has ended")

    stop_measuring(Engine(), "s.jsonl: could not write the session (Input/output error)")
