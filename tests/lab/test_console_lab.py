"""The console on the real lab (real engine, sshd, iperf3, sysctls in namespaces): however it
ends — an exception inside a handler, SIGTERM to the real `abtui tui` — the knob a key changed
is back to its original on the hosts and nothing of ours is left running; and what the hosts
say is shown as text, never read as markup or terminal escapes."""

from __future__ import annotations

import io
import json
import os
import signal
import sys
import time
from pathlib import Path

import pytest

from abtui.hosts.undo import UndoJournal, pending_recovery
from abtui.lab.netns import Lab
from abtui.measure.engine.front import Engine
from abtui.profile import load_profile, parse_profile
from abtui.ui.app import AbtuiApp
from abtui.ui.guard import run_console
from abtui.ui.render.widgets import PairPane
from tests.lab.namespaces import netns_processes, ns_exec
from tests.ui.console_kit import until

pytestmark = [pytest.mark.lab, pytest.mark.ui]
ROOT = Path(__file__).resolve().parents[2]


def rmem(lab: Lab, alias: str) -> list[str]:
    return ns_exec(lab, alias, "sysctl", "-n", "net.ipv4.tcp_rmem").split()


def ours_running(lab: Lab) -> list[tuple[str, int, str]]:
    return [(h.alias, pid, comm) for h in lab.hosts(2)
            for pid, comm, _cmd, _state in netns_processes(h.netns)
            if comm in ("iperf3", "ping", "wireguard-go")]


def boom() -> None:
    raise RuntimeError("injected into a handler")


async def test_an_exception_in_a_handler_restores_the_lab_hosts(lab: Lab,
                                                                  tmp_path: Path) -> None:
    profile = load_profile(lab.profile_path)
    receivers = [p.receiver for p in profile.pairs]
    before = {h: rmem(lab, h) for h in receivers}
    engine = Engine(profile, journal=UndoJournal(tmp_path / "undo"))
    app = AbtuiApp(engine, title="lab")
    out = io.StringIO()

    async def drive(pilot) -> None:  # type: ignore[no-untyped-def]
        await until(pilot, lambda: all(p.intervals >= 2 for p in app.state.pairs.values()), 60)
        await pilot.press("r")  # the lab profile's tcp_rmem key
        await until(pilot, lambda: all(rmem(lab, h) != before[h] for h in receivers), 30)
        app.main_screen.action_mark = boom  # type: ignore[method-assign]
        await pilot.press("m")

    code = await run_console(app, out=out, headless=True, size=(120, 36), auto_pilot=drive)
    said = out.getvalue()
    assert code == 1, said
    assert said.startswith("abtui: RuntimeError: injected into a handler; restoring the hosts…")
    assert said.rstrip().endswith("abtui: hosts restored"), said
    for h in receivers:
        assert f"{h}: tcp_rmem=" in said
    assert {h: rmem(lab, h) for h in receivers} == before
    assert ours_running(lab) == []
    assert pending_recovery(tmp_path / "undo") == []  # nothing left for `abtui recover`


@pytest.mark.parametrize("how", ["SIGTERM", "terminal closed"])
def test_a_signal_to_the_real_console_restores_the_lab_hosts(lab: Lab, tmp_path: Path,
                                                             how: str) -> None:
    """SIGTERM to `abtui tui`, or its terminal closed under it (tmux kills the window: SIGHUP,
    and the terminal is gone): the knob a key changed is back, nothing is left running."""
    from tests.e2e.term import TMUX, Term, console_pid, end_console, intervals_shown

    if TMUX is None:
        pytest.skip("tmux is not installed (apt tmux)")
    profile = load_profile(lab.profile_path)
    receivers = [p.receiver for p in profile.pairs]
    before = {h: rmem(lab, h) for h in receivers}
    term = Term(f"abtui-lab-{os.getpid()}")
    rc = tmp_path / "rc"
    env = f"XDG_STATE_HOME={tmp_path / 'state'} XDG_DATA_HOME={tmp_path / 'data'}"
    # (Textual draws on stderr: it stays the terminal)
    cmd = (f"cd {ROOT} && {env} {sys.executable} -m abtui tui {lab.profile_path}; "
           f"echo $? > {rc}; sleep 60")
    console = 0
    try:
        term.tmux("new-session", "-d", "-s", "e2e", "-x", "120", "-y", "36", cmd)
        console = console_pid(term)
        term.wait("intervals from both lab pairs", lambda s: intervals_shown(s) >= 2, 90)
        term.keys("r")
        deadline = time.monotonic() + 30
        while any(rmem(lab, h) == before[h] for h in receivers):
            assert time.monotonic() < deadline, "the r key did not change tcp_rmem"
            time.sleep(0.2)
        if how == "SIGTERM":
            os.kill(console, signal.SIGTERM)  # the console's own process, by its PID
        else:
            term.close()
        deadline = time.monotonic() + 60
        while Path(f"/proc/{console}").exists() and time.monotonic() < deadline:
            time.sleep(0.2)
        assert not Path(f"/proc/{console}").exists(), "the console did not end"
        if how == "SIGTERM":
            assert rc.read_text().strip() == str(128 + signal.SIGTERM), term.screen()
        assert {h: rmem(lab, h) for h in receivers} == before
        assert ours_running(lab) == []
        assert pending_recovery(tmp_path / "state" / "abtui" / "undo") == []
    finally:
        end_console(console)
        term.close()


HOSTILE = r"[b]x[/b] [@click=app.quit] \033[31mred\033[0m"


async def test_what_hosts_say_is_shown_as_text(lab: Lab, tmp_path: Path) -> None:
    """A watch without a sysctl whose command prints markup and escape sequences (and
    fails, so its words become an error), and a knob value that looks like markup."""
    command = json.dumps(f"printf '{HOSTILE}\\n' >&2; exit 1")  # a TOML string too
    text = Path(lab.profile_path).read_text() + f'''
[[watches]]
name = "loud"
role = "receiver"
command = {command}
interval = 0.5

[[knobs]]
name = "cc2"
kind = "sysctl"
key = "net.ipv4.tcp_congestion_control"
values = ["reno", "[b]bbr[/b]"]
scope = "sender"
binding = "k"
'''
    profile = parse_profile(text, "hostile lab profile")
    engine = Engine(profile, journal=UndoJournal(tmp_path / "undo"))
    app = AbtuiApp(engine, title="lab")
    seen: dict[str, str] = {}

    async def drive(pilot) -> None:  # type: ignore[no-untyped-def]
        await until(pilot, lambda: all(p.error for p in app.state.pairs.values()), 60)
        await pilot.pause(0.5)  # the panes' text repaints
        seen["error"] = app.query_one("#pane-A", PairPane).text("error")
        await pilot.press("k", "k")  # cc2 to "[b]bbr[/b]": the hosts refuse it
        await until(pilot, lambda: "refused" in "\n".join(app.log_lines), 30)
        seen["log"] = "\n".join(app.log_lines)
        seen["bar"] = app.knobbar().plain
        await pilot.press("ctrl+q")

    code = await run_console(app, out=io.StringIO(), headless=True, size=(160, 48),
                             auto_pilot=drive)
    assert code == 0  # left by ctrl+q: the [@click=app.quit] a host printed did nothing
    shown = "[b]x[/b] [@click=app.quit] \\x1b[31mred\\x1b[0m"
    assert shown in seen["error"], seen["error"]
    assert shown in seen["log"]
    assert "cc2=[b]bbr[/b] refused" in seen["log"]
    assert "cc2=reno" in seen["bar"]
    for where in seen.values():
        assert "\x1b" not in where
