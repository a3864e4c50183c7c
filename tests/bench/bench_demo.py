"""`make demo` to the first live number, warm: what a user waits for the second time.

Warm means the virtual environment is installed and the lab is up, as the first `make demo`
leaves it (leaving the console asks "Take the lab down? [y/N]", and no is the default). The
bench runs the real `make demo` in a real terminal (tmux, 160×48) at the repository root, on
a lab of its own names (ABTUI_BENCH_LAB, via ABTUI_LAB and a temporary ABTUI_LAB_DIR), and
times from the spawn to the first interval on screen (the console's bench file says when the
refresh that showed it completed). It leaves with ctrl+q and answers no, so the next run is
warm too; the median of RUNS runs is the record. The lab is taken down at the end, even when
a run fails.
"""

from __future__ import annotations

import contextlib
import os
import shlex
import signal
import statistics
import subprocess
import tempfile
import time
from pathlib import Path

from abtui.lab.netns import Lab
from tests.bench.bench_ui import ROOT, TMUX, _wait, first_record, spawn
from tests.bench.by_hand import first_number_by_hand
from tests.bench.judge import measures
from tests.bench.labs import bench_lab

RUNS = int(os.environ.get("ABTUI_BENCH_DEMO_RUNS", "3"))
PROMPT = "Take the lab down?"
CPU: list[float] = []  # the console's CPU time at its first live number, run by run


def _descendants(pid: int) -> list[int]:
    """Every live process under `pid` (children first found, depth first)."""
    out: list[int] = []
    with contextlib.suppress(OSError):
        for task in Path(f"/proc/{pid}/task").iterdir():
            for child in (task / "children").read_text().split():
                out += [int(child), *_descendants(int(child))]
    return out


def _screen(socket: str) -> str:
    return subprocess.run([TMUX, "-S", socket, "capture-pane", "-p", "-t", "d"],
                          capture_output=True, text=True).stdout


def demo_to_first_number(lab: Lab, tmp: Path, root: Path = ROOT, timeout: float = 60) -> float:
    """One `make demo` in tmux at `root` on `lab`: seconds from the spawn to the first live
    number."""
    if TMUX is None:
        raise RuntimeError("tmux is needed for the demo benchmark (apt-get install tmux)")
    bench = tmp / f"demo-{time.monotonic_ns()}.jsonl"
    rc = bench.with_suffix(".rc")
    socket = str(tmp / "tmux")  # a tmux server of this run's own
    env = {"ABTUI_LAB": f"{lab.name},{lab.ifprefix},{lab.mgmt}",
           "ABTUI_LAB_DIR": str(lab.state_dir.parent), "ABTUI_BENCH_FILE": str(bench)}
    assigns = " ".join(f"{k}={shlex.quote(v)}" for k, v in env.items())
    cmd = f"cd {shlex.quote(str(root))} && {assigns} make --no-print-directory demo; " \
          f"echo $? > {shlex.quote(str(rc))}"
    pane = 0
    t0 = time.time()
    try:
        pane = spawn(socket, "d", cmd)
        first = first_record(bench, "first_interval", timeout, "the first live number")
        subprocess.run([TMUX, "-S", socket, "send-keys", "-t", "d", "C-q"], check=True)
        _wait(lambda: PROMPT in _screen(socket) or rc.exists(), 60, "the console to close")
        if not rc.exists():
            subprocess.run([TMUX, "-S", socket, "send-keys", "-t", "d", "n", "Enter"],
                           check=True)
        _wait(rc.exists, 30, "`make demo` to end")
        if rc.read_text().strip() != "0":
            raise RuntimeError(f"`make demo` exited {rc.read_text().strip()}")
        CPU.append(float(first.get("cpu_s", "nan")))
        return float(first["first_interval"] - t0)
    except Exception as exc:  # what the terminal shows says why, more often than not
        shown = " | ".join(line.strip() for line in _screen(socket).splitlines()
                           if line.strip())
        raise RuntimeError(f"{exc}; the terminal showed: {shown[-400:]!r}") from exc
    finally:
        for pid in reversed(_descendants(pane) if pane else []):  # ours: started by this run
            with contextlib.suppress(ProcessLookupError):
                os.kill(pid, signal.SIGTERM)
        subprocess.run([TMUX, "-S", socket, "kill-server"], capture_output=True)


@measures("demo_first_number_warm_s")
def demo_warm() -> dict:
    with tempfile.TemporaryDirectory(prefix="abtui-bench-") as tmp:
        lab = bench_lab(Path(tmp))
        lab.down()  # leftovers of an earlier, killed bench
        lab.up(pairs=2)  # what the first `make demo` left up
        try:
            CPU.clear()
            times, hand = [], []
            for k in range(RUNS):  # alternated with the hand's first number
                for arm in ("demo", "hand") if k % 2 == 0 else ("hand", "demo"):
                    if arm == "demo":
                        times.append(demo_to_first_number(lab, Path(tmp)))
                    else:
                        hand.append(first_number_by_hand(lab))
        finally:
            lab.down()
    return {"name": "demo_first_number_warm_s", "value": round(statistics.median(times), 2),
            "unit": "s", "reference": round(statistics.median(hand), 2),
            "reference_note": f"by hand on the same lab: `ssh RECEIVER iperf3 -s -1 -D; ssh "
                              f"SENDER iperf3 -c RECEIVER -i 1` in a fresh tmux pane, spawn to "
                              f"the first interval, median of {RUNS} "
                              f"({', '.join(f'{t:.2f}' for t in hand)} s), alternated",
            "note": f"`make demo` in tmux 160x48, venv installed and lab up: spawn to the first "
                    f"interval on screen, median of {RUNS} "
                    f"({', '.join(f'{t:.2f}' for t in times)} s); the console's CPU time "
                    f"by then {statistics.median(CPU):.2f} s (median); "
                    f"load {os.getloadavg()[0]:.1f}"}


def demo_cold() -> str:
    """`make demo` cold, measured by hand (`python -m tests.bench.bench_demo`; not a record:
    it downloads every dependency): a fresh clone of this repository into a temporary folder,
    no virtual environment, no uv or pip cache (a fresh one), the bench lab down; from the
    clone to the first live number, and the warm run right after it."""
    with tempfile.TemporaryDirectory(prefix="abtui-cold-") as tmp:
        lab = bench_lab(Path(tmp))
        lab.down()
        clone = Path(tmp) / "abtui"
        t0 = time.monotonic()
        subprocess.run(["git", "clone", "-q", str(ROOT), str(clone)], check=True)
        cloned = time.monotonic() - t0
        os.environ["UV_CACHE_DIR"] = str(Path(tmp) / "uv-cache")  # inherited by tmux's server
        os.environ["PIP_NO_CACHE_DIR"] = "1"
        try:
            cold = demo_to_first_number(lab, Path(tmp), clone, timeout=600)
            warm = demo_to_first_number(lab, Path(tmp), clone)
        finally:
            lab.down()
    return (f"make demo cold: {cloned + cold:.1f} s (clone {cloned:.1f} s, then {cold:.1f} s "
            f"to the first live number); warm right after: {warm:.2f} s; "
            f"load {os.getloadavg()[0]:.1f}")


RECORDS = [demo_warm]

if __name__ == "__main__":
    print(demo_cold())
