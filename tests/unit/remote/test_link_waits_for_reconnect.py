"""A lost link is not a refusal (abtui.remote.link.HostLink.run with `again`): a command that
may run twice waits for a link being re-made and is sent again when the link's loss cut it
short, within LINK_WAIT_S; without `again`, or on a link that never connected, it fails at once
as before."""

from __future__ import annotations

import asyncio

import pytest

from abtui.core.errors import RemoteError
from abtui.core.model import LinkState
from abtui.remote import link as link_module
from abtui.remote.control_shell import CommandResult
from abtui.remote.link import HostLink


class Shell:
    """A control shell: `cut` makes its next command end as a dropped connection does."""

    def __init__(self, cut: bool = False) -> None:
        self.sent: list[str] = []
        self.cut = cut

    def send(self, command: str, opening: str, closing: str) -> None:
        self.sent.append(command)

    async def result(self) -> CommandResult:
        if self.cut:
            raise BrokenPipeError("connection lost")
        return CommandResult(0, f"ran {self.sent[-1]}", "")

    def close(self) -> None:
        pass


def _lost(link: HostLink) -> None:
    link._shell = None
    link.state = LinkState.LOST


async def _back_after(link: HostLink, seconds: float, shell: Shell) -> None:
    await asyncio.sleep(seconds)
    link._shell = shell  # type: ignore[assignment]
    link.state = LinkState.CONNECTED


async def test_a_command_on_a_dropped_link_waits_for_it_and_runs() -> None:
    link = HostLink("h1")
    _lost(link)
    with pytest.raises(RemoteError, match="not connected"):  # without `again`: at once
        await link.run("sysctl -w x=1")
    shell = Shell()
    back = asyncio.create_task(_back_after(link, 0.2, shell))
    result = await asyncio.wait_for(link.run("sysctl -w x=1", again=True), 5)
    assert result.stdout == "ran sysctl -w x=1" and shell.sent == ["sysctl -w x=1"]
    await back


async def test_a_command_the_drop_cut_short_is_sent_again_once_the_link_is_back() -> None:
    link = HostLink("h1")
    cut = Shell(cut=True)
    link._shell, link.state = cut, LinkState.CONNECTED  # type: ignore[assignment]
    again = Shell()
    real = cut.result

    async def dropping() -> CommandResult:
        _lost(link)  # what the connection's loss does (HostLink._on_connection_lost)
        asyncio.get_running_loop().create_task(_back_after(link, 0.2, again))
        return await real()

    cut.result = dropping  # type: ignore[method-assign]
    result = await asyncio.wait_for(link.run("swap x 2", again=True), 5)
    assert result.stdout == "ran swap x 2"
    assert cut.sent == again.sent == ["swap x 2"]


async def test_a_link_not_back_within_the_bound_fails_in_one_line(monkeypatch) -> None:
    monkeypatch.setattr(link_module, "LINK_WAIT_S", 0.3)
    link = HostLink("h1")
    cut = Shell(cut=True)
    link._shell, link.state = cut, LinkState.CONNECTED  # type: ignore[assignment]
    real = cut.result

    async def dropping() -> CommandResult:
        _lost(link)
        return await real()

    cut.result = dropping  # type: ignore[method-assign]
    loop = asyncio.get_running_loop()
    began = loop.time()
    with pytest.raises(RemoteError) as caught:
        await link.run("swap x 2", timeout=0.1, again=True)
    assert loop.time() - began < 2
    assert str(caught.value) == "h1: the link dropped and was not back within 0.3 s: swap x 2"


async def test_a_link_that_never_connected_or_does_not_reconnect_is_not_waited_for() -> None:
    for link in (HostLink("h1"), HostLink("h2", reconnect=False)):
        link.state = LinkState.FAILED if link.reconnect else LinkState.LOST
        loop = asyncio.get_running_loop()
        began = loop.time()
        with pytest.raises(RemoteError, match="not connected"):
            await link.run("sysctl -n x", again=True)
        assert loop.time() - began < 0.5
