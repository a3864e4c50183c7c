"""A command waiting for the control shell, busy with a command that hangs, waits no longer
than its own timeout (abtui.remote.link.HostLink.run): it fails with one line naming the host,
the command that did not run and the one that held the shell."""

from __future__ import annotations

import asyncio

import pytest

from abtui.core.errors import RemoteError
from abtui.remote.control_shell import CommandResult
from abtui.remote.link import HostLink


class Shell:
    """A control shell whose `hang` commands never end and whose others answer at once."""

    def __init__(self) -> None:
        self.sent: list[str] = []

    def send(self, command: str, opening: str, closing: str) -> None:
        self.sent.append(command)

    async def result(self) -> CommandResult:
        if self.sent[-1].startswith("hang"):
            await asyncio.Event().wait()
        return CommandResult(0, f"ran {self.sent[-1]}", "")

    def close(self) -> None:
        pass


async def _holding(link: HostLink, command: str) -> asyncio.Task[CommandResult]:
    held = asyncio.create_task(link.run(command, timeout=60))
    while not link._shell_lock.locked():
        await asyncio.sleep(0)
    return held


async def test_a_command_behind_a_hung_one_fails_within_its_own_timeout() -> None:
    link = HostLink("h1", reconnect=False)
    link._shell = Shell()  # type: ignore[assignment]
    held = await _holding(link, "hang sysctl -w x=1")
    loop = asyncio.get_running_loop()
    start = loop.time()
    with pytest.raises(RemoteError) as caught:
        # before the bound it waited for the hung command's 60 s
        await asyncio.wait_for(link.run("echo next", timeout=0.2), 5)
    assert 0.19 <= loop.time() - start < 2
    message = str(caught.value)
    assert message.startswith("h1: ") and "echo next" in message
    assert "hang sysctl -w x=1" in message and "0.2 s" in message
    assert link._shell is not None  # the hung command's own timeout decides about the shell
    held.cancel()
    with pytest.raises(asyncio.CancelledError):
        await held
    assert not link._shell_lock.locked()


async def test_a_command_that_gets_the_shell_in_time_runs() -> None:
    link = HostLink("h1", reconnect=False)
    shell = Shell()
    link._shell = shell  # type: ignore[assignment]
    release = asyncio.Event()

    async def result() -> CommandResult:
        if shell.sent[-1] == "slow":
            await release.wait()
        return CommandResult(0, f"ran {shell.sent[-1]}", "")

    shell.result = result  # type: ignore[method-assign]
    held = await _holding(link, "slow")
    waiting = asyncio.create_task(link.run("echo next", timeout=5))
    await asyncio.sleep(0)
    release.set()
    assert (await held).stdout == "ran slow"
    assert (await waiting).stdout == "ran echo next"


def test_a_timed_out_command_is_quoted_in_one_short_line() -> None:
    """A timed-out command's error quotes its first line, cut, with nothing a terminal acts
    on: a watch's awk script (a dialect function of many lines) read whole before."""
    from abtui.remote.control_shell import BRIEF, command_brief
    script = ("abtui_fn() {\n  awk 'BEGIN { n = 0 }\n  /^cpu/ { print $1, $2 }' /proc/stat"
              "\n}; abtui_fn")
    assert command_brief(script) == "awk 'BEGIN { n = 0 }…"
    assert command_brief("sysctl -n   net.ipv4.tcp_rmem") == "sysctl -n net.ipv4.tcp_rmem"
    long = "echo " + "x" * 100
    assert command_brief(long) == long[:BRIEF] + "…"
    assert "\x1b" not in command_brief("printf '\x1b]0;title\x07'")
