"""The domain never imports Textual: each domain module, imported alone in a fresh interpreter,
leaves `textual` out of sys.modules (harlequin's check)."""

from __future__ import annotations

import importlib.util
import subprocess
import sys

import pytest

DOMAIN = ["abtui.model", "abtui.controller", "abtui.replay", "abtui.lab", "abtui.cli",
          "abtui.ui.state", "abtui.ui.export", "abtui.engine", "abtui.store", "abtui.stats",
          "abtui.report", "abtui.profile", "abtui.parse"]
PRESENT = [m for m in DOMAIN if importlib.util.find_spec(m) is not None]


@pytest.mark.parametrize("module", PRESENT)
def test_domain_module_does_not_import_textual(module: str) -> None:
    code = (f"import sys, {module}\n"
            "bad = sorted(m for m in ('textual', 'scipy') if m in sys.modules)\n"
            "print(','.join(bad))")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         check=True).stdout.strip()
    assert out == "", f"{module} pulls in {out}"


def test_the_console_does_import_textual() -> None:
    """The check above can fail: the UI module does put textual in sys.modules."""
    code = "import sys, abtui.ui.app; print('textual' in sys.modules)"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         check=True).stdout.strip()
    assert out == "True"
