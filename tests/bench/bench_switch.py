"""Builds switched on the lab's VM hosts, timed beside a cold boot of the same pair in the same
run: `vm_kernel_switch_power_s` (`abtui lab boot`: the guests power-cycled onto the other
build, as a lab's power control would) and `vm_kernel_switch_kexec_s` (`lab boot --method
kexec`: kexec from inside the guests), each the median of a switch there and one back, from
the command to both guests answering SSH on the build; their reference is the pair's cold
`lab up` (the `vm_pair_boot_s` measure, taken before and after the switches: their median),
their budget at most 1.5 × it. `module_switch_s`: e1000e reloaded with another
InterruptThrottleRate on both hosts of the pair, through abtui's knob manager (a `module`
knob: `modprobe -r`, `modprobe e1000e InterruptThrottleRate=…`, the data interface given
back and the build verified), median of four; budget 5 s. Each with the machine's load.
Skipped, saying why, where VM hosts cannot run or the two builds cannot be had."""

from __future__ import annotations

import asyncio
import os
import statistics
import tempfile
import time
from pathlib import Path
from typing import Any

from tests.bench.judge import measures
from tests.bench.labs import bench_lab

KERNELS = os.environ.get("ABTUI_BENCH_KERNELS", "linux-image-6.1.0-47-amd64,"
                         "linux-image-6.1.0-57-amd64").split(",")[:2]
SWITCH_RATIO = 1.5  # a switch within 1.5 × a cold boot of the pair
MODULE_BUDGET_S = 5.0
NAMES = ("vm_kernel_switch_power_s", "vm_kernel_switch_kexec_s", "module_switch_s")
# e1000e's interrupt throttling as module parameters; each reads back as the driver's
# rx-usecs (3: dynamic conservative; 10000 interrupts/s: 100 µs)
ITR_KNOB = """
[[knobs]]
name = "itr"
kind = "module"
key = "e1000e"
values = ["conservative", "10000"]
scope = "both"
[knobs.builds.conservative]
method = "modprobe"
params = { InterruptThrottleRate = "3" }
reports = { kind = "ethtool-coalesce", key = "rx-usecs", value = "3" }
[knobs.builds.10000]
method = "modprobe"
params = { InterruptThrottleRate = "10000" }
reports = { kind = "ethtool-coalesce", key = "rx-usecs", value = "100" }
"""


def _load() -> str:
    return f"load {os.getloadavg()[0]:.1f}"


def _skipped(reason: str) -> list[dict[str, Any]]:
    return [{"name": n, "value": None, "unit": "s", "skipped": reason} for n in NAMES]


def _cold_up(lab: Any) -> float:
    """Seconds for `lab up` of the VM pair (e1000e: the module switch's NIC) from down."""
    lab.down()
    t0 = time.monotonic()
    lab.up(pairs=1, kernels={"A": KERNELS[0]}, nics={"A": "e1000e"})
    return time.monotonic() - t0


def _switch(lab: Any, method: str) -> tuple[float, list[float]]:
    """Median seconds of a switch of both hosts to the second build and one back; both."""
    aliases = [h.alias for h in lab.hosts(1)]
    times = []
    for spec in (KERNELS[1], KERNELS[0]):
        t0 = time.monotonic()
        lab.boots.boot(aliases, spec, method=method)
        times.append(time.monotonic() - t0)
    return statistics.median(times), times


async def _module_switches(profile_path: Path, flips: int = 4) -> list[float]:
    """Seconds of each reload of the itr knob on both hosts (through KnobManager, as a flip
    of the console or an alternation does it), the module restored after."""
    from abtui.hosts.connect import open_hosts
    from abtui.hosts.knobs import KnobManager, resolve_targets
    from abtui.profile import load_profile

    profile = load_profile(profile_path)
    knob = profile.knob("itr")
    for _attempt in range(3):  # a guest just booted may not answer its facts in time yet
        hosts = await open_hosts(profile)
        if not hosts.errors:
            break
        await hosts.close()
        await asyncio.sleep(10)
    else:
        raise RuntimeError(f"the pair's hosts did not open: {hosts.errors}")
    manager = KnobManager(hosts.links, hosts.dialects)
    times = []
    try:
        for i in range(flips):
            value = knob.values[(i + 1) % 2]  # 10000 first: the driver's default is 3
            t0 = time.monotonic()
            await manager.apply(knob, value, resolve_targets(profile.pairs, knob))
            times.append(time.monotonic() - t0)
    finally:
        await manager.restore_all()
        await hosts.close()
    return times


def _module_record(lab: Any) -> dict[str, Any]:
    profile = lab.state_dir / "bench-itr.toml"
    profile.write_text(lab.profile_path.read_text() + ITR_KNOB)
    try:
        times = asyncio.run(_module_switches(profile))
    except Exception as exc:  # the kernel switches are still recorded
        first = (str(exc).strip().splitlines() or [type(exc).__name__])[0]
        return {"name": "module_switch_s", "value": None, "unit": "s", "status": "error",
                "note": f"the module switch raised {type(exc).__name__}: {first}"}
    value = statistics.median(times)
    rec: dict[str, Any] = {
        "name": "module_switch_s", "value": round(value, 2), "unit": "s",
        "note": f"e1000e InterruptThrottleRate 3 <-> 10000 on both hosts, verified by rx-usecs; "
                f"median of {', '.join(f'{t:.2f}' for t in times)}; {_load()}"}
    if value > MODULE_BUDGET_S:
        rec["failed"] = f"over {MODULE_BUDGET_S:g} s"
    return rec


@measures(*NAMES)
def vm_kernel_switch() -> list[dict[str, Any]]:
    from abtui.core.errors import AbtuiError
    from abtui.lab import kernels
    from abtui.lab.vm import guest as lab_vm

    reason = lab_vm.missing_reason()
    if reason:
        return _skipped(f"VM hosts cannot run here: {reason}")
    try:
        releases = [kernels.resolve(k).release for k in KERNELS]
    except AbtuiError as exc:
        return _skipped(f"the two builds cannot be had: {exc}")
    with tempfile.TemporaryDirectory(prefix="abtui-bench-switch-") as tmp:
        lab = bench_lab(Path(tmp))
        try:
            boots = [_cold_up(lab)]
            module = _module_record(lab)
            switches = {m: _switch(lab, m) for m in ("power", "kexec")}
            boots.append(_cold_up(lab))
            load = _load()
        finally:
            lab.down()
    reference = statistics.median(boots)
    out = []
    for method, (value, times) in switches.items():
        rec: dict[str, Any] = {
            "name": f"vm_kernel_switch_{method}_s", "value": round(value, 1), "unit": "s",
            "reference": round(reference, 1),
            "reference_note": "cold `lab up` of the same VM pair, median of "
                              f"{', '.join(f'{b:.1f}' for b in boots)} s",
            "note": f"{releases[0]} -> {releases[1]} -> back: "
                    f"{', '.join(f'{t:.1f}' for t in times)} s (both hosts at once); {load}"}
        if value > SWITCH_RATIO * reference:
            rec["failed"] = f"over {SWITCH_RATIO:g} x the cold boot ({reference:.1f} s)"
        out.append(rec)
    return [*out, module]


RECORDS = [vm_kernel_switch]
