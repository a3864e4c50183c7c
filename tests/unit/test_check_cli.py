"""`abtui check` with a profile that cannot be loaded: one line, exit 2 (no hosts needed)."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]


def _check(profile: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "abtui", "check", str(profile)], cwd=ROOT,
                          capture_output=True, text=True, timeout=60)


def test_bad_profile_exits_2(tmp_path):
    profile = tmp_path / "bad.toml"
    profile.write_text("[profile\nname = ")
    result = _check(profile)
    assert result.returncode == 2
    assert profile.name in result.stderr and "Traceback" not in result.stderr
    assert len(result.stderr.strip().splitlines()) == 1
    missing = _check(tmp_path / "missing.toml")
    assert missing.returncode == 2 and "Traceback" not in missing.stderr
