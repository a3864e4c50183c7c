"""The console's flow helpers on their own: no app, only a list that keeps what they post
(abtui.ui.flow.messages) and one that keeps the workers they ask for. What the app does with
each message is tests/ui's; here, that the helpers say it as messages and act on the answers."""

from __future__ import annotations

import asyncio
import math
from collections.abc import Coroutine
from pathlib import Path
from typing import Any

from textual.message import Message

from abtui.measure.replay.controller import ReplayController
from abtui.measure.replay.synthetic import synthetic_profile
from abtui.measure.session import ControllerSession
from abtui.ui.flow.alternation import NO_PROFILE, ConsoleAlternation
from abtui.ui.flow.control import ControllerCalls
from abtui.ui.flow.files import SessionFiles
from abtui.ui.flow.knobkeys import KnobKeys
from abtui.ui.flow.leaving import Leaving
from abtui.ui.flow.messages import Done, Failed, Leave, Notice, ShowScreen, VerdictsShown
from abtui.ui.flow.on_disk import EventsOnDisk
from abtui.ui.model.bench import BenchProbe
from abtui.ui.model.state import ConsoleState
from abtui.ui.render.eventlog import EventLog


class Kit:
    """One console's helpers, given `post` and `run_worker` and never an app."""

    def __init__(self) -> None:
        self.ctl = ReplayController(synthetic_profile(2), [], speed=math.inf)
        self.state = ConsoleState(self.ctl.profile)
        self.posted: list[Message] = []
        self.workers: list[Any] = []
        self.flips: list[tuple[str, str, list[str]]] = []
        self.folded = 0
        self.session = ControllerSession(self.ctl)
        self.calls = ControllerCalls(self.session, self.state, self.post)
        self.alternation = ConsoleAlternation(self.post, self.run_worker, self.ctl.profile,
                                              self.state, self.calls)
        self.knobs = KnobKeys(self.post, self.ctl.profile, self.state, self.alternation,
                              lambda *flip: self.flips.append(flip))
        self.leaving = Leaving(self.post, self.run_worker, self.state, self.calls,
                               self.alternation, BenchProbe(None), self.fail, self.fold)

    def post(self, message: Message) -> bool:
        self.posted.append(message)
        return True

    def run_worker(self, work: Any, **options: Any) -> None:
        self.workers.append(work)

    def fail(self, text: str) -> None:
        self.posted.append(Failed(text))

    def fold(self) -> None:
        self.folded += 1

    def of(self, kind: type[Message]) -> list[Any]:
        return [m for m in self.posted if isinstance(m, kind)]


async def test_ctrl_q_shows_the_quit_screen_restores_then_leaves_and_twice_forces_out() -> None:
    kit = Kit()
    kit.leaving.quit()
    assert [type(m.screen).__name__ for m in kit.of(ShowScreen)] == ["QuitScreen"]
    assert not kit.of(Leave) and len(kit.workers) == 1  # the restore runs as a worker
    restore: Coroutine[Any, Any, None] = kit.workers[0]
    await restore
    assert kit.leaving.restore_outcome == "done" and kit.folded == 1
    assert [m.code for m in kit.of(Leave)] == [0]
    kit.leaving.quit()  # again, while leaving: out at once, with 1
    assert [m.code for m in kit.of(Leave)] == [0, 1] and kit.leaving.forced_out


async def test_a_restore_that_raises_is_said_and_leaves_with_1() -> None:
    kit = Kit()

    async def broken() -> None:
        raise OSError("host A gone")

    kit.calls.shutdown = broken  # type: ignore[method-assign]
    kit.leaving.quit()
    await kit.workers[0]
    assert [m.text for m in kit.of(Failed)] == ["restoring failed: OSError: host A gone"]
    assert [m.code for m in kit.of(Leave)] == [1]


async def test_the_tunnel_switcher_is_posted_and_its_choice_flips_the_knob() -> None:
    kit = Kit()
    kit.knobs.tunnel(["A"])
    (shown,) = kit.of(ShowScreen)
    assert type(shown.screen).__name__ == "TunnelSwitcher" and shown.chosen is not None
    shown.chosen("wireguard")  # what the dialog returns, handed back by the app
    shown.chosen(None)  # escape: nothing
    assert kit.flips == [("tunnel", "wireguard", ["A"])]
    assert kit.alternation.last_knob == "tunnel"


async def test_the_alternation_posts_its_panel_and_its_notices() -> None:
    kit = Kit()
    kit.alternation.show()
    kit.alternation.toggle_why()
    kit.alternation.next_min_effect()
    panels = kit.of(VerdictsShown)
    assert [(p.lines, p.ended) for p in panels] == [(None, False), ([NO_PROFILE], False)]
    assert [n.text for n in kit.of(Notice)] == [f"min effect {kit.alternation.min_effect:g}%"]
    kit.alternation.show_recorded(["a journalled verdict"])
    assert kit.of(VerdictsShown)[-1].lines == ["a journalled verdict"]
    assert kit.of(VerdictsShown)[-1].ended


async def test_a_file_job_posts_what_it_did_or_why_it_failed(tmp_path: Path) -> None:
    kit = Kit()
    on_disk = EventsOnDisk(None, "synthetic", ["A", "B"])
    files = SessionFiles(kit.post, kit.run_worker, kit.session, kit.state, on_disk, EventLog(),
                         width=lambda: 120, save_dir=tmp_path)

    def gone() -> str:
        raise OSError("disk full")

    files._job("save", lambda: "saved 3 events to x")
    await asyncio.to_thread(files._job, "export", gone)  # from a thread, as the worker does
    assert [m.line for m in kit.of(Done)] == ["saved 3 events to x"]
    assert [m.text for m in kit.of(Failed)] == ["export failed: disk full"]
    files.export()  # the dialog is posted; its answer is handed back
    (prompt,) = kit.of(ShowScreen)
    assert type(prompt.screen).__name__ == "PathPrompt" and prompt.chosen is not None
    on_disk.close()  # its spool removed
