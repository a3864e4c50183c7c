"""When a pair's continuous loop gives up (abtui.measure.engine.front.never_measured): a run that
failed before its pair ever measured ends the loop only if starting again cannot help. A run
whose stream stalled before its first interval (a guest just booted onto another build, a host
under load) is started again; one that iperf3 itself ended is not. A PairRun on fake links,
each run to its real end."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator

from abtui.core import model
from abtui.core.events import Event
from abtui.measure.engine.front import never_measured
from abtui.measure.run import pair as runs
from abtui.measure.run.context import RunParsers, RunSpec
from abtui.remote.iperf_cmd import ARMED_MARK
from tests.unit.measure.run.owner import Owner
from tests.unit.measure.run.test_runs_arrival import _Link, _Parser, _Silent


class _Ends(_Silent):
    """A client that says it is armed, prints iperf3's error once released, and exits 1."""

    async def lines(self) -> AsyncIterator[str]:
        yield ARMED_MARK
        await self._released.wait()
        yield "iperf3: error - the server has terminated"

    async def wait(self, timeout: float | None = None) -> int | None:
        return 1


class _EndingLink(_Link):
    async def stream(self, command: str) -> _Silent:
        if " -s " in command:
            return _Silent(self, ["Server listening on 5201"], [])
        return _Ends(self, [], [])


async def _ran(sender: _Link) -> runs.PairRun:
    events: list[Event] = []
    spec = RunSpec(run_id="A-1", pair=model.Pair("A", "s", "r", "t"),
                   options=model.TestOptions(interval=0.1, ping=False), target="t", seconds=60,
                   port=5201)
    run = runs.PairRun(spec, sender, _Link("r"),  # type: ignore[arg-type]
                       Owner(events.append, lambda *_: (0, False)),
                       RunParsers(lambda _f: _Parser()))
    await run.prepare()
    run.release()
    assert await asyncio.wait_for(run.stream(), 10) == "error"
    assert run.reader.count == 0
    return run


async def test_a_stream_that_stalled_before_its_first_interval_is_started_again() -> None:
    run = await _ran(_Link("s"))  # armed, one line, then nothing: no interval ever
    assert run.reader.stalled and "stalled" in run.message
    assert not never_measured(run, measured=False)
    assert not never_measured(run, measured=True)


async def test_a_run_iperf3_ended_before_the_pair_measured_ends_its_loop() -> None:
    run = await _ran(_EndingLink("s"))
    assert not run.reader.stalled
    assert never_measured(run, measured=False)
    assert not never_measured(run, measured=True)  # it measured before: retried
