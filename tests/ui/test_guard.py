"""However the console ends, the hosts are restored: an exception in a handler, a signal, a
second ctrl+q (then one line names `abtui recover`). On a replay here; on the lab in
tests/lab/test_console_lab.py."""

from __future__ import annotations

import io
import math
import os
import signal

import pytest

from abtui.core import events
from abtui.core.events import Event, EventKind
from abtui.measure.replay.synthetic import synthetic_events, synthetic_profile
from abtui.ui.app import AbtuiApp
from abtui.ui.guard import RECOVER, run_console
from tests.reliability import Reliability
from tests.ui.console_kit import SpyController, make_app, until

pytestmark = pytest.mark.ui


def boom() -> None:
    raise RuntimeError("injected [b]failure[/b]")


async def flipped(pilot, app: AbtuiApp) -> None:  # type: ignore[no-untyped-def]
    await until(pilot, lambda: app.state.intervals_seen >= 4 and not app.controller.running)
    await pilot.press("w")
    await until(pilot, lambda: any(c[0] == "set_knob" for c in app.controller.calls))
    await until(pilot, lambda: bool(app.controller._changed))


async def test_an_exception_in_a_handler_still_restores() -> None:
    app = make_app(intervals=4)
    out = io.StringIO()

    async def drive(pilot) -> None:  # type: ignore[no-untyped-def]
        await flipped(pilot, app)
        app.main_screen.action_mark = boom  # type: ignore[method-assign]
        await pilot.press("m")

    code = await run_console(app, out=out, headless=True, size=(100, 30), auto_pilot=drive)
    assert code == 1
    assert app.controller.calls[-1] == ("shutdown",)
    said = out.getvalue().splitlines()
    assert said[0] == "abtui: RuntimeError: injected [b]failure[/b]; restoring the hosts…"
    assert "abtui:   a-snd: tcp_wmem=4096 16384 4194304 restored" in said
    assert said[-1] == "abtui: hosts restored"
    assert not app.controller._changed


async def test_sigterm_restores_as_ctrl_q_does() -> None:
    app = make_app(intervals=4)
    out = io.StringIO()

    async def drive(pilot) -> None:  # type: ignore[no-untyped-def]
        await flipped(pilot, app)
        os.kill(os.getpid(), signal.SIGTERM)
        await until(pilot, lambda: app.leaving)

    code = await run_console(app, out=out, headless=True, size=(100, 30), auto_pilot=drive)
    assert code == 128 + signal.SIGTERM
    assert app.controller.calls[-1] == ("shutdown",)
    assert app.exit_flow.restore_outcome == "done" and not app.controller._changed
    assert any(e.kind is EventKind.RESTORE for e in app.recent)
    assert out.getvalue() == ""  # restored inside the console, as ctrl+q: nothing to add


async def test_forcing_out_says_abtui_recover_will_finish() -> None:
    app = make_app(intervals=4, step_delay=30.0)  # restoring hangs
    out = io.StringIO()

    async def drive(pilot) -> None:  # type: ignore[no-untyped-def]
        await until(pilot, lambda: app.state.intervals_seen >= 4)
        app.controller._changed.add(("tso", "a-snd"))  # something to restore, slowly
        await pilot.press("ctrl+q")
        await until(pilot, lambda: app.exit_flow.begun)
        await pilot.press("ctrl+q")

    code = await run_console(app, out=out, headless=True, size=(100, 30), auto_pilot=drive)
    assert code == 1 and app.exit_flow.forced_out
    assert out.getvalue() == f"abtui: {RECOVER}\n"


async def test_sigterm_while_restoring_hangs_leaves_within_the_bound() -> None:
    """Hosts gone, a link that hangs: an unattended console must not live on for good. After
    the bound it stops waiting, names `abtui recover` in one line, and exits non-zero."""
    import asyncio
    import time

    app = make_app(intervals=4, step_delay=30.0)  # restoring hangs
    out = io.StringIO()

    async def drive(pilot) -> None:  # type: ignore[no-untyped-def]
        await until(pilot, lambda: app.state.intervals_seen >= 4)
        app.controller._changed.add(("tso", "a-snd"))  # something to restore, slowly
        os.kill(os.getpid(), signal.SIGTERM)
        await until(pilot, lambda: app.leaving)

    began = time.monotonic()
    code = await asyncio.wait_for(run_console(
        app, out=out, headless=True, size=(100, 30), auto_pilot=drive, bound_s=1.0), 20)
    assert time.monotonic() - began < 12
    assert code == 128 + signal.SIGTERM
    assert out.getvalue() == f"abtui: restoring did not finish within 1 s; {RECOVER}\n"


STUCK = """
import asyncio, os, signal, sys, time
from abtui.ui.guard import run_console
from tests.ui.console_kit import make_app, until

app = make_app(intervals=4)
print(f"spool {app.on_disk.path}", file=sys.stderr, flush=True)

async def stuck(reason: str = "shutdown") -> None:
    time.sleep(600)  # restoring blocks the event loop itself: no timer fires any more

app.controller.shutdown = stuck

async def drive(pilot) -> None:
    await until(pilot, lambda: app.state.intervals_seen >= 4)
    os.kill(os.getpid(), signal.SIGTERM)

asyncio.run(run_console(app, headless=True, size=(100, 30), auto_pilot=drive,
                        bound_s=1.0, grace_s=1.0))
"""


def test_a_console_whose_event_loop_is_stuck_still_ends_on_sigterm() -> None:
    """The bound holds even when the loop no longer turns: a watchdog thread ends the
    process, saying that `abtui recover` will finish."""
    import subprocess
    import sys
    import time
    from pathlib import Path

    root = Path(__file__).resolve().parents[2]
    began = time.monotonic()
    out = subprocess.run([sys.executable, "-c", STUCK], cwd=root, capture_output=True,
                         text=True, timeout=60)
    assert out.returncode == 128 + signal.SIGTERM, out.stderr[-2000:]
    assert "abtui recover" in out.stderr and "did not finish" in out.stderr
    assert time.monotonic() - began < 40
    spool = Path(out.stderr.split("spool ", 1)[1].split("\n", 1)[0])
    assert not spool.parent.exists()  # the console's spool went with it


class _LeavesOne(SpyController):
    """A controller whose shutdown reports one host it could not set back (a RESTORE event
    that is not ok), as the engine does when a host stays away through its restore."""

    async def shutdown(self, reason: str = "shutdown") -> None:
        self._emit(Event.of(events.Restore(knob="tcp_wmem", value="4096 16384 4194304",
                                           ok=False, message="a-snd: link lost"),
                            self._vt, host="a-snd"))
        await super().shutdown(reason)


@pytest.mark.reliability(
    "46c", "an end that leaves something set on the hosts: a refused `--set` of headless `run`, "
    "ctrl+q of the console whose restore left a host",
    "the `abtui recover` line said and a non-zero exit (the console said the line and exited "
    "0; the refused `--set` said nothing)")
@pytest.mark.parametrize("on_hosts", [True, False], ids=["hosts", "replay"])
async def test_ctrl_q_that_left_a_host_set_says_recover_and_exits_non_zero(
        on_hosts: bool, reliability: Reliability) -> None:
    """ctrl+q whose restore ended but left something set: the recover line, and exit 1 (it
    said the line and exited 0). A replay (no hosts: its RESTORE events are a recording's)
    says nothing and exits 0."""
    profile = synthetic_profile(2)
    ctl = _LeavesOne(profile, synthetic_events(profile, intervals=4, seed=7), speed=math.inf)
    app = AbtuiApp(ctl, title="abtui — test — REPLAY")
    out = io.StringIO()

    async def drive(pilot) -> None:  # type: ignore[no-untyped-def]
        await until(pilot, lambda: app.state.intervals_seen >= 4)
        await pilot.press("ctrl+q")

    code = await run_console(app, out=out, headless=True, size=(100, 30), auto_pilot=drive,
                             recover_hint=on_hosts)
    assert app.exit_flow.restore_outcome == "done" and app.record.restore_failed
    assert out.getvalue() == (f"abtui: {RECOVER}\n" if on_hosts else "")
    assert code == (1 if on_hosts else 0)
    reliability.row(console_exit=code)
