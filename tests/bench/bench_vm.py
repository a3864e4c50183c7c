"""vm_pair_boot_s: one VM pair of the lab (two guests booting a Debian kernel build) from
`lab up` to both guests answering SSH. A record with no budget yet (DESIGN §5)."""

from __future__ import annotations

import os
import tempfile
import time
from pathlib import Path

from abtui import lab_vm
from abtui.kernels import resolve
from abtui.lab import Lab

KERNEL = os.environ.get("ABTUI_BENCH_KERNEL", "linux-image-6.1.0-47-amd64")


def vm_pair_boot_s() -> dict:
    reason = lab_vm.missing_reason()
    if reason:
        raise RuntimeError(f"VM hosts cannot run here: {reason}")
    kernel = resolve(KERNEL)  # fetched into the cache first: not part of the boot time
    with tempfile.TemporaryDirectory(prefix="abtui-bench-vm-") as tmp:
        lab = Lab(name="blabvm", octet=19, ifprefix="abbv", mgmt=227,
                  state_dir=Path(tmp) / "blabvm")
        lab.down()
        t0 = time.monotonic()
        try:
            lab.up(pairs=1, kernels={"A": kernel.spec})
            seconds = time.monotonic() - t0
            status = lab.status()
        finally:
            lab.down()
    boots = ", ".join(f"{h['alias']} {h['boot_s']} s" for h in status["hosts"])
    return {"name": "vm_pair_boot_s", "value": round(seconds, 1), "unit": "s", "budget": None,
            "note": f"{kernel.release}, {status['accel']} ({status['accel_why']}); {boots}; "
                    f"load {os.getloadavg()[0]:.1f}"}


RECORDS = [vm_pair_boot_s]
