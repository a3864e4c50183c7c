"""CPU cost on real lab hosts: iperf3's own CPU figures recorded as iperf3 printed them, and
each host's CPU time sampled during the run, the namespace hosts' said to be the machine's."""

from __future__ import annotations

import dataclasses
import os
import re

import pytest

from abtui.core.events import EventKind
from abtui.lab.netns import Lab
from abtui.remote.iperf_cmd import CPU_END_MARK
from abtui.sessions.session import Session
from tests.lab.engine_kit import lab_profile, run_plan, until
from tests.lab.namespaces import netns_processes

pytestmark = [pytest.mark.lab, pytest.mark.usefixtures("no_strays")]

# iperf3's -V line, read here independently of abtui's parser
CPU_LINE = re.compile(r"CPU Utilization: local/(\w+) ([\d.]+)% \(([\d.]+)%u/([\d.]+)%s\), "
                      r"remote/(\w+) ([\d.]+)% \(([\d.]+)%u/([\d.]+)%s\)")


def printed_cpu(lines: list[str]) -> dict[str, dict[str, float]]:
    (m,) = [m for m in map(CPU_LINE.search, lines) if m][:1]
    g = m.groups()
    return {g[0]: dict(zip(("total", "user", "system"), map(float, g[1:4]), strict=True)),
            g[4]: dict(zip(("total", "user", "system"), map(float, g[5:8]), strict=True))}


async def test_recorded_cpu_is_what_iperf3_printed_and_hosts_are_sampled(lab: Lab):
    profile = lab_profile(lab, duration=3)
    # A receives (-R): only its server, the sender, prints a CPU line in text mode
    profile.pairs[0] = dataclasses.replace(profile.pairs[0], overrides={"reverse": True})
    rec, _ = await run_plan(profile)
    starts = {e.pair: e.payload.run for e in rec.of(EventKind.RUN_START)}

    forward = rec.run_end(starts["B"])
    assert forward["status"] == "ok"
    cpu = printed_cpu(rec.raw[starts["B"]])
    assert forward["summary"]["sender_cpu"] == cpu["sender"]
    assert forward["summary"]["receiver_cpu"] == cpu["receiver"]

    reverse = rec.run_end(starts["A"])
    assert reverse["status"] == "ok"
    assert not any(CPU_LINE.search(x) for x in rec.raw[starts["A"]])  # iperf3 3.12's client
    server = printed_cpu(rec.raw[starts["A"] + "/server"])
    assert reverse["summary"]["sender_cpu"] == server["sender"]
    assert reverse["summary"]["receiver_cpu"] is None  # iperf3 never printed it

    # every host sampled once a second (the 0.5 s interval is shorter), all CPUs in each
    hosts = lab.hosts(2)
    samples = rec.of(EventKind.CPU)
    by_host = {h.alias: [e.record() for e in samples if e.host == h.alias] for h in hosts}
    for alias, got in by_host.items():
        assert len(got) >= 2, alias
        assert all(len(d["total"]) == 6 and len(d["cpus"]) == os.cpu_count() for d in got)
        assert all(sum(d["total"]) > 0 for d in got)
    facts = {e.host: e.payload.facts for e in rec.of(EventKind.FACTS)}
    assert {f["cpu_scope"] for f in facts.values()} == {"shared"}

    session = Session.from_events(rec.events)
    from abtui.reports.report import markdown

    report = markdown(session, chart=False)
    # every host is a namespace of one machine: the section is one line, no table of
    # `shared` cells, and iperf3's own figures stay in the runs table
    cpu_section = report.split("## CPU cost per configuration", 1)[1].split("\n## ", 1)[0]
    assert "No CPU figure per pair" in cpu_section
    assert all(h.alias in cpu_section for h in hosts)
    assert "### Sender CPU" not in report
    runs = report.split("## Runs", 1)[1]
    s = cpu["sender"]
    assert f"{s['total']:.1f} ({s['user']:.1f}u/{s['system']:.1f}s)" in runs


def _cpu_loops(lab: Lab) -> dict[str, list[int]]:
    """The host CPU loops running on the lab's hosts (their command line has the end mark)."""
    out: dict[str, list[int]] = {}
    for h in lab.hosts(2):
        for pid, _comm, cmdline, state in netns_processes(h.netns):
            if CPU_END_MARK in cmdline and not state.startswith("Z"):
                out.setdefault(h.alias, []).append(pid)
    return out


async def test_the_cpu_loops_run_during_a_run_and_are_gone_once_it_ended(lab: Lab):
    """One loop per host while the runs sample, none left once they ended, the links still
    up (a link's close would end them anyway: that is not the run's cleanup)."""
    seen: dict[str, list[int]] = {}
    left: dict[str, list[int]] = {}

    async def during(rec, engine) -> None:  # type: ignore[no-untyped-def]
        await until(lambda: len({e.host for e in rec.of(EventKind.CPU)}) == 4, 20.0)
        seen.update(_cpu_loops(lab))
        await engine.wait()
        left.update(_cpu_loops(lab))

    rec, _ = await run_plan(lab_profile(lab, duration=3), during=during)
    assert all(rec.run_end(e.payload.run)["status"] == "ok" for e in rec.of(EventKind.RUN_START))
    assert sorted(seen) == sorted(h.alias for h in lab.hosts(2))
    assert all(len(pids) == 1 for pids in seen.values()), seen
    assert left == {}, f"host CPU loops left after the runs: {left}"
