"""A lab a run is measuring on is not taken down or rebuilt under it: `lab down` and a rebuild
refuse, naming the run's process, and the run goes on (nothing of the lab was touched)."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from abtui.lab.lease import LabInUse
from abtui.lab.netns import Lab
from tests.lab.engine_kit import headless_run, interrupt, session_intervals, wait_for

pytestmark = [pytest.mark.lab, pytest.mark.usefixtures("no_strays")]


def test_a_lab_a_run_uses_is_neither_taken_down_nor_rebuilt(lab: Lab, tmp_path: Path):
    out = tmp_path / "s.jsonl"
    with headless_run(lab, out) as proc:
        with pytest.raises(LabInUse, match=rf"PID {proc.pid} \(.* run .*\): not taking it down"):
            lab.down()
        with pytest.raises(LabInUse, match=rf"PID {proc.pid} .*not rebuilding it with 1 pairs"):
            lab.up(pairs=1)
        env = dict(os.environ, ABTUI_LAB=f"{lab.name},{lab.ifprefix},{lab.mgmt}",
                   ABTUI_LAB_DIR=str(lab.state_dir.parent))
        cli = subprocess.run([sys.executable, "-m", "abtui", "lab", "down"], env=env,
                             capture_output=True, text=True, timeout=60)
        assert cli.returncode == 1 and f"PID {proc.pid} (" in cli.stderr
        assert len(cli.stderr.strip().splitlines()) == 1, cli.stderr
        # the run goes on, on an untouched lab
        seen = session_intervals(out)
        wait_for(lambda: session_intervals(out) >= seen + 4)
        assert lab.status()["ok"] and lab.pair_count() == 2
        err = interrupt(proc)
    assert proc.returncode == 130, err
    assert "link lost" not in err
    # the run's lease went with it: the lab can be taken down now (the fixture does)
    lab.refuse_if_used("taking it down")
