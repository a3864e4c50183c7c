"""The domain never imports Textual: every module outside abtui.ui (and the console's model
wing, abtui.ui.model), imported alone in a fresh interpreter, leaves `textual` out of sys.modules
(harlequin's check). Found by walking the package, so new modules (the engine) are covered."""

from __future__ import annotations

import pkgutil
import subprocess
import sys

import pytest

import abtui

UI_PLAIN = "abtui.ui.model"  # the console's model wing: no Textual either
DOMAIN = sorted(m.name for m in pkgutil.walk_packages(abtui.__path__, "abtui.")
                if (not m.name.startswith("abtui.ui.") or m.name.startswith(UI_PLAIN))
                and m.name != "abtui.__main__")  # that one runs the CLI


def _imported(module: str, watch: tuple[str, ...]) -> list[str]:
    code = (f"import sys, {module}\n"
            f"print(','.join(m for m in {watch!r} if m in sys.modules))")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         check=True, timeout=60).stdout.strip()
    return [m for m in out.split(",") if m]


def test_the_walk_finds_the_domain() -> None:
    for name in ("abtui.core.model", "abtui.core.controller", "abtui.measure.replay.controller",
                 "abtui.profile", "abtui.sessions.writer", "abtui.reports.stats",
                 "abtui.reports.report", "abtui.parse", "abtui.ui.model.state",
                 "abtui.commands.tui"):
        assert name in DOMAIN
    assert "abtui.ui.app" not in DOMAIN


def test_no_domain_module_imports_textual_or_scipy() -> None:
    """One interpreter per module would take a minute: import them all in one, then each of
    the few that matter most alone (a shared interpreter could hide an import order)."""
    code = ("import importlib, sys\n"
            f"for m in {DOMAIN!r}: importlib.import_module(m)\n"
            "print(','.join(m for m in ('textual', 'scipy') if m in sys.modules))")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         check=True, timeout=60).stdout.strip()
    assert out == ""


@pytest.mark.parametrize("module", ["abtui.measure.replay.controller", "abtui.reports.stats",
                                    "abtui.reports.report", "abtui.cli", "abtui.commands.tui",
                                    "abtui.ui.model.state"])
def test_module_alone_does_not_import_textual(module: str) -> None:
    assert _imported(module, ("textual", "scipy")) == []


def test_the_console_does_import_textual() -> None:
    """The check above can fail: the UI module does put textual in sys.modules."""
    assert _imported("abtui.ui.app", ("textual",)) == ["textual"]
