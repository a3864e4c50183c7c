"""The alternation's design is pure: `abtui bisect` and `abtui run` check a design and its
options with it before anything is measured, without loading the statistics (numpy)."""

from __future__ import annotations

import subprocess
import sys


def _loaded_after(statement: str) -> set[str]:
    code = f"import sys\n{statement}\nprint(' '.join(sorted(sys.modules)))"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         check=True, timeout=60).stdout
    return set(out.split())


def test_the_design_and_the_bisect_command_load_no_numpy() -> None:
    loaded = _loaded_after("import abtui.measure.alternate.design\nimport abtui.commands.bisect")
    assert "abtui.measure.alternate.design" in loaded
    assert "numpy" not in loaded
    assert "abtui.measure.alternate.verdicts" not in loaded


def test_the_designs_are_one_list() -> None:
    from abtui.commands import bisect
    from abtui.measure.alternate import design

    assert bisect.DESIGNS is design.DESIGNS
