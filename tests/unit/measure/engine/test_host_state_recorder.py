"""The engine's host-state recorder (abtui.measure.engine.host_state): a reading per host
and moment, a mark naming what changed between the start and the end, a host that cannot
answer recorded as unavailable, and an end cut short that lets the set-back finish."""

from __future__ import annotations

import asyncio
from typing import Any

from abtui.core.errors import RemoteError
from abtui.core.events import AnyEvent, EventKind
from abtui.core.model import LinkState, Pair, Profile
from abtui.measure.engine.host_state import HostStateRecorder
from abtui.remote.control_shell import CommandResult
from abtui.remote.os.linux.knobs import Linux

PAIR = Pair(label="A", sender="snd", receiver="rcv", target="198.18.1.2",
            sender_device="data0", receiver_device="data0")


class HostStateLink:
    """A link that answers the host-state read (one sysctl, the data device's MTU); `fail`:
    it is lost, `hang`: it never answers."""

    def __init__(self, alias: str, sack: str = "1", fail: bool = False,
                 hang: bool = False) -> None:
        self.alias, self.sack, self.fail, self.hang = alias, sack, fail, hang
        self.state = LinkState.CONNECTED
        self.commands: list[str] = []

    async def run(self, command: str, timeout: float = 10.0, **_: Any) -> CommandResult:
        self.commands.append(command)
        if self.hang:
            await asyncio.sleep(3600)
        if self.fail:
            raise RemoteError(self.alias, "not connected (lost)")
        return CommandResult(0, f"@@ device\ndata0\n@@ procsys\n/proc/sys/net/ipv4/tcp_sack:"
                                f"{self.sack}\n@@ mtu\n1500\n", "")


def _recorder() -> tuple[HostStateRecorder, list[AnyEvent]]:
    out: list[AnyEvent] = []
    return HostStateRecorder(Profile(name="t", pairs=[PAIR]), out.append), out


async def test_start_and_end_readings_and_the_change_between_them() -> None:
    rec, out = _recorder()
    links = {"snd": HostStateLink("snd"), "rcv": HostStateLink("rcv", fail=True)}
    dialects = {"snd": Linux(), "rcv": Linux()}
    await rec.record("start", links, dialects)  # type: ignore[arg-type]
    assert "data0" in links["snd"].commands[0]  # the profile's device, read in one command
    links["snd"].sack = "0"  # someone else, mid-session
    assert await rec.record_end(links, dialects) is False  # type: ignore[arg-type]
    states = [e for e in out if e.kind is EventKind.HOST_STATE]
    assert [(e.host, e.payload.moment) for e in states] == [  # type: ignore[attr-defined]
        ("snd", "start"), ("rcv", "start"), ("snd", "end"), ("rcv", "end")]
    assert states[0].payload.items == {"sysctl net.ipv4.tcp_sack": "1",  # type: ignore[attr-defined]
                                       "@dev mtu": "1500"}
    assert states[1].payload.unavailable == {  # type: ignore[attr-defined]
        "host state": "not connected (lost)"}
    (mark,) = [e for e in out if e.kind is EventKind.MARK]
    assert mark.payload.text == (  # type: ignore[attr-defined]
        "hosts changed during the session: snd: net.ipv4.tcp_sack 1 → 0")


async def test_an_end_reading_cut_short_says_so_and_lets_the_caller_go_on() -> None:
    rec, out = _recorder()
    task = asyncio.ensure_future(rec.record_end({"snd": HostStateLink("snd", hang=True)},  # type: ignore[dict-item]
                                                {"snd": Linux()}))
    await asyncio.sleep(0.05)
    task.cancel()
    assert await task is True
    assert [e.payload.message for e in out] == [  # type: ignore[attr-defined]
        "host state at end: not read (interrupted)"]
