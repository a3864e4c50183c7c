"""`abtui bisect` over three real Debian kernel builds (6.1.0-47, -52, -57) on one VM pair: the
lab's `kernel` knob (every build in the kernel cache, reached by kexec from inside the guest).
The step compares the middle build with the first on the real builds (every flip a boot of
both guests, counted in the step's row), runs to its maximum of two blocks (no look may claim
before the third block: the step is undecided and the range is reported, exit 3), and the
hosts end on the build they started on. The slow tier (`make test-slow`): a step of two blocks
is five or six switches of the pair and two pauses as long as one (every boundary alike), and
the switch back: about six minutes at a boot of 34 s, and over half an hour on a loaded
machine where a kexec boot took 3–4 minutes. Skipped, with the reason, where qemu/virtme-ng
or the kernel packages are missing."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from abtui.core.errors import AbtuiError
from abtui.lab.kernels import resolve
from abtui.lab.netns import Lab
from tests.lab.guests import ssh_argv
from tests.lab.test_vm_switch_lab import pair  # noqa: F401  # one VM pair on the first build

pytestmark = [pytest.mark.lab, pytest.mark.slow, pytest.mark.timeout(5400)]
ROOT = Path(__file__).resolve().parents[2]
KERNELS = [f"linux-image-6.1.0-{n}-amd64" for n in (47, 52, 57)]  # the first: `pair`'s


def _release(lab: Lab, alias: str) -> str:
    return subprocess.run([*ssh_argv(lab), alias, "uname -r"], capture_output=True,
                          text=True, check=True, timeout=180).stdout.strip()


def test_a_bisection_over_three_builds_boots_each_step_and_ends_on_the_first(
        pair: tuple[Lab, list[str]], tmp_path: Path) -> None:  # noqa: F811
    lab, releases = pair
    try:
        resolve(KERNELS[1])  # the middle build, beyond the two `pair` boots
    except AbtuiError as exc:
        pytest.skip(f"the test kernels cannot be had: {exc}")
    hosts = [h.alias for h in lab.hosts(1)]
    assert {_release(lab, h) for h in hosts} == {releases[0]}
    profile = lab.profile_path.read_text()
    assert all(k in profile for k in KERNELS), "the lab's kernel knob lacks a build"
    out = tmp_path / "bisect.jsonl"
    env = {**os.environ, "ABTUI_LAB": f"{lab.name},{lab.ifprefix},{lab.mgmt}",
           "ABTUI_LAB_DIR": str(lab.state_dir.parent), "XDG_STATE_HOME": str(tmp_path),
           "PYTHONPATH": str(ROOT)}
    # a guest just booted under emulation can take longer than a link's first command
    # allows (as test_vm_switch_lab's warm-up says): one check first, its result unread
    subprocess.run([sys.executable, "-m", "abtui", "check", str(lab.profile_path)], cwd=ROOT,
                   env=env, capture_output=True, text=True, timeout=600)
    proc = subprocess.run([sys.executable, "-m", "abtui", "bisect", str(lab.profile_path),
                           "--knob", "kernel", "--good", KERNELS[0], "--bad", KERNELS[2],
                           "--threshold", "20", "--every", "10", "--max-blocks", "2",
                           "--out", str(out), "--headless"], cwd=ROOT, env=env,
                          capture_output=True, text=True, timeout=4800)
    print(proc.stderr[-4000:])
    assert proc.returncode == 3, proc.stderr[-3000:]  # undecided: two blocks claim nothing
    assert proc.stdout.startswith(f"undecided: the first bad is one of {KERNELS[1]} … "
                                  f"{KERNELS[2]} (2 candidates); step 1 ({KERNELS[1]} vs "
                                  f"{KERNELS[0]}) was undecided after 2 blocks"), proc.stdout
    assert proc.stdout.rstrip().endswith("(family-wise error ≤ 5 % over 2 steps)")
    doc = json.loads(subprocess.run([sys.executable, "-m", "abtui", "export", str(out),
                                     "--format", "json"], capture_output=True, text=True,
                                    check=True, cwd=ROOT, env=env).stdout)
    (step,) = doc["bisect"]["steps"]
    assert step["candidate"] == KERNELS[1] and step["verdict"] == "undecided"
    assert step["blocks"] == 2 and step["boots"] >= 4  # at least two switches of two hosts
    assert {_release(lab, h) for h in hosts} == {releases[0]}  # back on the first build
