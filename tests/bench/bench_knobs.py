"""Knob flips on the 4 hosts of a lab of its own: abtui's control shells vs one fresh OpenSSH
`ssh` per host in sequence, measured side by side in the same run (DESIGN.md §5)."""

from __future__ import annotations

import asyncio
import statistics
import subprocess
import tempfile
import time
from pathlib import Path

from abtui.knobs import KnobManager, resolve_targets
from abtui.lab import Lab
from abtui.model import Knob, KnobKind
from abtui.profile import load_profile
from abtui.remote.dialects import Linux
from abtui.remote.hosts import open_hosts

KEY = "net.ipv4.tcp_syn_retries"
FLIPS = 60
OPENSSH_FLIPS = 5


def _bench_lab(tmp: Path) -> Lab:
    return Lab(name="blab", octet=19, ifprefix="abb", mgmt=230, state_dir=tmp / "blab")


async def _abtui_flips(lab: Lab, fast: bool) -> list[float]:
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
        for i in range(FLIPS):
            value = ("5", "6")[i % 2]
            t0 = time.perf_counter()
            result = await manager.apply(knob, value, targets)
            times.append((time.perf_counter() - t0) * 1000)
            assert set(result.values.values()) == {value} and len(result.values) == 4
    finally:
        await manager.restore_all()
        await hosts.close()
    return times


def _openssh_flips(lab: Lab) -> list[float]:
    aliases = [h.alias for h in lab.hosts(2)]
    times = []
    for i in range(OPENSSH_FLIPS):
        value = ("5", "6")[i % 2]
        t0 = time.perf_counter()
        for alias in aliases:  # by hand: one ssh per host, in sequence, write then read back
            out = subprocess.run(["ssh", "-F", str(lab.ssh_config), alias,
                                  f"sysctl -w {KEY}={value} >/dev/null && sysctl -n {KEY}"],
                                 capture_output=True, text=True, check=True).stdout
            assert out.strip() == value
        times.append((time.perf_counter() - t0) * 1000)
    return times


def knob_flips() -> list[dict]:
    with tempfile.TemporaryDirectory(prefix="abtui-bench-") as tmp:
        lab = _bench_lab(Path(tmp))
        lab.down()
        lab.up(pairs=2)
        try:
            fast = asyncio.run(_abtui_flips(lab, fast=True))
            classic = asyncio.run(_abtui_flips(lab, fast=False))
            openssh = _openssh_flips(lab)
        finally:
            lab.down()
    fast_ms = statistics.median(fast)
    classic_ms = statistics.median(classic)
    ssh_ms = statistics.median(openssh)
    return [
        {"name": "knob_flip_4hosts_median_ms", "value": round(fast_ms, 2), "unit": "ms",
         "budget": "<= 10",
         "note": f"{FLIPS} flips, read+write+read back via /proc/sys builtins; "
                 f"with sysctl(8) instead: {classic_ms:.2f} ms"},
        {"name": "knob_flip_vs_openssh_ratio", "value": round(ssh_ms / fast_ms, 1),
         "unit": "x", "budget": ">= 100",
         "note": f"OpenSSH, one ssh per host in sequence: median {ssh_ms:.0f} ms "
                 f"of {OPENSSH_FLIPS} flips, same run"},
    ]


RECORDS = [knob_flips]
