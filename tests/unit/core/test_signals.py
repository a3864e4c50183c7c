"""abtui.core.signals: SIGTERM, SIGHUP and SIGINT end a command's task as ctrl+c does, once; a
signal while it sets hosts back waits for the set-back; the exit code is 128 + the signal."""

from __future__ import annotations

import asyncio
import os
import signal

import pytest

from abtui.core import signals


def _send(sig: signal.Signals, after: float = 0.05) -> None:
    asyncio.get_running_loop().call_later(after, os.kill, os.getpid(), sig)


@pytest.mark.parametrize(("sig", "code", "line"), [
    (signal.SIGTERM, 143, "ended by SIGTERM"),
    (signal.SIGHUP, 129, "ended by SIGHUP"),
    (signal.SIGINT, 130, "interrupted"),
])
def test_a_signal_cancels_the_task_which_ends_as_on_ctrl_c(sig, code, line) -> None:
    done: list[str] = []

    async def command() -> int:
        _send(sig)
        try:
            await asyncio.sleep(30)
        finally:
            done.append("set back")  # what a session's exit does
        return 0

    with pytest.raises(signals.Signalled) as ended:
        signals.run(command())
    assert (ended.value.exit_code, str(ended.value), done) == (code, line, ["set back"])
    assert signal.getsignal(signal.SIGTERM) is signal.SIG_DFL  # handlers put back


def test_a_signal_while_ending_waits_for_the_set_back_and_a_second_is_ignored() -> None:
    done: list[str] = []

    async def command() -> int:
        with signals.ending():
            _send(signal.SIGTERM, 0.02)
            _send(signal.SIGHUP, 0.05)
            await asyncio.sleep(0.2)  # the restore: never cut short
            done.append("restored")
        return 0

    with pytest.raises(signals.Signalled) as ended:
        signals.run(command())
    assert (ended.value.exit_code, done) == (143, ["restored"])


def test_a_second_signal_during_the_restore_after_a_cancel_is_ignored() -> None:
    done: list[str] = []

    async def command() -> int:
        _send(signal.SIGHUP)
        try:
            await asyncio.sleep(30)
        finally:
            with signals.ending():
                _send(signal.SIGTERM, 0.01)
                await asyncio.sleep(0.1)
                done.append("restored")
        return 0

    with pytest.raises(signals.Signalled) as ended:
        signals.run(command())
    assert (ended.value.exit_code, done) == (129, ["restored"])


def test_no_signal_returns_what_the_command_returns() -> None:
    async def command() -> int:
        return 7

    assert signals.run(command()) == 7
    with signals.ending():  # outside a command: nothing to defer
        pass
