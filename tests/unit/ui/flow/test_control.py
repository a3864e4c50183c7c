"""The console's controller calls (abtui.ui.flow.control) on their own: no app, a controller that
records what it is asked, and the messages the calls post."""

from __future__ import annotations

import asyncio
import math

from textual.message import Message

from abtui.core.errors import KnobRefused
from abtui.measure.replay.controller import ReplayController
from abtui.measure.replay.synthetic import synthetic_profile
from abtui.measure.session import ControllerSession
from abtui.ui.flow.control import ControllerCalls
from abtui.ui.flow.messages import Failed, KnobSet, Said, Started
from abtui.ui.model.state import ConsoleState


class Recording(ReplayController):
    def __init__(self) -> None:
        super().__init__(synthetic_profile(2), [], speed=math.inf)
        self.asked: list[str] = []
        self.refuse = False

    async def connect(self) -> None:
        self.asked.append("connect")
        await super().connect()

    async def stop(self) -> None:
        self.asked.append("stop")
        await super().stop()

    async def start(self, mode="continuous") -> None:  # type: ignore[no-untyped-def]
        self.asked.append(f"start {mode}")

    async def set_knob(self, knob, value, pairs=None) -> None:  # type: ignore[no-untyped-def]
        if self.refuse:
            raise KnobRefused(f"{knob} is not writable")
        self.asked.append(f"set {knob}={value}")

    async def mark(self, text: str) -> None:
        raise OSError("the journal is gone")


def _calls() -> tuple[ControllerCalls, Recording, list[Message]]:
    ctl, posted = Recording(), []
    return (ControllerCalls(ControllerSession(ctl), ConsoleState(ctl.profile), posted.append),
            ctl, posted)


async def test_start_connects_once_and_ends_what_runs_first_in_the_order_asked() -> None:
    calls, ctl, posted = _calls()
    await asyncio.gather(calls.start("plan"), calls.stop(), calls.start("continuous"))
    assert ctl.asked == ["connect", "stop", "start plan", "stop", "stop", "start continuous"]
    assert [m.mode for m in posted if isinstance(m, Started)] == ["plan", "continuous"]
    assert calls.mode == "continuous"


async def test_a_failed_call_is_posted_not_raised() -> None:
    calls, _, posted = _calls()
    await calls.mark("a note")
    (failed,) = posted
    assert isinstance(failed, Failed) and failed.text == "mark failed: OSError: the journal is gone"


async def _flip(calls: ControllerCalls, name: str, value: str, pairs: list[str]) -> None:
    """A knob's key as the console hands it over, and what it did posted."""
    calls.flip(name, value, pairs)
    await asyncio.gather(*calls.flips, return_exceptions=True)
    await asyncio.sleep(0)  # (what it did is posted by the task's done callback)


async def test_a_knob_already_set_is_said_and_a_refusal_names_its_pairs() -> None:
    calls, ctl, posted = _calls()
    calls.state.pairs["A"].config["tso"] = "on"  # as a KNOB event leaves it
    await _flip(calls, "tso", "on", ["A"])
    assert isinstance(posted[-1], Said) and "already" in posted[-1].line and not ctl.asked
    await _flip(calls, "tso", "off", ["A", "B"])
    assert ctl.asked == ["set tso=off"]
    assert isinstance(posted[-1], KnobSet) and posted[-1].pairs == ["A", "B"]
    ctl.refuse = True
    await _flip(calls, "tso", "bogus", ["B"])
    assert isinstance(posted[-1], Failed) and posted[-1].pairs == ["B"]
    assert "refused" in posted[-1].text
