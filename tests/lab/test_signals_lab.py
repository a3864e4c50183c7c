"""SIGTERM and SIGHUP end every command as ctrl+c does (abtui.core.signals): headless `abtui run`
with a `--set` value, `abtui run --alternate` and `abtui bisect --headless`, each signalled while
it measures with a changed tcp_rmem on the receivers, stop, set every host back, remove their
undo journal, say so and exit 128 + the signal's number. Checked out of band: the receivers'
sysctl read in their namespaces, no iperf3 left there, no undo journal in the command's state
folder, the command's process gone. A second signal while the first one's restore runs (a
closed terminal after systemd's SIGTERM) does not cut it short. Real sshd, iperf3 and sysctls in
namespaces."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from abtui.lab.netns import Lab
from tests.lab.engine_kit import session_intervals, stray_pids, wait_for
from tests.lab.namespaces import ns_exec
from tests.lab.test_alternate_lab import _profile  # the lab's profile at 0.5 s intervals
from tests.reliability import Reliability

pytestmark = [pytest.mark.lab, pytest.mark.usefixtures("no_strays")]  # nothing left behind

ROOT = Path(__file__).resolve().parents[2]
TINY = "4096 8192 16384"


def _receivers(lab: Lab) -> dict[str, str]:
    return {h.alias: " ".join(ns_exec(lab, h.alias, "sysctl", "-n", "net.ipv4.tcp_rmem").split())
            for h in lab.hosts(2) if h.role == "receiver"}


def _command(which: str, profile: Path, out: Path, big: str) -> list[str]:
    """The command; `big` the receivers' own tcp_rmem (the kernel's default)."""
    abtui = [sys.executable, "-m", "abtui"]
    if which == "run":
        return [*abtui, "run", str(profile), "--headless", "--duration", "120",
                "--set", f"tcp_rmem={TINY}", "--out", str(out)]
    if which == "alternate":
        return [*abtui, "run", str(profile), "--headless", "--alternate",
                f"tcp_rmem={TINY},{big}", "--every", "2", "--max-runs", "40", "--out", str(out)]
    return [*abtui, "bisect", str(profile), "--knob", "tcp_rmem", "--good", big, "--bad", TINY,
            "--candidates", f"{big},{TINY}", "--threshold", "5", "--every", "2", "--pair", "A",
            "--headless", "--out", str(out)]


def _changed(lab: Lab, before: dict[str, str]) -> bool:
    return _receivers(lab) != before


@pytest.mark.reliability(
    "31", "SIGTERM or SIGHUP to a headless `abtui run` (`--set`), `run --alternate` and "
    "`bisect --headless` while the receivers' tcp_rmem is changed",
    "the command stops, says `stopped, every host set back` and which signal ended it, exits "
    "143 (SIGTERM) / 129 (SIGHUP); out of band: every receiver's tcp_rmem as before, no iperf3 "
    "in the namespaces, no undo journal, the process gone; a SIGTERM during SIGHUP's restore "
    "does not cut it short")
@pytest.mark.parametrize("which", ["run", "alternate", "bisect"])
@pytest.mark.parametrize("sig", [signal.SIGTERM, signal.SIGHUP], ids=["SIGTERM", "SIGHUP"])
def test_a_signal_ends_a_headless_command_as_ctrl_c_does(lab: Lab, tmp_path: Path, which: str,
                                                         sig: signal.Signals,
                                                         reliability: Reliability):
    before = _receivers(lab)
    (big,) = set(before.values())
    state = tmp_path / "state"
    out = tmp_path / "s.jsonl"
    env = {**os.environ, "XDG_STATE_HOME": str(state), "PYTHONPATH": str(ROOT)}
    proc = subprocess.Popen(_command(which, _profile(lab, tmp_path), out, big), cwd=ROOT, env=env,
                            stderr=subprocess.PIPE, text=True)
    try:
        wait_for(lambda: session_intervals(out) >= 3 and _changed(lab, before), timeout=60)
        assert list((state / "abtui" / "undo").glob("*.jsonl")), "no undo journal while running"
        signalled = time.monotonic()
        proc.send_signal(sig)
        if sig == signal.SIGHUP:  # then systemd's SIGTERM, while the restore runs
            time.sleep(0.1)
            proc.send_signal(signal.SIGTERM)
        err = proc.communicate(timeout=60)[1]
        took = time.monotonic() - signalled
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
    assert proc.returncode == 128 + sig, err
    assert "stopped, every host set back" in err, err
    assert err.rstrip().endswith(f"abtui: ended by {sig.name}"), err
    assert "Traceback" not in err
    assert _receivers(lab) == before
    assert not stray_pids(lab, ("iperf3",))
    assert not list((state / "abtui" / "undo").glob("*.jsonl"))
    assert '"session_end"' in out.read_text()
    reliability.row(command=which, signal=sig.name, exit=proc.returncode, ended_in_s=took)
