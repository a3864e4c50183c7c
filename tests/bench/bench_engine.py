"""The engine on a lab of its own: start skew between pairs, and fidelity against bare iperf3.

- `start_skew_p95_ms` (budget ≤ 5 ms): ≥ 20 synchronized starts of 2 lab pairs (a plan of
  1 s runs); each start's skew is the spread of the hosts' clocks read at release.
- `fidelity_ratio` (budget ≥ 0.98): the receiver throughput of pair A measured through abtui
  ÷ the same iperf3 run bare (`ip netns exec`, no SSH, no abtui), alternated, medians.
"""

from __future__ import annotations

import asyncio
import statistics
import subprocess
import tempfile
import time
from pathlib import Path

from abtui.engine import Engine
from abtui.lab import Lab
from abtui.model import EventKind, Pair, Plan, Profile, TestOptions
from abtui.parse import parse_iperf3_text

STARTS = 20
FIDELITY_ROUNDS = 9
FIDELITY_SECONDS = 3


def _lab(tmp: Path) -> Lab:
    return Lab(name="blab2", octet=19, ifprefix="abg", mgmt=228, state_dir=tmp / "blab2")


def _profile(lab: Lab, pairs: int, **test: object) -> Profile:
    hosts = lab.hosts(2)
    chosen = [Pair(label=hosts[i].pair, sender=hosts[i].alias, receiver=hosts[i + 1].alias,
                   target=hosts[i + 1].data_address) for i in (0, 2)][:pairs]
    options = TestOptions(**{"interval": 1.0, "ping": False, **test})  # type: ignore[arg-type]
    return Profile(name="bench", pairs=chosen, test=options, ssh_config=str(lab.ssh_config),
                   plan=Plan(shuffle=False, pause=0.2))


class _Rates:
    """Receiver throughput of every run that ended with a summary."""

    def __init__(self) -> None:
        self.values: list[float] = []

    def __call__(self, event) -> None:  # type: ignore[no-untyped-def]
        summary = event.data.get("summary") if event.kind is EventKind.RUN_END else None
        if summary and summary.get("receiver_bits_per_second"):
            self.values.append(summary["receiver_bits_per_second"])


async def _plan(engine: Engine) -> None:
    await engine.start("plan")
    await engine.wait()
    await engine.stop()


async def _skews(profile: Profile) -> list[float]:
    engine = Engine(profile)
    try:
        await engine.connect()
        await _plan(engine)
    finally:
        await engine.shutdown()
    return engine.skews


def _with_lab(measure):  # type: ignore[no-untyped-def]
    with tempfile.TemporaryDirectory(prefix="abtui-bench-") as tmp:
        lab = _lab(Path(tmp))
        lab.down()
        lab.up(pairs=2)
        try:
            return measure(lab)
        finally:
            lab.down()


def start_skew_p95_ms() -> dict:
    def measure(lab: Lab) -> dict:
        profile = _profile(lab, 2, duration=1)
        profile.plan.repetitions = STARTS
        skews = asyncio.run(_skews(profile))
        assert len(skews) >= STARTS, f"only {len(skews)} synchronized starts"
        p95 = statistics.quantiles(skews, n=20, method="inclusive")[18]
        return {"name": "start_skew_p95_ms", "value": round(p95, 2), "unit": "ms",
                "budget": "<= 5",
                "note": f"{len(skews)} starts of 2 pairs, median {statistics.median(skews):.2f}"
                        f" ms, max {max(skews):.2f} ms (hosts' clocks at release)"}
    return _with_lab(measure)


def _bare_rate(lab: Lab) -> float:
    """iperf3 run by hand in the lab's namespaces: receiver bits per second."""
    snd, rcv = lab.hosts(1)
    server = subprocess.Popen(["ip", "netns", "exec", rcv.netns, "iperf3", "-s", "-1", "-p",
                               "5301"], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        time.sleep(0.3)
        out = subprocess.run(["ip", "netns", "exec", snd.netns, "iperf3", "-c",
                              rcv.data_address, "-p", "5301", "-t", str(FIDELITY_SECONDS),
                              "-i", "1"], capture_output=True, text=True, check=True)
    finally:
        server.terminate()
        server.wait()
    # read as abtui reads its own runs' output: both arms carry iperf3's printed precision
    rate = parse_iperf3_text(out.stdout).summary.receiver_bits_per_second
    assert rate, out.stdout
    return rate


async def _fidelity(lab: Lab) -> tuple[list[float], list[float]]:
    engine = Engine(_profile(lab, 1, duration=FIDELITY_SECONDS))
    through = _Rates()
    engine.subscribe(through)
    bare: list[float] = []
    try:
        await engine.connect()
        for i in range(FIDELITY_ROUNDS):  # alternated A B B A ..., so drift hits both alike
            arms = [_plan(engine), asyncio.to_thread(lambda: bare.append(_bare_rate(lab)))]
            for arm in arms if i % 2 == 0 else arms[::-1]:
                await arm
    finally:
        await engine.shutdown()
    return through.values, bare


def fidelity_ratio() -> dict:
    def measure(lab: Lab) -> dict:
        through, bare = asyncio.run(_fidelity(lab))
        assert len(through) == len(bare) == FIDELITY_ROUNDS, (through, bare)
        ratio = statistics.median(through) / statistics.median(bare)
        paired = statistics.median(a / b for a, b in zip(through, bare, strict=True))
        return {"name": "fidelity_ratio", "value": round(ratio, 3), "unit": "ratio",
                "budget": ">= 0.98",
                "note": f"pair A, {FIDELITY_SECONDS} s runs, {FIDELITY_ROUNDS} each alternated:"
                        f" median {statistics.median(through) / 1e9:.2f} Gbit/s through abtui,"
                        f" {statistics.median(bare) / 1e9:.2f} Gbit/s bare; median of the"
                        f" {FIDELITY_ROUNDS} side-by-side ratios {paired:.3f}"}
    return _with_lab(measure)


RECORDS = [start_skew_p95_ms, fidelity_ratio]
