"""The softirq-crypto seed on its own change, on the lab's 32-bit ARM host (slow tier: a TCG
ARM guest power-cycled 16 times a direction, and an x86 TCG guest as its IPsec peer).

`abtui lab up --kernel A=X86 --arm-build before=… --arm-build after=… --clock icount` makes
pair A's sender the ARM guest (dropbear in Debian's armhf userspace, the lab's host key:
OpenSSH and abtui verify it against the lab's known_hosts like any host's), booting the
BEFORE build of Debian's linux-source-6.1 with the small `virt` config, the AFTER build being
the same with the NEON-in-softirq series; its receiver an x86 VM guest (this machine's kernel
has no ESP). `abtui check` drives it like any host; `abtui run LAB-PROFILE --alternate
kernel=before,after --until-verdict` switches the builds on the same guest (the lab's
power-cycle, `abtui lab boot`), IPsec rfc4106(gcm(aes)) with a 256-bit key, iperf3's default
options, TX then RX, each to a verdict or a stated undecided, and leaves the guest on its first
build. Both guests on the instruction-counted clock (shift 6), the ARM guest profiled
(`--profile`: its perf and counters give the report's Why section). Skipped, with the reason, where
qemu, virtme-ng, the two ARM builds, the armhf userspace or the x86 kernel package are missing
(`make arm`, then the builds: docs/profiles.md). Set ABTUI_ARM_SESSIONS=FOLDER to keep the
sessions (the golden tests/golden/softirq-crypto-arm-*-vm was recorded so).
"""

from __future__ import annotations

import functools
import json
import os
import re
import shutil
import subprocess
from collections.abc import Iterator
from pathlib import Path

import pytest

from abtui.core.errors import AbtuiError
from abtui.lab import kbuild
from abtui.lab.kernels import resolve
from abtui.lab.netns import Lab
from abtui.lab.vm import armroot
from abtui.lab.vm import guest as lab_vm
from abtui.lab.vm.armhost import ArmBuild, arm_build
from tests.lab.guests import abtui_on, ssh_argv
from tests.lab.namespaces import make_test_lab

pytestmark = [pytest.mark.lab, pytest.mark.slow, pytest.mark.timeout(3600)]
ROOT = Path(__file__).resolve().parents[2]
CONFIG = ROOT / "profiles" / "kernel-configs" / "arm-virt-ipsec.config"
SERIES = tuple(sorted((ROOT / "profiles" / "patches" / "arm-neon-softirq").glob("*.patch")))
PEER = os.environ.get("ABTUI_TEST_ARM_PEER", "linux-image-6.1.0-57-amd64")
SEED = 47  # the alternation's order, replayable
MAX_RUNS = 8  # at most 4 blocks of four boots a direction
# ranked below ghash-ce at each boot, so the SA takes the driver the seed patches (README)
RANKED = "cryptd(ghash-ce-sync)"
VERDICT_RE = re.compile(r"A: kernel=after vs before: Δgeo ([+-]?[\d.]+)% (\[[^\]]*\]|\([^)]*\)) "
                        r"(\S+)")


def _missing() -> str | None:
    if shutil.which("qemu-system-arm") is None:
        return "`qemu-system-arm` is missing (Debian: qemu-system-arm; `make arm`)"
    reason = lab_vm.missing_reason()
    if reason:
        return reason
    if armroot.cached() is None:
        return "the armhf userspace is not in the kernel cache (`make arm`)"
    for spec in (kbuild.BuildSpec("linux-source-6.1", CONFIG),
                 kbuild.BuildSpec("linux-source-6.1", CONFIG, SERIES)):
        if kbuild.cached_build(spec) is None:
            return ("the ARM builds BEFORE/AFTER are not in the kernel cache "
                    "(`python -m abtui.lab.kbuild`: docs/profiles.md)")
    return None


# abtui's command line against the lab, 1800 s at most unless told
_abtui = functools.partial(abtui_on, timeout=1800)


def _ssh(lab: Lab, alias: str, command: str) -> str:
    proc = subprocess.run([*ssh_argv(lab), alias, command], capture_output=True, text=True,
                          timeout=300)
    assert proc.returncode == 0, proc.stderr
    return proc.stdout


@pytest.fixture(scope="module")
def arm_lab(tmp_path_factory: pytest.TempPathFactory
            ) -> Iterator[tuple[Lab, ArmBuild, ArmBuild]]:
    """A lab of one pair: the ARM guest on BEFORE, the x86 guest as its peer; taken down
    after, guests and taps included, even on failure."""
    why = _missing()
    if why:
        pytest.skip(why)
    try:
        resolve(PEER)
    except AbtuiError as exc:
        pytest.skip(f"the x86 peer's kernel cannot be had: {exc}")
    before_out = kbuild.cached_build(kbuild.BuildSpec("linux-source-6.1", CONFIG))
    after_out = kbuild.cached_build(kbuild.BuildSpec("linux-source-6.1", CONFIG, SERIES))
    assert before_out is not None and after_out is not None
    before, after = arm_build("before", str(before_out.out)), arm_build("after",
                                                                          str(after_out.out))
    tmp = tmp_path_factory.mktemp("armlab")
    lab = make_test_lab(tmp, "")
    lab.down()
    try:
        up = _abtui(lab, tmp, "lab", "up", "--pairs", "1", f"--kernel=A={PEER}", "--clock",
                    "icount", f"--arm-build=before={before_out.out}",
                    f"--arm-build=after={after_out.out}",
                    f"--arm-crypto-priority={RANKED}=200")
        assert up.returncode == 0, up.stderr[-3000:]
        print(up.stdout)
        yield lab, before, after
    finally:
        lab.down()


def test_abtui_drives_the_arm_guest_like_any_host(arm_lab, tmp_path):
    lab, before, _ = arm_lab
    snd, rcv = (h.alias for h in lab.hosts(1))
    status = json.loads(_abtui(lab, tmp_path, "lab", "status", "--json").stdout)
    assert status["ok"], status
    assert [(h["alias"], h.get("arch", "")) for h in status["hosts"]] == [(snd, "arm"),
                                                                         (rcv, "")]
    assert status["hosts"][0]["booted"] == "before" and status["clock"] == "icount:6"
    # OpenSSH with the lab's known_hosts (StrictHostKeyChecking yes): the guest's dropbear
    # serves the lab's host key for its alias
    said = _ssh(lab, snd, "uname -m; uname -v; cat /proc/cmdline; hostname").splitlines()
    assert said[0] == "armv7l" and said[1] == before.version, said
    assert "abtui.clock=icount:6" in said[2] and said[3] == snd
    # the ranking every boot applies (lab up --arm-crypto-priority): cryptd's ghash instance
    # below ghash-ce, so a gcm(aes) is built on ghash-ce itself (the seed's path)
    crypto = _ssh(lab, snd, "cat /proc/crypto")
    assert re.search(r"driver\s*: cryptd\(ghash-ce-sync\)\n[^\n]*\npriority\s*: 200\n",
                     crypto), crypto[:2000]
    check = _abtui(lab, tmp_path, "check", str(lab.profile_path), timeout=600)
    assert check.returncode == 0, check.stdout + check.stderr
    assert f"ok   {snd}: reachable, Linux 6.1.192" in check.stdout, check.stdout
    assert f"ok   {snd}: knob kernel: runs before" in check.stdout, check.stdout
    assert "tunnels available: none, ipsec" in check.stdout, check.stdout


@pytest.mark.parametrize(("direction", "reverse"), [("tx", "off"), ("rx", "on")])
def test_the_seed_alternates_before_and_after_to_a_verdict(arm_lab, tmp_path, direction,
                                                           reverse):
    lab, before, after = arm_lab
    snd = lab.hosts(1)[0].alias
    out = tmp_path / f"softirq-crypto-arm-{direction}.abtui.jsonl"
    proc = _abtui(lab, tmp_path, "run", str(lab.profile_path), "--headless", "--alternate",
                  "kernel=before,after", "--set", "tunnel=ipsec", "--set", f"reverse={reverse}",
                  "--until-verdict", "--max-runs", str(MAX_RUNS), "--seed", str(SEED),
                  "--profile", "--out", str(out), timeout=3000)
    assert proc.returncode == 0, proc.stderr[-3000:]
    keep = os.environ.get("ABTUI_ARM_SESSIONS")
    if keep:
        shutil.copy(out, Path(keep) / out.name)
    assert "booting after (command)" in proc.stderr and "booting before" in proc.stderr
    said = list(VERDICT_RE.finditer(proc.stderr))  # each look, then the last word
    assert said, proc.stderr[-2000:]  # a verdict, or an undecided said as such
    m = said[-1]
    doc = json.loads(_abtui(lab, tmp_path, "export", str(out), "--format", "json").stdout)
    (alt,) = doc["alternation"]
    # a verdict, or undecided said as such (abtui.measure.alternate's words)
    assert alt["verdict"] in ("significant", "no difference", "undecided"), alt
    assert m.group(3) == alt["verdict"].split()[0], (m.group(0), alt)
    assert alt["boots"] >= 2 and alt["base_boots"] >= 2, alt
    measured = {p["config"]["kernel"] for p in doc["phases"] if p["intervals"]}
    assert measured == {"before", "after"}, measured
    assert all(p["config"]["tunnel"] == "ipsec" and p["config"]["reverse"] == reverse
               for p in doc["phases"] if p["intervals"])
    # the host ends on its first build, as the lab and the guest itself say
    assert _ssh(lab, snd, "uname -v").strip() == before.version
    status = json.loads(_abtui(lab, tmp_path, "lab", "status", "--json").stdout)
    assert status["hosts"][0]["booted"] == "before", status["hosts"][0]
    md = _abtui(lab, tmp_path, "export", str(out)).stdout
    assert "## Alternation verdict" in md and "guest instructions, shift 6" in md
    # the why: the ARM guest profiled (Debian's armhf perf, cpu-clock: no PMU under TCG) and
    # its counters sampled on its busybox userspace (the kernel threads' CPU ticks). What the
    # measurement supports (docs/reports.md, "The softirq-crypto seed on the lab"): frames
    # and counters judged over the blocks, not yet which way they move
    assert "## Why (profiles)" in md and f"### A {snd}: after vs before" in md, md[-3000:]
    mine = [r for r in doc["why"] if r["host"] == snd]
    assert mine and all(r["blocks"] == alt["blocks"] for r in mine), doc["why"][:3]
    if alt["blocks"] >= 3:  # the rule's intervals need 3 blocks
        assert all(r["low"] is not None for r in mine)
    counters = {c["counter"] for c in doc["why_counters"] if c["host"] == snd}
    assert {"kthread.kworker", "softirq.NET_RX"} <= counters, sorted(counters)
    print(f"{direction}: Δ {alt['pct']:+.1f}% [{alt['low']}, {alt['high']}] {alt['verdict']} "
          f"after {alt['blocks']} blocks ({alt['boots']}/{alt['base_boots']} boots), "
          f"boot-to-boot sd {alt['boot_sd']:.1f}%, within-boot sd {alt['within_sd']:.1f}%, "
          f"load {os.getloadavg()[0]:.1f}; builds {before.version} / {after.version}")
