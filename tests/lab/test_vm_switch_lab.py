"""Builds on the same hosts, for real: one VM pair switched between two Debian kernel builds.

`abtui lab boot` power-cycles a guest onto another build (same name, addresses, MACs and host
key: OpenSSH with the lab's known_hosts still trusts it) and kexecs it back from inside;
`abtui run LAB-PROFILE --alternate kernel=A,B` alternates the builds over blocks of boots with
every phase labelled by the build the hosts ran (read out of band with `uname -r` while it
runs) and ends on the build it started on; and SIGKILL of abtui in the middle of a switch is
undone by `abtui recover`, which boots the hosts back onto their first build. All are the slow
tier (`make test-slow`): each is several boots of emulated guests, beyond CI's time limit (the
default tier switches a module build for real: tests/lab/test_vm_module_switch.py). Skipped,
with the reason, where qemu/virtme-ng or the kernel packages are missing.
"""

from __future__ import annotations

import functools
import json
import os
import signal
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from abtui.core.errors import AbtuiError
from abtui.lab.kernels import resolve
from abtui.lab.netns import Lab
from abtui.lab.vm import guest as lab_vm
from tests.lab.guests import abtui_on, ssh_argv
from tests.lab.guests import guest_ssh as _ssh
from tests.lab.guests import lab_env as _env
from tests.lab.namespaces import make_test_lab

# one VM pair (two TCG guests) booted once for the module; each switch is a boot
pytestmark = [pytest.mark.lab, pytest.mark.timeout(2400)]
ROOT = Path(__file__).resolve().parents[2]
KERNELS = os.environ.get("ABTUI_TEST_KERNELS",
                         "linux-image-6.1.0-47-amd64,linux-image-6.1.0-57-amd64").split(",")[:2]
# blocks AB then AB (alternate.schedule): no two stretches of a build side by side (they would
# make one phase), so each build has two phases; three switches, and the restore's fourth
SEED_ABAB = 0


def booted(tmp: Path, suffix: str, kernels: dict[str, str]
           ) -> Iterator[tuple[Lab, list[str]]]:
    """A lab of VM pairs booting `kernels` (pair -> build), taken down after; the two
    builds' releases. Skipped, with the reason, without qemu/virtme-ng or the kernels."""
    reason = lab_vm.missing_reason()
    if reason:
        pytest.skip(reason)
    try:
        releases = [resolve(k).release for k in KERNELS]
    except AbtuiError as exc:
        pytest.skip(f"the test kernels cannot be had: {exc}")
    lab = make_test_lab(tmp, suffix)
    lab.down()
    lab.up(pairs=len(kernels), kernels=kernels)
    try:
        yield lab, releases
    finally:
        lab.down()


@pytest.fixture(scope="module")
def pair(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[Lab, list[str]]]:
    """A lab of one VM pair booting the first build; the two builds' releases."""
    yield from booted(tmp_path_factory.mktemp("switchlab"), "k", {"A": KERNELS[0]})


# abtui's command line against the lab, 1500 s at most unless told
_abtui = functools.partial(abtui_on, timeout=1500)



def _identity(lab: Lab, alias: str) -> tuple[str, list[str]]:
    """(boot id, [release, hostname, data0's MAC, data0's address])."""
    out = _ssh(lab, alias, "cat /proc/sys/kernel/random/boot_id; uname -r; hostname; "
               "cat /sys/class/net/data0/address; ip -o -4 addr show dev data0 | "
               "awk '{print $4}'").split()
    return out[0], out[1:]


def _releases(lab: Lab) -> list[str]:
    return [h["release"] for h in json.loads(subprocess.run(
        [sys.executable, "-m", "abtui", "lab", "status", "--json"], cwd=ROOT,
        env=_env(lab, Path("/nonexistent")), capture_output=True, text=True).stdout)["hosts"]]


def _warm(lab: Lab, state: Path) -> None:
    """`abtui check` on the lab's profile, its result unread: a guest just booted under
    emulation answers its first logins slowly (sshd and the programs read over 9p), and
    abtui's own commands have deadlines of seconds."""
    _abtui(lab, state, "check", str(lab.profile_path), timeout=600)


@pytest.mark.slow  # a power-cycle and a kexec of two emulated guests
def test_lab_boot_switches_a_pair_keeping_its_identity(pair, tmp_path):
    """Power-cycled onto the other build, then kexec'd back from inside: each time a new boot
    id and the build asked for, the same name, MAC, address and host key."""
    lab, releases = pair
    hosts = [h.alias for h in lab.hosts(1)]
    first = {a: _identity(lab, a) for a in hosts}
    assert all(ident[0] == releases[0] for _, ident in first.values()), first
    for method, kernel, release in (("power", KERNELS[1], releases[1]),
                                    ("kexec", KERNELS[0], releases[0])):
        proc = _abtui(lab, tmp_path, "lab", "boot", "--method", method, *hosts, kernel)
        assert proc.returncode == 0, proc.stderr[-2000:]
        for alias in hosts:
            assert f"{alias}: {release} ({method}, " in proc.stdout, proc.stdout
            boot_id, ident = _identity(lab, alias)
            assert boot_id != first[alias][0], (method, alias)
            assert ident == [release, *first[alias][1][1:]], (method, ident)
        assert _releases(lab) == [release] * 2
        rcv = lab.hosts(1)[1]
        assert "1 received" in _ssh(lab, hosts[0], f"ping -c 1 -W 10 {rcv.data_address}")
        first = {a: _identity(lab, a) for a in hosts}
    record = json.loads(lab.meta_path.read_text())
    assert record.get("booted") == {}  # back on the pair's own build


@pytest.mark.slow  # it needs the VM pair booted
def test_lab_boot_refuses_a_namespace_or_unknown_host(pair, tmp_path):
    lab, _ = pair
    proc = _abtui(lab, tmp_path, "lab", "boot", f"{lab.name}-z-snd", KERNELS[1])
    assert proc.returncode == 2 and len(proc.stderr.strip().splitlines()) == 1, proc.stderr
    assert f"no such host in lab {lab.name!r}" in proc.stderr


class Uname:
    """`uname -r` of every host, read over OpenSSH (one multiplexed connection per host, made
    again after a boot) every few seconds while a run goes on: (sent, answered, host,
    release), the host ran it between the two wall-clock times; a host that does not answer
    (booting) is skipped."""

    def __init__(self, lab: Lab, folder: Path, pairs: int = 1) -> None:
        self.lab = lab
        self.pairs = pairs
        self.mux = ["-o", "ControlMaster=auto", "-o", f"ControlPath={folder}/%h.mux",
                    "-o", "ControlPersist=120", "-o", "ServerAliveInterval=5",
                    "-o", "ServerAliveCountMax=3"]
        self.seen: list[tuple[float, float, str, str]] = []
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._loop, daemon=True)

    def __enter__(self) -> Uname:
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._stop.set()
        self._thread.join()
        for h in self.lab.hosts(self.pairs):
            subprocess.run(["ssh", "-F", str(self.lab.ssh_config), *self.mux, "-O", "exit",
                            h.alias], capture_output=True, timeout=30)

    def _loop(self) -> None:
        while not self._stop.is_set():
            for h in self.lab.hosts(self.pairs):
                t0 = time.time()
                try:
                    proc = subprocess.run(
                        [*ssh_argv(self.lab, *self.mux), h.alias, "uname -r"],
                        capture_output=True, text=True, timeout=120)
                except subprocess.TimeoutExpired:
                    continue
                if proc.returncode == 0 and proc.stdout.strip():
                    self.seen.append((t0, time.time(), h.alias, proc.stdout.strip()))
            self._stop.wait(1.0)


# four kernel switches (three and the restore): minutes of emulated boots, the slow tier
@pytest.mark.slow
def test_alternating_two_builds_labels_every_phase_with_the_build_run(pair, tmp_path):
    lab, releases = pair
    out = tmp_path / "s.jsonl"
    _warm(lab, tmp_path)
    with Uname(lab, tmp_path) as uname:
        proc = _abtui(lab, tmp_path, "run", str(lab.profile_path), "--headless", "--alternate",
                      f"kernel={KERNELS[0]},{KERNELS[1]}", "--max-runs", "2", "--every", "10",
                      "--seed", str(SEED_ABAB), "--out", str(out))
    errors = [ln for ln in proc.stderr.splitlines() if "error" in ln or "failed" in ln]
    assert proc.returncode == 0, "\n".join(errors[:20]) + "\n...\n" + proc.stderr[-2000:]
    assert "booting" in proc.stderr and "(kexec)" in proc.stderr
    doc = json.loads(_abtui(lab, tmp_path, "export", str(out), "--format", "json").stdout)
    measured: dict[str, int] = {}
    checked = 0
    for phase in doc["phases"]:
        if not phase["intervals"]:
            continue
        kernel = phase["config"]["kernel"]
        release = releases[KERNELS.index(kernel)] if kernel in KERNELS else kernel
        assert release in releases, phase["config"]
        measured[release] = measured.get(release, 0) + 1
        # read out of band while the phase ran: the build it is labelled with
        during = [s for s in uname.seen if phase["start"] <= s[0] and s[1] <= phase["end"]]
        assert all(r == release for *_, r in during), (phase["config"], during)
        checked += len(during)
    assert all(measured.get(r, 0) >= 2 for r in releases), measured
    assert {r for *_, r in uname.seen} == set(releases), uname.seen  # both builds ran
    assert checked, (uname.seen, [(p["start"], p["end"]) for p in doc["phases"]])
    assert _releases(lab) == [releases[0]] * 2  # ended on the build it started on
    for h in lab.hosts(1):
        assert _ssh(lab, h.alias, "uname -r").strip() == releases[0]


@pytest.mark.slow  # two switches and recover's logins into just-booted guests
def test_recover_boots_the_hosts_back_after_abtui_is_killed_mid_switch(pair, tmp_path):
    """SIGKILL while the hosts boot the other build: `abtui recover` boots them back onto the
    build they ran when the run began."""
    lab, releases = pair
    env = _env(lab, tmp_path)
    proc = subprocess.Popen([sys.executable, "-m", "abtui", "run", str(lab.profile_path),
                             "--headless", "--alternate", f"kernel={KERNELS[1]},{KERNELS[0]}",
                             "--max-runs", "2", "--every", "5", "--out",
                             str(tmp_path / "k.jsonl")], cwd=ROOT, env=env, text=True,
                            stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    said = []
    try:
        assert proc.stderr is not None
        for line in proc.stderr:
            said.append(line)
            if "booting" in line:
                break
        time.sleep(3.0)  # the kexec is under way: the hosts are going down
    finally:
        proc.send_signal(signal.SIGKILL)
        proc.wait()
    assert any("booting" in ln for ln in said), said
    # the user runs recover once the hosts answer, and again while it says it could not reach
    # one (a kexec the killed run started may take them down a little later)
    for _attempt in range(3):
        deadline = time.monotonic() + 900
        while not lab.status()["ok"] and time.monotonic() < deadline:
            time.sleep(5)
        _warm(lab, tmp_path)
        rec = _abtui(lab, tmp_path, "recover")
        if rec.returncode == 0 or "cannot reconnect" not in rec.stdout:
            break
    assert rec.returncode == 0, rec.stdout + rec.stderr
    for h in lab.hosts(1):
        assert _ssh(lab, h.alias, "uname -r").strip() == releases[0]
    assert _releases(lab) == [releases[0]] * 2
