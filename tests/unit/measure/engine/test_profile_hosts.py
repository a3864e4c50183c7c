"""Which hosts a profiled run profiles: each with perf once, namespace hosts sharing one
machine's kernel only once (their profile is the machine's), and a host without perf said
once when the session connects, never per run."""

from __future__ import annotations

import asyncio
import os
import shutil
import subprocess
from dataclasses import dataclass

import pytest

from abtui.core.events import AnyEvent, EventKind
from abtui.core.model import Pair, Profile
from abtui.core.model import TestOptions as Options
from abtui.measure.engine.front import Engine
from abtui.remote.iperf_cmd import parse_tools, tools_command


def _profile(hz: int) -> Profile:
    return Profile(name="p", pairs=[Pair(label="A", sender="s1", receiver="r1", target="t"),
                                    Pair(label="B", sender="s2", receiver="r2", target="t")],
                   test=Options(profile_hz=hz))


@dataclass
class _Said:
    stdout: str


class _Link:
    def __init__(self, alias: str, perf: bool) -> None:
        self.alias = alias
        self._perf = perf

    async def run(self, command: str, **_: object) -> _Said:
        return _Said("iperf 3.12\n__abtui_bash\n" + ("__abtui_perf\n" if self._perf else ""))


def test_the_tools_question_finds_perf_on_the_path(tmp_path) -> None:
    fake = tmp_path / "perf"
    fake.write_text("#!/bin/sh\n")
    fake.chmod(0o755)
    env = {**os.environ, "PATH": f"{tmp_path}:{os.environ['PATH']}"}
    out = subprocess.run(["sh", "-c", tools_command("iperf3")], capture_output=True,
                         text=True, env=env, check=True).stdout
    assert parse_tools(out).perf
    bare = {**os.environ, "PATH": str(tmp_path / "none")}
    sh = shutil.which("sh") or "/bin/sh"
    out = subprocess.run([sh, "-c", tools_command("iperf3")], capture_output=True, text=True,
                         env=bare).stdout
    assert not parse_tools(out).perf


@pytest.mark.parametrize("hz", [0, 99])
def test_a_host_without_perf_is_said_once_and_only_when_profiling(hz: int) -> None:
    engine = Engine(_profile(hz), use_journal=False)
    seen: list[AnyEvent] = []
    engine.subscribe(seen.append)
    pool = engine.hosts
    for alias, perf in (("s1", True), ("r1", False)):
        asyncio.run(pool._detect(_Link(alias, perf), "iperf3"))  # type: ignore[arg-type]
    said = [e for e in seen if e.kind is EventKind.ERROR and "perf is not installed" in
            str(e.record())]
    assert [e.host for e in said] == (["r1"] if hz else [])


def test_shared_hosts_are_profiled_once_and_own_hosts_each() -> None:
    engine = Engine(_profile(99), use_journal=False)
    pool = engine.hosts
    for alias in ("s1", "r1", "s2", "r2"):
        pool.has_perf[alias] = alias != "r2"
    pool.cpu_shared.update({"s1", "r1", "s2"})  # namespace hosts of one machine; r2 its own
    runs = engine.runs
    both = ("A", "B")
    a = runs._profiled(engine.profile.pairs[0], 99, both)
    b = runs._profiled(engine.profile.pairs[1], 99, both)
    assert set(a) == {"s1"} and a["s1"].shared and a["s1"].hz == 99
    assert set(b) == set()  # s2 shares s1's machine; r2 has no perf
    assert runs._profiled(engine.profile.pairs[0], 0, both) == {}


def test_a_pair_run_alone_profiles_the_shared_machine_itself() -> None:
    """Pair B run without A (a crossover's leg, a stop of A): the machine's profile is B's,
    not left to an A that is not running."""
    engine = Engine(_profile(99), use_journal=False)
    pool = engine.hosts
    for alias in ("s1", "r1", "s2", "r2"):
        pool.has_perf[alias] = True
    pool.cpu_shared.update({"s1", "r1", "s2", "r2"})
    runs = engine.runs
    alone = runs._profiled(engine.profile.pairs[1], 99, ("B",))
    assert set(alone) == {"s2"} and alone["s2"].shared
