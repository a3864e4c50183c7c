"""A pair is never silently left out of a continuous run (abtui.measure.engine.front.Engine's
pair loop): a run cut by a lost link whose hosts do not come back within RECONNECT_WAIT_S is
said in one line naming the pair and waited for, and the pair measures again once they are
back; a restart that did not start is tried again. The engine's run scheduler is a fake here:
the loop's decisions are what is tested."""

from __future__ import annotations

import asyncio
from types import SimpleNamespace
from typing import Any

import pytest

from abtui.core.events import EventKind
from abtui.measure.engine import front
from abtui.measure.engine.front import Engine
from tests.profiles import profile
from tests.reliability import Reliability


class _Link:
    def __init__(self) -> None:
        self.up = asyncio.Event()

    async def wait_connected(self, timeout: float | None = None) -> bool:
        try:
            await asyncio.wait_for(self.up.wait(), timeout)
        except TimeoutError:
            return False
        return True


def _run(status: str, links: tuple[_Link, _Link]) -> Any:
    finished = asyncio.Event()
    finished.set()
    return SimpleNamespace(label="A", status=status, spec=SimpleNamespace(seconds=60),
                           finished=finished, reader=SimpleNamespace(count=3, stalled=False),
                           sender=links[0], receiver=links[1], message="")


class _Runs:
    """A scheduler whose runs end as scripted: `ends` the statuses in order, then stop."""

    def __init__(self, ends: list[str], links: tuple[_Link, _Link],
                 refuse_starts: int = 0) -> None:
        self.ends, self.links, self.refuse = ends, links, refuse_starts
        self.stopping, self.started = False, 0

    async def stream(self, run: Any) -> Any:
        status = self.ends.pop(0) if self.ends else "ok"
        if not self.ends and status == "ok":
            self.stopping = True  # the script is done: the loop ends as on a stop
        return _run(status, self.links)

    async def prepare(self, labels: Any, seconds: int) -> list[Any]:
        return []

    async def start_group(self, labels: Any, seconds: int) -> list[Any]:
        if self.refuse:
            self.refuse -= 1
            return []
        self.started += 1
        return [_run("ok", self.links)]


def _engine(runs: _Runs) -> tuple[Engine, list[Any]]:
    engine = Engine(profile(),
                    use_journal=False)
    engine.runs = runs  # type: ignore[assignment]
    seen: list[Any] = []
    engine.subscribe(seen.append)
    return engine, seen


@pytest.mark.reliability(
    "34", "a pair whose run was cut and whose hosts stay away past the reconnect wait, or "
    "whose restart does not start (the engine's pair loop, fake scheduler)",
    "never silently left out: one line naming the pair, then it waits for its hosts and "
    "measures again once they are back; a restart that did not start is tried again")
async def test_a_pair_whose_hosts_stay_away_is_said_and_measures_again_once_back(
        monkeypatch: pytest.MonkeyPatch, reliability: Reliability) -> None:
    monkeypatch.setattr(front, "RECONNECT_WAIT_S", 0.05)
    monkeypatch.setattr(front, "PREARM_S", 60)
    links = (_Link(), _Link())
    runs = _Runs(["incomplete", "ok"], links)
    engine, seen = _engine(runs)
    loop = asyncio.ensure_future(engine._follow(_run("ok", links)))
    await asyncio.sleep(0.3)
    assert not loop.done()  # waiting for the hosts, not given up
    [said] = [e for e in seen if e.kind is EventKind.ERROR]
    assert said.pair == "A" and said.payload.message.startswith("pair A: its hosts have not "
                                                                "answered for 0.05 s")
    for link in links:
        link.up.set()
    await asyncio.wait_for(loop, 5)
    assert runs.started == 1  # measured again once they were back
    reliability.row(line=f"`{said.payload.message}`")


async def test_a_restart_that_did_not_start_is_tried_again(
        monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(front, "RETRY_BACKOFF_S", (0.01,))
    monkeypatch.setattr(front, "PREARM_S", 60)
    links = (_Link(), _Link())
    for link in links:
        link.up.set()
    runs = _Runs(["incomplete", "ok"], links, refuse_starts=2)
    engine, _seen = _engine(runs)
    await asyncio.wait_for(engine._follow(_run("ok", links)), 5)
    assert runs.started == 1 and runs.refuse == 0
