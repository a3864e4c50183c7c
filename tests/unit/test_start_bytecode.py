"""What a start imports is compiled ahead: where PYTHONDONTWRITEBYTECODE is set, Python never
caches a module's bytecode, so whatever `make` leaves uncompiled is compiled at every start
(Textual's driver and asyncssh were: 0.04 s of CPU before the first frame, 0.2 s before the
first number)."""

from __future__ import annotations

import importlib.util
import json
import re
import subprocess
import sys
from pathlib import Path

from tests.bench import bench_ui

ROOT = Path(__file__).resolve().parents[2]
# imported by the Makefile's WARM_IMPORTS (their bytecode cached then); far too large to compile
# whole
WARM_IMPORTED = {"numpy", "scipy"}

# the console as it starts on hosts and connects: the modules it imports, Textual's terminal
# driver and rich's emoji table (imported by its first frame) and asyncssh (by its first link)
CONSOLE = """
import json, sys, sysconfig
import abtui.commands.tui, abtui.ui.app, abtui.ui.guard, abtui.measure.engine.front
import textual.drivers.linux_driver, rich._emoji_codes
from abtui.remote.sshlib import asyncssh
asyncssh.connect
site = sysconfig.get_path("purelib")
print(json.dumps(sorted({m.__file__[len(site) + 1:].split("/")[0]
                         for m in list(sys.modules.values())
                         if (getattr(m, "__file__", None) or "").startswith(site + "/")})))
"""


def _make_packages() -> set[str]:
    text = (ROOT / "Makefile").read_text()
    found = re.search(r"^DEP_PACKAGES := (.*)$", text, re.M)
    assert found, "the Makefile names no DEP_PACKAGES"
    return set(found.group(1).split())


def _imported(script: str) -> set[str]:
    """The site-packages packages a Python running `script` has imported (top-level modules
    left out: `make` compiles them with -l)."""
    out = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True,
                         check=True, cwd=ROOT).stdout
    return {name for name in json.loads(out) if not name.endswith((".py", ".so"))}


def test_the_makefile_compiles_every_package_the_console_imports() -> None:
    imported = _imported(CONSOLE)
    assert "textual" in imported and "asyncssh" in imported  # the probe saw the console
    # what any start imports, before abtui (a venv with setuptools: its `_distutils_hack`)
    interpreter = _imported(CONSOLE.split("import abtui", 1)[0]
                            + CONSOLE[CONSOLE.index("site = "):])
    missing = imported - _make_packages() - WARM_IMPORTED - interpreter
    assert not missing, f"imported by the console but not compiled by make: {sorted(missing)}"


def test_the_first_frame_bench_times_abtui_compiled() -> None:
    bench_ui.compiled()
    stale = []
    for source in sorted((ROOT / "abtui").rglob("*.py")):
        cached = Path(importlib.util.cache_from_source(str(source)))
        data = cached.read_bytes() if cached.exists() else b""
        # a pyc's header: magic, flags, the source's mtime and size (PEP 552)
        mtime = int.from_bytes(data[8:12], "little") if len(data) >= 16 else -1
        if mtime != int(source.stat().st_mtime) & 0xFFFFFFFF:
            stale.append(str(source.relative_to(ROOT)))
    assert not stale, f"not compiled: {stale[:5]}"
