"""What host CPU sampling ([test] host_cpu, on by default) costs, on a lab of its own: one
round trip per host and sample over the host's control shell. Measured: the round trip, the
CPU the host spends per sample (every process of the host's namespace: sshd and the control
shell, read from /proc before and after), the controller's CPU per sample (asyncssh, parsing,
the ticks since the previous sample) and the bytes one sample adds to a session file."""

from __future__ import annotations

import asyncio
import gzip
import json
import os
import statistics
import subprocess
import time

from abtui.core.events import Cpu, Event
from abtui.hosts.connect import open_hosts
from abtui.lab.netns import Lab
from abtui.parse.cputimes import parse_cpu_times, since
from abtui.profile import load_profile
from abtui.remote.os.linux.knobs import Linux
from tests.bench.cputime import CpuReading, cpu_used, read_cpu
from tests.bench.judge import measures
from tests.bench.labs import with_lab

SAMPLES = 200


def _ns_cpu(netns: str) -> CpuReading:
    """The CPU time of every process in a namespace (PID namespaces are shared: only the
    namespace's own PIDs, as `ip netns pids` lists them)."""
    pids = subprocess.run(["ip", "netns", "pids", netns], capture_output=True,
                          text=True).stdout.split()
    return read_cpu(int(pid) for pid in pids)


async def _sample(lab: Lab) -> dict[str, float]:
    profile = load_profile(lab.profile_path)
    hosts = await open_hosts(profile)
    if hosts.errors:
        raise RuntimeError(f"bench lab hosts failed: {hosts.errors}")
    host = lab.hosts(1)[0]
    link = hosts.links[host.alias]
    command = Linux.cpu_times_command
    try:
        before = parse_cpu_times(await link.check(command))  # warm up
        times, events = [], []
        ns0, cpu0 = _ns_cpu(host.netns), time.process_time()
        for _ in range(SAMPLES):
            t0 = time.perf_counter()
            now = parse_cpu_times(await link.check(command))
            times.append((time.perf_counter() - t0) * 1000)
            assert before is not None and now is not None
            got = since(before, now)
            before = now
            if got is not None:
                events.append(Event.of(Cpu(run="A-1", role="sender", phase=0, straddles=False,
                                           total=got[0], cpus=got[1]), pair="A", host=host.alias))
        ctl = time.process_time() - cpu0
        ns = cpu_used(ns0, _ns_cpu(host.netns))
    finally:
        await hosts.close()
    lines = "".join(json.dumps(e.to_json(), separators=(",", ":")) + "\n" for e in events)
    return {"rtt_ms": statistics.median(times), "p95_ms": sorted(times)[int(0.95 * SAMPLES)],
            "host_us": ns / SAMPLES * 1e6, "ctl_us": ctl / SAMPLES * 1e6,
            "line_bytes": len(lines) / max(1, len(events)),
            "gz_bytes": len(gzip.compress(lines.encode())) / max(1, len(events))}


@measures("host_cpu_sample_ms", "host_cpu_host_us_per_sample",
          "host_cpu_controller_us_per_sample", "host_cpu_session_bytes_per_sample")
def host_cpu_sampling() -> list[dict]:  # type: ignore[type-arg]
    r = with_lab(1, lambda lab: asyncio.run(_sample(lab)))
    cpus = os.cpu_count()
    return [
        {"name": "host_cpu_sample_ms", "value": round(r["rtt_ms"], 2), "unit": "ms",
         "note": f"one sample's round trip over the control shell, median of {SAMPLES} "
                 f"(p95 {r['p95_ms']:.2f} ms); one per host per interval (≥ 1 s)"},
        {"name": "host_cpu_host_us_per_sample", "value": round(r["host_us"]),
         "unit": "us", "note": "CPU time of every process of the sampled host's namespace "
                               "(sshd, control shell) per sample, from their threads' schedstat"},
        {"name": "host_cpu_controller_us_per_sample", "value": round(r["ctl_us"]),
         "unit": "us", "note": "abtui's own CPU per sample (asyncssh, parsing, ticks since)"},
        {"name": "host_cpu_session_bytes_per_sample", "value": round(r["line_bytes"]),
         "unit": "B", "note": f"one cpu event line, {cpus} CPUs; {r['gz_bytes']:.0f} B "
                              "gzipped (the finished file)"},
    ]




def _console_pair(lab: Lab) -> tuple[list[float], list[float]]:
    """The live console's CPU % with host CPU sampling on (the lab profile as it is) and off
    (a copy with `host_cpu = false`), alternated twice in one run."""
    from tests.bench.bench_ui import WINDOW, run_console

    text = lab.profile_path.read_text()
    off = lab.profile_path.with_name("lab-nocpu.toml")
    off.write_text(text.replace("[test]\n", "[test]\nhost_cpu = false\n", 1))
    on_pct, off_pct = [], []
    for _ in range(2):
        on_pct.append(run_console([str(lab.profile_path)], WINDOW, warmup=5.0)["cpu_pct"])
        off_pct.append(run_console([str(off)], WINDOW, warmup=5.0)["cpu_pct"])
    return on_pct, off_pct


@measures("host_cpu_console_cost_pct")
def host_cpu_console_cost() -> list[dict]:  # type: ignore[type-arg]
    on_pct, off_pct = with_lab(2, _console_pair)
    cost = statistics.median(on_pct) - statistics.median(off_pct)
    return [{"name": "host_cpu_console_cost_pct", "value": round(cost, 2), "unit": "%",
             "note": "live `abtui tui`, 2 pairs at 1 s (4 hosts sampled once a second): CPU "
                     f"% with host_cpu on {', '.join(f'{x:.2f}' for x in on_pct)} minus off "
                     f"{', '.join(f'{x:.2f}' for x in off_pct)} (medians), alternated"}]


RECORDS = [host_cpu_sampling, host_cpu_console_cost]
