"""A host without sockperf, when the profile asks for a request/response load: said once when
the session connects (one line naming the host), never per run; its pairs' runs go on without
the load; a profile without one says nothing."""

from __future__ import annotations

import asyncio
from dataclasses import dataclass

import pytest

from abtui.core.events import AnyEvent, EventKind
from abtui.core.model import Pair, Profile
from abtui.core.model import TestOptions as Options
from abtui.measure.engine.front import Engine


@dataclass
class _Said:
    stdout: str


class _Link:
    def __init__(self, alias: str, sockperf: bool) -> None:
        self.alias = alias
        self._sockperf = sockperf

    async def run(self, command: str, **_: object) -> _Said:
        assert "command -v sockperf" in command
        return _Said("iperf 3.12\n__abtui_bash\n" + ("__abtui_sockperf\n" if self._sockperf
                                                     else ""))


@pytest.mark.parametrize("mode", [None, "ping-pong"])
def test_a_host_without_sockperf_is_said_once_in_one_line(mode: str | None) -> None:
    profile = Profile(name="p", pairs=[Pair(label="A", sender="s1", receiver="r1", target="t")],
                      test=Options(sockperf=mode))
    engine = Engine(profile, use_journal=False)
    seen: list[AnyEvent] = []
    engine.subscribe(seen.append)
    for alias, has in (("s1", True), ("r1", False)):
        asyncio.run(engine.hosts._detect(_Link(alias, has), "iperf3"))  # type: ignore[arg-type]
    said = [str(e.record().get("message")) for e in seen if e.kind is EventKind.ERROR]
    if mode is None:
        assert said == []
        return
    assert len(said) == 1 and "\n" not in said[0]
    assert said[0].startswith("r1: sockperf is not installed") and "install sockperf" in said[0]
    assert engine.hosts.has_sockperf == {"s1": True, "r1": False}
