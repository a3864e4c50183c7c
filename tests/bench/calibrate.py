"""How fast the machine is right now, timed at the start and the end of a bench run.

The shared machines the benches run on change speed by 2x between runs (the other jobs, the
host's own phase): these figures, printed and kept in bench-results.json beside the records,
say which phase a run met. They judge nothing: every speed budget is a ratio to a reference
measured in the same run (tests/bench/judge.py).

- `python_loop_s`: a fixed pure-Python loop (LOOP iterations of integer arithmetic), wall
  time, best of 3: the speed single-threaded Python gets (abtui's parser, the console).
- `iperf3_loopback_gbps`: a fixed iperf3 run on the loopback (one stream, IPERF3_S seconds):
  the kernel's and the memory's speed, what the lab's traffic gets.
"""

from __future__ import annotations

import json
import os
import shutil
import socket
import subprocess
import time
from typing import Any

LOOP = 3_000_000
IPERF3_S = 2


def python_loop_s() -> float:
    """Wall seconds of the fixed loop, best of 3."""
    best = float("inf")
    for _ in range(3):
        t0 = time.perf_counter()
        acc = 0
        for i in range(LOOP):
            acc = (acc + i * 7) % 1_000_003
        best = min(best, time.perf_counter() - t0)
    return best


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def iperf3_loopback_gbps() -> float | None:
    """Gbit/s of one fixed iperf3 run on 127.0.0.1 (receiver's figure); None without iperf3."""
    iperf3 = shutil.which("iperf3")
    if iperf3 is None:
        return None
    port = _free_port()
    server = subprocess.Popen([iperf3, "-s", "-B", "127.0.0.1", "-p", str(port)],
                              stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        for _ in range(20):  # until the server listens (a probe would take its one test)
            time.sleep(0.1)
            out = subprocess.run([iperf3, "-c", "127.0.0.1", "-p", str(port), "-t",
                                  str(IPERF3_S), "-J"], capture_output=True, text=True,
                                 timeout=30 + IPERF3_S)
            if out.returncode == 0:
                break
    finally:
        server.terminate()
        server.wait()
    try:
        bps = json.loads(out.stdout)["end"]["sum_received"]["bits_per_second"]
    except (ValueError, KeyError):
        return None
    return round(float(bps) / 1e9, 2)


def calibrate() -> dict[str, Any]:
    """The machine's speed and load now."""
    return {"at": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
            "load": [round(x, 2) for x in os.getloadavg()],
            "python_loop_s": round(python_loop_s(), 3),
            "iperf3_loopback_gbps": iperf3_loopback_gbps()}


def line(when: str, cal: dict[str, Any]) -> str:
    gbps = cal["iperf3_loopback_gbps"]
    return (f"calibration ({when}, {cal['at']}): python loop {cal['python_loop_s']:.3f} s, "
            f"iperf3 loopback {'—' if gbps is None else f'{gbps:.1f}'} Gbit/s, load "
            + " ".join(f"{x:.2f}" for x in cal["load"]))
