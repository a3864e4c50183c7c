"""A profiled run starts its hosts' profile loops before it releases the traffic and waits
(bounded) until perf is through its start-up, so the run's first second does not pay for it;
the windows that ended before the release are dropped."""

from __future__ import annotations

import asyncio
import time
from types import SimpleNamespace
from typing import Any

from abtui.core.folded import unpack
from abtui.measure.run.profiler import ProfileSampler
from abtui.measure.run.sampling import RunSamplers


class _Ctx:
    def __init__(self) -> None:
        self.spec = SimpleNamespace(run_id="r1")
        self.sender = SimpleNamespace(alias="s")
        self.events: list[Any] = []

    def event(self, payload: Any, host: str | None = None, t: float | None = None) -> None:
        self.events.append(payload)


def _sampler(ctx: _Ctx) -> ProfileSampler:
    spec = SimpleNamespace(command="loop", hz=99, shared=False, counters=None)
    return ProfileSampler(ctx, ctx.sender, spec)  # type: ignore[arg-type]


def test_ready_comes_with_the_first_sample_or_a_refusal() -> None:
    async def go() -> None:
        ctx = _Ctx()
        sampler = _sampler(ctx)
        sampler._take(["@ABTUI-PROFILE event cpu-clock"])
        assert not sampler.ready.is_set()  # perf record has not sampled yet
        sampler._take(["@R"])
        assert sampler.ready.is_set()
        refused = _sampler(_Ctx())
        refused._take(["@ABTUI-PROFILE none perf is not installed (Debian: linux-perf)"])
        assert refused.ready.is_set()  # nothing to wait for

    asyncio.run(go())


def test_windows_that_ended_before_the_release_are_dropped() -> None:
    async def go() -> None:
        ctx = _Ctx()
        sampler = _sampler(ctx)
        now = time.time()
        # the host's clock 1000 s behind: dated by arrival, as every window
        sampler._take(["@R", f"@W {now - 1002:.3f} {now - 1001:.3f} 3", "3 idle;swapper", "@E"])
        sampler.since = now - 0.5  # the release
        sampler._take([f"@W {now - 1001:.3f} {now - 1000:.3f} 2", "2 iperfN;tcp_sendmsg",
                       "@E"])
        kept = [e for e in ctx.events if type(e).__name__ == "Profiled"]
        assert len(kept) == 1 and unpack(kept[0].stacks) == {"iperfN;tcp_sendmsg": 2}

    asyncio.run(go())


def test_the_release_waits_for_the_slowest_loop_but_not_forever() -> None:
    async def go() -> None:
        ctx = _Ctx()
        samplers = RunSamplers.__new__(RunSamplers)
        fast, slow = _sampler(ctx), _sampler(ctx)
        samplers._profiles = [fast, slow]
        fast.ready.set()
        t0 = time.monotonic()
        await samplers.profiles_ready(timeout=0.3)  # the slow one never says: bounded
        assert 0.25 <= time.monotonic() - t0 < 2
        asyncio.get_running_loop().call_later(0.1, slow.ready.set)
        t0 = time.monotonic()
        await samplers.profiles_ready(timeout=5)
        assert time.monotonic() - t0 < 1

    asyncio.run(go())


def test_windows_folded_after_the_run_are_dated_by_the_ready_mark_not_their_arrival() -> None:
    """The host folds once the run is over: its windows come seconds late, and are placed by
    `@R`'s arrival and the first sample's time (the host's clock 1000 s behind)."""
    async def go() -> None:
        ctx = _Ctx()
        sampler = _sampler(ctx)
        sampler.since = 0.0
        sampler._take(["@R"])  # perf enabled: its first sample follows within a period
        ready = sampler._ready_at
        assert ready is not None
        host = ready - 1000
        await asyncio.sleep(0.6)  # the run goes on; then the fold comes
        sampler._take([f"@F {host + 0.01:.6f}", f"@W {host:.6f} {host + 0.2:.6f} 2",
                       "2 iperfN;tcp_sendmsg", "@E"])
        (window,) = [e for e in ctx.events if type(e).__name__ == "Profiled"]
        assert abs(window.start - ready) < 0.05  # not 0.4 s late, as its arrival says

    asyncio.run(go())


def test_finish_closes_the_loops_stdin_and_waits_for_its_windows() -> None:
    async def go() -> None:
        ctx = _Ctx()
        sampler = _sampler(ctx)
        closed: list[bool] = []
        sampler._proc = SimpleNamespace(close_stdin=lambda: closed.append(True))  # type: ignore[assignment]
        asyncio.get_running_loop().call_later(0.2, sampler._done.set)  # the fold ended
        t0 = time.monotonic()
        await sampler.finish(timeout=5)
        assert closed == [True] and 0.15 < time.monotonic() - t0 < 2
        hung = _sampler(ctx)
        t0 = time.monotonic()
        await hung.finish(timeout=0.2)  # a loop that never ends: bounded
        assert time.monotonic() - t0 < 1

    asyncio.run(go())


def test_counters_start_with_the_profiles_and_keep_their_samples_from_the_release() -> None:
    """The counters loop starts ahead of the release too (its start is not the run's to pay);
    a sample it took before the release only helps date the rest."""
    from abtui.measure.run.profiler import CounterSampler

    started: list[str] = []

    class _Loop:
        def __init__(self, ctx: Any, link: Any, spec: Any) -> None:
            self.since: float | None = None
            self.ready = asyncio.Event()

        async def run(self) -> None:
            started.append(type(self).__name__)

    class _Profile(_Loop):
        pass

    class _Counters(_Loop):
        pass

    async def go() -> None:
        ctx = _Ctx()
        ctx.receiver = ctx.sender  # type: ignore[attr-defined]
        ctx.spec.profile_commands = {"s": SimpleNamespace(counters="loop")}  # type: ignore[attr-defined]
        samplers = RunSamplers(ctx, lambda *a: None,  # type: ignore[arg-type]
                               profilers=(_Profile, _Counters))  # type: ignore[arg-type]
        samplers.start_profiles()
        await asyncio.sleep(0)
        assert sorted(started) == ["_Counters", "_Profile"]  # before any release
        samplers.cancel()

        counters = CounterSampler(ctx, ctx.sender,  # type: ignore[arg-type]
                                  SimpleNamespace(counters="loop", shared=False))  # type: ignore[arg-type]
        now = time.time()
        counters._take([f"@C {now - 1001:.3f}", "nstat TcpInSegs 1", "@E"])
        counters.since = now - 0.5  # the release
        counters._take([f"@C {now - 1000:.3f}", "nstat TcpInSegs 9", "@E"])
        kept = [e for e in ctx.events if type(e).__name__ == "CountersSampled"]
        assert len(kept) == 1 and unpack(kept[0].values) == {"nstat.TcpInSegs": 9}

    asyncio.run(go())
