"""The lab's VM hosts, timed from `lab up` to every guest answering SSH (records with no budget
yet): `vm_pair_boot_s`, one VM pair (two guests booting a Debian kernel build), and
`vm_lab_3pairs_up_s`, a lab of three VM pairs each booting another build (six guests at once:
the wireguard-gro procedure's lab). Skipped, saying why, where this abtui builds no VM hosts or
the machine cannot run them."""

from __future__ import annotations

import importlib
import os
import tempfile
import time
from pathlib import Path
from typing import Any

from tests.bench.judge import measures
from tests.bench.labs import bench_lab

KERNEL = os.environ.get("ABTUI_BENCH_KERNEL", "linux-image-6.1.0-47-amd64")
# the three builds of the slow tier's lab (Makefile: TEST_KERNELS and SLOW_KERNELS)
KERNELS3 = os.environ.get("ABTUI_BENCH_KERNELS3", ",".join(
    f"linux-image-6.1.0-{n}-amd64" for n in (47, 52, 57))).split(",")


def _vm_lab_up(name: str, specs: list[str]) -> dict[str, Any]:
    """The record `name`: seconds for `lab up` of one VM pair per SPEC (each fetched into the
    kernel cache first: the fetch is not part of the boot), the lab taken down after."""
    try:
        lab_vm = importlib.import_module("abtui.lab.vm.guest")
        kernels = importlib.import_module("abtui.lab.kernels")
    except ImportError:
        return {"name": name, "value": None, "unit": "s",
                "skipped": "this abtui's lab builds no VM hosts (namespace hosts only)"}
    reason = lab_vm.missing_reason()
    if reason:
        return {"name": name, "value": None, "unit": "s",
                "skipped": f"VM hosts cannot run here: {reason}"}
    resolved = [kernels.resolve(spec) for spec in specs]
    with tempfile.TemporaryDirectory(prefix="abtui-bench-vm-") as tmp:
        lab = bench_lab(Path(tmp))
        lab.down()
        t0 = time.monotonic()
        try:
            lab.up(pairs=len(resolved), kernels={chr(ord("A") + i): k.spec  # type: ignore[call-arg]
                                                 for i, k in enumerate(resolved)})
            seconds = time.monotonic() - t0
            status = lab.status()  # type: ignore[attr-defined]
        finally:
            lab.down()
    boots = ", ".join(f"{h['alias']} {h['boot_s']} s" for h in status["hosts"])
    releases = ", ".join(dict.fromkeys(k.release for k in resolved))
    nic = status["hosts"][0].get("nic", "virtio")
    return {"name": name, "value": round(seconds, 1), "unit": "s",
            "note": f"{releases}, NIC {nic}, {status['accel']} ({status['accel_why']}); "
                    f"{boots}; "
                    f"load {os.getloadavg()[0]:.1f}"}


@measures("vm_pair_boot_s")
def vm_pair_boot_s() -> dict[str, Any]:
    return _vm_lab_up("vm_pair_boot_s", [KERNEL])


@measures("vm_lab_3pairs_up_s")
def vm_lab_3pairs_up_s() -> dict[str, Any]:
    return _vm_lab_up("vm_lab_3pairs_up_s", KERNELS3)


RECORDS = [vm_pair_boot_s, vm_lab_3pairs_up_s]
