"""A session file on a disk that fills up mid-run (a small tmpfs, filled while `abtui run`
writes there), and `--set` values abtui itself refuses: real hosts, a real full disk.

The run stops in one line naming the file and the error, sets every host back, never says
"session written", exits 1; what it wrote is whole records only (the kernel's short write cut
away), readable by `abtui export`; space coming back a moment later changes none of that.
"""

from __future__ import annotations

import contextlib
import errno
import json
import os
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from abtui.lab.netns import Lab
from abtui.sessions.reader import load_events
from tests.lab.engine_kit import stray_pids
from tests.lab.namespaces import ns_exec
from tests.reliability import Reliability

pytestmark = [pytest.mark.lab, pytest.mark.usefixtures("no_strays")]
ROOT = Path(__file__).resolve().parents[2]
WMEM = "4096 16384 65536"
FULL_S = 15.0  # the disk is kept full until the run stops, this long at most


@contextlib.contextmanager
def small_disk(where: Path, size: str = "1m") -> Iterator[Path]:
    """A tmpfs of `size` mounted at `where` (unmounted when done, whatever happens)."""
    where.mkdir()
    subprocess.run(["mount", "-t", "tmpfs", "-o", f"size={size},mode=0755", "tmpfs",
                    str(where)], check=True)
    try:
        yield where
    finally:
        subprocess.run(["umount", "-l", str(where)], check=False)


def fill(folder: Path) -> Path:
    """Fill the file system of `folder` until it says ENOSPC; the filler's path."""
    filler = folder / "filler"
    block = b"\0" * 4096
    with open(filler, "wb", buffering=0) as fh:
        while True:
            try:
                fh.write(block)
            except OSError as exc:
                assert exc.errno == errno.ENOSPC, exc
                break
    return filler


def _env(tmp_path: Path) -> dict[str, str]:
    return {**os.environ, "XDG_STATE_HOME": str(tmp_path / "state"), "PYTHONPATH": str(ROOT)}


def _abtui(tmp_path: Path, *args: str) -> subprocess.Popen[str]:
    return subprocess.Popen([sys.executable, "-m", "abtui", *args], cwd=ROOT,
                            env=_env(tmp_path), text=True, stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE)


def _wmem(lab: Lab) -> dict[str, str]:
    return {h.alias: " ".join(ns_exec(lab, h.alias, "sysctl", "-n", "net.ipv4.tcp_wmem").split())
            for h in lab.hosts(2)}


@pytest.mark.reliability(
    "17", "the session's disk fills up mid-run (`abtui run --out` on a small tmpfs, filled)",
    "one line naming the file and the error, no traceback, no \"session written\"; every "
    "host set back (tcp_wmem), nothing left to recover; exit 1 although space came back; "
    "the file whole records only, read by `abtui export`")
def test_a_full_disk_stops_the_run_and_sets_every_host_back(lab: Lab, tmp_path: Path,
                                                            reliability: Reliability):
    before = _wmem(lab)
    assert WMEM not in before.values()
    with small_disk(tmp_path / "disk") as disk:
        out = disk / "s.jsonl"
        proc = _abtui(tmp_path, "run", str(lab.profile_path), "--headless", "--duration",
                      "60", "--set", f"tcp_wmem={WMEM}", "--out", str(out))
        try:
            deadline = time.monotonic() + 30
            while b'"kind":"interval"' not in (out.read_bytes() if out.exists() else b""):
                assert time.monotonic() < deadline and proc.poll() is None, \
                    proc.communicate(timeout=30)
                time.sleep(0.2)
            changed = [a for a, v in _wmem(lab).items() if v == WMEM]
            assert len(changed) == 2, _wmem(lab)  # the run set both senders
            filled = time.monotonic()
            filler = fill(disk)
            # full until the run stops (at most FULL_S): its file's last page still has room
            # for up to 4 KB of records (a tmpfs charges by the page), about two seconds of
            # a 2-pair run's events, so a fixed second full was sometimes too short
            while proc.poll() is None and time.monotonic() - filled < FULL_S:
                time.sleep(0.1)
            filler.unlink()  # space back: the session is not whole, the run stays stopped
            _, err = proc.communicate(timeout=60)
            stopped_s = time.monotonic() - filled
        finally:
            if proc.poll() is None:
                proc.kill()
                proc.wait()
        lines = err.splitlines()
        assert proc.returncode == 1, err
        assert "Traceback" not in err and "session written" not in err, err
        said = [ln for ln in lines if "No space left on device" in ln]
        assert len(said) == 1, err
        assert said[0].startswith(f"abtui: {out}: could not write the session (No space "
                                  "left on device); the "), said
        assert said[0].endswith("stopped, every host set back"), said
        assert _wmem(lab) == before
        assert stray_pids(lab) == {}
        assert not list((tmp_path / "state").glob("abtui/undo/*.jsonl"))  # nothing to recover
        raw = out.read_bytes()
        assert raw.endswith(b"\n")
        for line in raw.splitlines():
            json.loads(line)  # no two records glued into one line
        events = load_events(out)
        intervals = sum(1 for e in events if e.kind == "interval")
        export = subprocess.run([sys.executable, "-m", "abtui", "export", str(out), "--format",
                                 "json"], cwd=ROOT, env=_env(tmp_path), capture_output=True,
                                text=True, timeout=60)
        assert export.returncode == 0, export.stderr
        assert json.loads(export.stdout)["pairs"] == ["A", "B"]
    assert intervals > 0
    reliability.row(events_kept=len(events), intervals_kept=intervals,
                    stopped_after_filling_s=round(stopped_s, 1), exit_code=proc.returncode)


@pytest.mark.reliability(
    "18", "`abtui run --set` with a value abtui itself refuses (`tso=maybe`, a shell command "
    "in a tunnel type)",
    "exit 2 (bad input), one line naming the knob and the value; no host changed, nothing to "
    "recover, nothing run; a value the host refuses stays exit 1 (tests/lab/test_knobs.py)")
@pytest.mark.parametrize("setting", ["tso=maybe", "tunnel=vxlan; touch {marker}"])
def test_a_set_value_abtui_refuses_is_bad_input(lab: Lab, tmp_path: Path, setting: str,
                                                reliability: Reliability):
    before = _wmem(lab)
    marker = tmp_path / "ran"
    setting = setting.format(marker=marker)
    proc = _abtui(tmp_path, "run", str(lab.profile_path), "--headless", "--duration", "5",
                  "--set", setting, "--set", f"tcp_wmem={WMEM}", "--out",
                  str(tmp_path / "s.jsonl"))
    _, err = proc.communicate(timeout=60)
    assert proc.returncode == 2, err
    said = [ln for ln in err.splitlines() if "refused" in ln]
    assert len(said) == 1 and said[0].startswith(f"abtui: --set {setting} refused, not "
                                                 "started: "), err
    assert "Traceback" not in err and not marker.exists()
    assert _wmem(lab) == before
    assert not list((tmp_path / "state").glob("abtui/undo/*.jsonl"))
    reliability.row(exit_code=proc.returncode)
