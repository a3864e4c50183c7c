"""Textual and asyncssh are bounded above to the versions tested (Textual's privates are
fenced in abtui.ui.render.textual_privates; asyncssh is used through its public API), and the
one installed is the newest the bound allows: a fresh `make setup` (CI's clean clone) installs
that one, so the UI and unit tests run on it, and this test fails, naming the newer release,
where the installed one is not the newest within the bound (a stale environment, or a bound
wider than tested).
The package index is asked through the installer's own client; unreachable, the test skips
and says so."""

from __future__ import annotations

import re
import shutil
import subprocess
import sys
import tomllib
from importlib.metadata import version
from pathlib import Path

import pytest
from packaging.requirements import Requirement
from packaging.version import Version

pytestmark = pytest.mark.ui

PYPROJECT = Path(__file__).resolve().parents[2] / "pyproject.toml"
BOUNDED = ("textual", "asyncssh")


def _requirement(name: str) -> Requirement:
    deps = tomllib.loads(PYPROJECT.read_text())["project"]["dependencies"]
    return next(r for r in map(Requirement, deps) if r.name == name)


@pytest.mark.parametrize("name", BOUNDED)
def test_bounded_above_and_the_installed_one_within(name: str) -> None:
    spec = _requirement(name).specifier
    assert any(s.operator == "<" for s in spec), f"{name}: no upper bound in {spec}"
    assert Version(version(name)) in spec, f"{name} {version(name)} is outside {spec}"


def _newest(requirement: str, name: str) -> str | None:
    """The version the installer would pick for `requirement` asked afresh (None: the one
    installed), or a skip when the package index cannot be reached."""
    uv = shutil.which("uv", path=str(Path(sys.executable).parent))
    if uv is not None:
        run = subprocess.run([uv, "pip", "install", "--dry-run", "--python", sys.executable,
                              "--upgrade-package", name, "--refresh-package", name,
                              requirement], capture_output=True, text=True, timeout=120)
        out = run.stdout + run.stderr
        if run.returncode:
            pytest.skip(f"the package index did not answer: {out.strip().splitlines()[-1:]}")
        found = re.search(rf"^ \+ {re.escape(name)}==(\S+)", out, re.MULTILINE)
        return found.group(1) if found else None
    run = subprocess.run([sys.executable, "-m", "pip", "index", "versions", name],
                         capture_output=True, text=True, timeout=120)
    listed = re.search(r"Available versions: (.*)", run.stdout)
    if run.returncode or listed is None:
        pytest.skip(f"the package index did not answer: {run.stderr.strip()[-200:]}")
    spec = Requirement(requirement).specifier
    newest = max(v for v in map(Version, listed.group(1).split(", ")) if v in spec)
    return None if newest == Version(version(name)) else str(newest)


@pytest.mark.parametrize("name", BOUNDED)
def test_the_installed_one_is_the_newest_the_bound_allows(name: str) -> None:
    requirement = str(_requirement(name))
    newer = _newest(requirement, name)
    assert newer is None, (f"{name} {newer} is the newest {requirement} allows, "
                           f"{version(name)} is installed: `make setup` again (CI installs "
                           "the newest), and see that the tests pass on it")
