"""`abtui check` on a build knob: each host's build named, and builds the host cannot tell
apart said so (a FAIL with what to do), never "none of its values"."""

from __future__ import annotations

import asyncio

from abtui.commands.check import _check_build
from abtui.core.builds import Build, Method
from abtui.core.model import Knob, KnobKind, Pair, Profile
from abtui.hosts.builds import indistinct

ITR = Knob(name="itr", kind=KnobKind.MODULE, key="e1000e", values=("3", "10000"), builds={
    v: Build(Method.MODPROBE, params=(("InterruptThrottleRate", v),)) for v in ("3", "10000")})


class Manager:
    """What the knob layer reads: the sender runs one listed build, the receiver two alike."""

    async def current(self, knob: Knob, pairs: list[Pair]) -> dict[str, dict[str, str]]:
        return {"A": {"sender": "3", "receiver": indistinct(["3", "10000"])}}


def test_builds_that_cannot_be_told_apart_fail_the_check_with_what_to_do() -> None:
    profile = Profile(name="p", pairs=[Pair("A", "snd", "rcv", "198.18.0.2")], knobs=[ITR])
    lines: list[tuple[bool, str]] = []
    asyncio.run(_check_build(lambda ok, line: lines.append((ok, line)), Manager(),  # type: ignore[arg-type]
                             profile, ITR))
    assert lines[0] == (True, "snd: knob itr: runs 3")
    ok, line = lines[1]
    assert not ok and "none of its values" not in line
    assert line.startswith("rcv: knob itr: runs '3' or '10000' (its builds that cannot be told "
                           "apart): give each build something the host shows that differs")
