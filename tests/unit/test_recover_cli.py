"""`abtui recover` without hosts: nothing pending, and --dry-run listing a dead writer's journal."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]


def _recover(state: Path, *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "abtui", "recover", *args], cwd=ROOT,
                          env={**os.environ, "XDG_STATE_HOME": str(state)},
                          capture_output=True, text=True, timeout=60)


def test_nothing_pending_and_dry_run(tmp_path):
    none = _recover(tmp_path)
    assert (none.returncode, none.stdout.strip()) == (0, "nothing to recover")
    undo = tmp_path / "abtui" / "undo"
    undo.mkdir(parents=True)
    records = [{"op": "start", "pid": 999999997},
               {"op": "host", "alias": "h1", "ssh_config": None, "known_hosts": None},
               {"op": "original", "host": "h1", "kind": "sysctl", "key": "net.x",
                "device": None, "value": "1"},
               {"op": "tunnel", "host": "h1", "type": "vxlan", "ifname": "abv1sabcd"},
               {"op": "pgid", "host": "h1", "pgid": 4242, "what": "iperf3"}]
    (undo / "x.jsonl").write_text("".join(json.dumps(r) + "\n" for r in records))
    dry = _recover(tmp_path, "--dry-run")
    assert dry.returncode == 0
    assert dry.stdout.splitlines() == ["h1: restore net.x = '1'", "h1: remove tunnel abv1sabcd",
                                       "h1: end process group 4242 (iperf3)"]
    assert (undo / "x.jsonl").exists()  # a dry run changes nothing
