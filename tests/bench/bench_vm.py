"""`vm_pair_boot_s`: one VM pair of the lab (two guests booting a Debian kernel build) from
`lab up` to both guests answering SSH; a record with no budget yet. Skipped, saying why, where
this abtui builds no VM hosts or the machine cannot run them."""

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


def _skipped(reason: str) -> dict[str, Any]:
    return {"name": "vm_pair_boot_s", "value": None, "unit": "s", "skipped": reason}


@measures("vm_pair_boot_s")
def vm_pair_boot_s() -> dict[str, Any]:
    try:
        lab_vm = importlib.import_module("abtui.lab.vm")
        kernels = importlib.import_module("abtui.lab.kernels")
    except ImportError:
        return _skipped("this abtui's lab builds no VM hosts (namespace hosts only)")
    reason = lab_vm.missing_reason()
    if reason:
        return _skipped(f"VM hosts cannot run here: {reason}")
    kernel = kernels.resolve(KERNEL)  # fetched into the cache first: not part of the boot
    with tempfile.TemporaryDirectory(prefix="abtui-bench-vm-") as tmp:
        lab = bench_lab(Path(tmp))
        lab.down()
        t0 = time.monotonic()
        try:
            lab.up(pairs=1, kernels={"A": kernel.spec})  # type: ignore[call-arg]
            seconds = time.monotonic() - t0
            status = lab.status()  # type: ignore[attr-defined]
        finally:
            lab.down()
    boots = ", ".join(f"{h['alias']} {h['boot_s']} s" for h in status["hosts"])
    nic = status["hosts"][0].get("nic", "virtio")
    return {"name": "vm_pair_boot_s", "value": round(seconds, 1), "unit": "s",
            "note": f"{kernel.release}, NIC {nic}, {status['accel']} ({status['accel_why']}); "
                    f"{boots}; "
                    f"load {os.getloadavg()[0]:.1f}"}


RECORDS = [vm_pair_boot_s]
