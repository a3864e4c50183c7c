"""Knob flips on the 4 hosts of a lab of its own, abtui's control shells against OpenSSH
measured side by side in the same run: one fresh `ssh` per host in sequence (what a script
does), and the way an experienced user scripts it, ControlMaster connections already open and
the 4 hosts in parallel."""

from __future__ import annotations

import asyncio
import statistics
import subprocess
import time

from abtui.core.model import Knob, KnobKind
from abtui.hosts.connect import open_hosts
from abtui.hosts.knobs import KnobManager, resolve_targets
from abtui.lab.netns import Lab
from abtui.profile import load_profile
from abtui.remote.linux import Linux
from tests.bench.judge import measures
from tests.bench.labs import with_lab

KEY = "net.ipv4.tcp_syn_retries"
FLIPS = 60
OPENSSH_FLIPS = 5
MUX_FLIPS = 20


async def _abtui_flips(lab: Lab, fast: bool) -> tuple[list[float], float]:
    """The flips' wall times (ms), and this process's CPU per flip (ms): the figure the
    machine's load inflates least."""
    profile = load_profile(lab.profile_path)
    hosts = await open_hosts(profile)
    if hosts.errors:
        raise RuntimeError(f"bench lab hosts failed: {hosts.errors}")
    dialects = {a: Linux(fast_sysctl=fast) for a in hosts.dialects}
    manager = KnobManager(hosts.links, dialects)
    knob = Knob("syn", KnobKind.SYSCTL, ("5", "6"), key=KEY)
    targets = resolve_targets(profile.pairs, knob)
    times = []
    try:
        await manager.apply(knob, "6", targets)  # warm up
        cpu = time.process_time()
        for i in range(FLIPS):
            value = ("5", "6")[i % 2]
            t0 = time.perf_counter()
            result = await manager.apply(knob, value, targets)
            times.append((time.perf_counter() - t0) * 1000)
            assert set(result.values.values()) == {value} and len(result.values) == 4
        cpu = (time.process_time() - cpu) * 1000 / FLIPS
    finally:
        await manager.restore_all()
        await hosts.close()
    return times, cpu


def _openssh_flips(lab: Lab) -> list[float]:
    aliases = [h.alias for h in lab.hosts(2)]
    times = []
    for i in range(OPENSSH_FLIPS):
        value = ("5", "6")[i % 2]
        t0 = time.perf_counter()
        for alias in aliases:  # by hand: one ssh per host, in sequence, write then read back
            out = subprocess.run(["ssh", "-F", str(lab.ssh_config), alias, _flip_command(value)],
                                 capture_output=True, text=True, check=True).stdout
            assert out.strip() == value
        times.append((time.perf_counter() - t0) * 1000)
    return times


def _flip_command(value: str) -> str:
    return f"sysctl -w {KEY}={value} >/dev/null && sysctl -n {KEY}"


def _mux_flips(lab: Lab) -> list[float]:
    """OpenSSH multiplexed: a ControlMaster per host opened beforehand (not timed), then each
    flip one `ssh` per host over its master, the 4 in parallel, write then read back."""
    aliases = [h.alias for h in lab.hosts(2)]
    base = ["ssh", "-F", str(lab.ssh_config), "-o", f"ControlPath={lab.state_dir}/cm-%C"]
    times = []
    try:
        for alias in aliases:
            subprocess.run([*base, "-o", "ControlMaster=yes", "-o", "ControlPersist=600", "-N",
                            "-f", alias], check=True, capture_output=True, timeout=30)
        for i in range(MUX_FLIPS + 1):  # the first one warms up
            value = ("5", "6")[i % 2]
            t0 = time.perf_counter()
            procs = [subprocess.Popen([*base, alias, _flip_command(value)],
                                      stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
                     for alias in aliases]
            outs = [p.communicate(timeout=30) for p in procs]
            elapsed = (time.perf_counter() - t0) * 1000
            for p, (out, err) in zip(procs, outs, strict=True):
                assert p.returncode == 0 and out.strip() == value, (p.returncode, out, err)
            if i:
                times.append(elapsed)
    finally:
        for alias in aliases:
            subprocess.run([*base, "-O", "exit", alias], capture_output=True, timeout=30)
    return times


@measures("knob_flip_4hosts_median_ms", "knob_flip_vs_openssh_ratio",
          "knob_flip_vs_openssh_mux_ratio")
def knob_flips() -> list[dict]:
    def measure(lab: Lab) -> tuple[tuple[list[float], float], tuple[list[float], float],
                                   list[float], list[float]]:
        fast = asyncio.run(_abtui_flips(lab, fast=True))
        classic = asyncio.run(_abtui_flips(lab, fast=False))
        return fast, classic, _openssh_flips(lab), _mux_flips(lab)

    (fast, fast_cpu), (classic, _cpu), openssh, mux = with_lab(2, measure)
    fast_ms = statistics.median(fast)
    classic_ms = statistics.median(classic)
    ssh_ms = statistics.median(openssh)
    mux_ms = statistics.median(mux)
    return [
        {"name": "knob_flip_4hosts_median_ms", "value": round(fast_ms, 2), "unit": "ms",
         "note": f"{FLIPS} flips, read+write+read back via /proc/sys builtins, "
                 f"client CPU {fast_cpu:.2f} ms a flip; "
                 f"with sysctl(8) instead: {classic_ms:.2f} ms"},
        {"name": "knob_flip_vs_openssh_ratio", "value": round(ssh_ms / fast_ms, 1),
         "unit": "x",
         "note": f"OpenSSH, one fresh ssh per host in sequence: median {ssh_ms:.0f} ms "
                 f"of {OPENSSH_FLIPS} flips, same run"},
        {"name": "knob_flip_vs_openssh_mux_ratio", "value": round(mux_ms / fast_ms, 1),
         "unit": "x",
         "note": f"OpenSSH over ControlMaster connections opened beforehand, 4 hosts in "
                 f"parallel: median {mux_ms:.1f} ms of {MUX_FLIPS} flips, same run"},
    ]


RECORDS = [knob_flips]
