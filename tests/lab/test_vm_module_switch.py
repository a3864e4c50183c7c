"""A module build alternated on the same hosts, for real: one VM pair whose data NIC is an
emulated Intel 82574L, its e1000e driver reloaded with another `InterruptThrottleRate` by
`modprobe -r` / `modprobe e1000e InterruptThrottleRate=…` (`abtui run --alternate`).

Every phase with intervals is labelled with the parameter the hosts report throughout it
(read out of band with `ethtool -c`, which shows the driver's ITR as rx-usecs: 100 for 10000
interrupts a second, 50 for 20000), the data interface keeps its name and address through
every reload (abtui gives them back), and the hosts end on the parameter they started with
(the driver's default, 3: a value the alternation never sets): the slow tier (CI's time).
SIGKILL of abtui in the middle of a reload, undone by `abtui recover`, is the default tier's
real build switch. Skipped, with the reason, where qemu/virtme-ng or the kernel package are
missing.
"""

from __future__ import annotations

import json
import os
import re
import statistics
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
from tests.lab.guests import guest_ssh as _ssh
from tests.lab.guests import ssh_argv
from tests.lab.namespaces import make_test_lab

# two guests booted and their driver reloaded: the slow tier (about a minute of CI's 25)
pytestmark = [pytest.mark.lab, pytest.mark.slow, pytest.mark.timeout(1500)]
KERNEL = os.environ.get("ABTUI_TEST_KERNEL", "linux-image-6.1.0-57-amd64")
# the driver's InterruptThrottleRate -> what `ethtool -c` shows as rx-usecs (1 000 000 / rate
# for a fixed rate; the dynamic modes, 1 and 3, as they are). The alternation uses two fixed
# rates: under emulation on a loaded machine a stream in dynamic mode (1) can stall for
# seconds, and then its phase measures nothing.
RX_USECS = {"3": "3", "10000": "100", "20000": "50"}

ITR_KNOB = """
[[knobs]]
name = "itr"
kind = "module"
key = "e1000e"
values = ["3", "10000", "20000"]

[knobs.build]
method = "modprobe"
"""


def _build_table(value: str) -> str:
    return (f'\n[knobs.builds.{value}]\nparams = {{ InterruptThrottleRate = "{value}" }}\n'
            f'reports = {{ kind = "ethtool-coalesce", key = "rx-usecs", '
            f'value = "{RX_USECS[value]}" }}\n')


@pytest.fixture(scope="module")
def e1000e_lab(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Lab]:
    reason = lab_vm.missing_reason()
    if reason:
        pytest.skip(reason)
    try:
        kernel = resolve(KERNEL)
    except AbtuiError as exc:
        pytest.skip(f"the test kernel cannot be had: {exc}")
    lab = make_test_lab(tmp_path_factory.mktemp("itrlab"), "m")
    lab.down()
    lab.up(pairs=1, kernels={"A": kernel.spec}, nics={"A": "e1000e"})
    try:
        yield lab
    finally:
        lab.down()



def _rx_usecs(lab: Lab, alias: str) -> str:
    out = _ssh(lab, alias, "ethtool -c data0")
    return re.search(r"^rx-usecs:\s*(\S+)", out, re.M).group(1)  # type: ignore[union-attr]


class Watcher:
    """`ethtool -c data0` on a host, out of band, every 2 s through one SSH session of its
    own (a login per reading would load the emulated guest as much as the runs do): each
    reading with the wall-clock time its line arrived here."""

    LOOP = ("while :; do ethtool -c data0 2>/dev/null | grep '^rx-usecs:' || echo 'rx-usecs: ?'; "
            "sleep 2; done")

    def __init__(self, lab: Lab, alias: str) -> None:
        self.readings: list[tuple[float, str]] = []
        self._proc = subprocess.Popen([*ssh_argv(lab), alias, self.LOOP],
                                      stdout=subprocess.PIPE, text=True)
        self._thread = threading.Thread(target=self._loop, daemon=True)

    def __enter__(self) -> Watcher:
        self._thread.start()
        deadline = time.monotonic() + 120  # logged in and reading before abtui connects
        while not self.readings and time.monotonic() < deadline:
            time.sleep(0.2)
        return self

    def __exit__(self, *exc: object) -> None:
        self._proc.terminate()
        self._proc.wait()
        self._thread.join()

    def _loop(self) -> None:
        assert self._proc.stdout is not None
        for line in self._proc.stdout:
            self.readings.append((time.time(), line.split(":", 1)[1].strip()))


def _ran(proc: subprocess.CompletedProcess[str]) -> None:
    """Exit 0, or 1 when a run failed on this shared machine (an iperf3 that did not start in
    time on an emulated guest under load: said on stderr); never a failed switch."""
    assert proc.returncode == 0 or (proc.returncode == 1 and " error: " in proc.stderr), \
        proc.stderr
    assert " failed" not in proc.stderr and "refused" not in proc.stderr, proc.stderr


# a dozen reloads of an emulated NIC's driver: over two minutes
def test_a_module_parameter_alternates_by_reloads_labelled_as_the_hosts_report_it(
        e1000e_lab: Lab, tmp_path: Path) -> None:
    lab = e1000e_lab
    snd, rcv = (h.alias for h in lab.hosts(1))
    assert [_rx_usecs(lab, a) for a in (snd, rcv)] == ["3", "3"]  # the driver's default
    address = _ssh(lab, rcv, "ip -o -4 addr show dev data0").split()[3]
    text = lab.profile_path.read_text()
    text = re.sub(r"(?m)^duration = .*$", "duration = 8", text)
    profile = tmp_path / "itr.toml"
    profile.write_text(text + ITR_KNOB + "".join(_build_table(v) for v in RX_USECS))
    out = tmp_path / "itr.jsonl"
    env = {**os.environ, "XDG_STATE_HOME": str(tmp_path / "state")}
    # `abtui check` reads which build each host runs (never switching it); it also runs, once,
    # the programs a session starts on a guest freshly booted under emulation, which the
    # first time can outlast the session's 15 s for a host's facts on a loaded machine
    check = subprocess.run([sys.executable, "-m", "abtui", "check", str(profile)],
                           capture_output=True, text=True, timeout=600, env=env)
    if check.returncode == 0:
        assert f"{rcv}: knob itr: runs 3" in check.stdout + check.stderr, check.stdout
    with Watcher(lab, rcv) as watcher:
        proc = subprocess.run([sys.executable, "-m", "abtui", "run", str(profile), "--headless",
                               "--alternate", "itr=10000,20000", "--max-runs", "2", "--out",
                               str(out)], capture_output=True, text=True, timeout=900, env=env)
    _ran(proc)
    records = [json.loads(x) for x in out.read_text().splitlines()[1:]]
    switches = [r for r in records if r["kind"] == "switch"]
    ups = [r for r in switches if r["data"]["stage"] == "up"]
    assert not [r for r in switches if r["data"]["stage"] == "failed"], proc.stderr
    # every reload said on stderr as it went: `HOST: reloading 10000 (modprobe)…`, `... up in`
    assert re.search(rf"{rcv}: reloading 10000 \(modprobe\)…", proc.stderr), proc.stderr
    assert re.search(rf"{rcv}: 10000 up in [0-9.]+ s: rx-usecs 100", proc.stderr), proc.stderr

    # each phase with intervals: its value one of the two, both measured (a run that did not
    # start under load aside), and the host's own reading (out of band, well inside the
    # phase) the value's rx-usecs
    phases = [r["data"] for r in records if r["kind"] == "phase" and r.get("pair") == "A"]
    measured_phases = {r["data"]["phase"] for r in records if r["kind"] == "interval"}
    labelled = [p for p in phases if p["phase"] in measured_phases]
    assert {p["config"]["itr"] for p in labelled} == {"10000", "20000"}, (phases, proc.stderr)
    checked = 0
    for p in labelled:
        inside = [v for t, v in watcher.readings if p["start"] + 1 < t < p["end"] - 1]
        assert all(v == RX_USECS[p["config"]["itr"]] for v in inside), (p, inside)
        checked += len(inside)
    assert checked >= 2, watcher.readings

    # back on the driver's default on both hosts, the interface as it was, nothing journalled
    assert [_rx_usecs(lab, a) for a in (snd, rcv)] == ["3", "3"]
    assert _ssh(lab, rcv, "ip -o -4 addr show dev data0").split()[3] == address
    assert "rx-usecs 3" in [r["data"].get("build") for r in ups][-1]
    assert not list((tmp_path / "state").rglob("*.jsonl")), "the undo journal was left"
    took = [r["data"]["seconds"] for r in ups]
    print(f"\nmodule switch: median {statistics.median(took):.1f} s, "
          f"{min(took):.1f}–{max(took):.1f} s over {len(took)} reloads; "
          f"load {os.getloadavg()[0]:.1f}")


def test_sigkill_in_a_reload_then_recover_reloads_the_first_build(e1000e_lab: Lab,
                                                                   tmp_path: Path) -> None:
    """abtui killed while the hosts reload their driver: `abtui recover` reloads the one they
    started with, from the undo journal, and gives the data interface its address back (the
    driver may be gone, and its interface with it)."""
    lab = e1000e_lab
    snd, rcv = (h.alias for h in lab.hosts(1))
    assert [_rx_usecs(lab, a) for a in (snd, rcv)] == ["3", "3"]
    address = _ssh(lab, rcv, "ip -o -4 addr show dev data0").split()[3]
    profile = tmp_path / "itr.toml"
    profile.write_text(lab.profile_path.read_text() + ITR_KNOB
                       + "".join(_build_table(v) for v in RX_USECS))
    env = {**os.environ, "XDG_STATE_HOME": str(tmp_path / "state")}
    proc = subprocess.Popen([sys.executable, "-m", "abtui", "run", str(profile), "--headless",
                             "--set", "itr=10000", "--duration", "600",
                             "--out", str(tmp_path / "s.jsonl")],
                            stderr=subprocess.PIPE, text=True, env=env)
    assert proc.stderr is not None
    said_before = []
    for line in proc.stderr:
        said_before.append(line)
        if "reloading 10000" in line:
            break
    assert said_before and "reloading 10000" in said_before[-1], "".join(said_before)
    time.sleep(1.5)  # in the middle of `modprobe -r` / `modprobe` on the guests
    proc.kill()
    proc.wait()
    recover = subprocess.run([sys.executable, "-m", "abtui", "recover"], capture_output=True,
                             text=True, timeout=600, env=env)
    assert recover.returncode == 0, recover.stdout + recover.stderr
    said = recover.stdout + recover.stderr
    assert f"{rcv}: back on 3 (itr" in said and f"{snd}: back on 3 (itr" in said, said
    assert [_rx_usecs(lab, a) for a in (snd, rcv)] == ["3", "3"]
    assert _ssh(lab, rcv, "ip -o -4 addr show dev data0").split()[3] == address
    assert not list((tmp_path / "state").rglob("*.jsonl")), "the undo journal was left"
