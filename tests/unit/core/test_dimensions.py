"""One vocabulary: the plan's dimensions beside knobs (`direction`, `tunnel`) and the
directions are named in abtui/core/dimensions.py and imported from there by every layer; no
other module defines them again (they were defined in four: the profile's schema, the plan,
the report's commands and the procedure tables' order)."""

from __future__ import annotations

import ast
from pathlib import Path

from abtui.core import dimensions
from tests.unit import source

ROOT = Path(dimensions.__file__).resolve().parents[1]
NAMES = {"DIRECTION", "DIRECTIONS", "TUNNEL", "DEFAULT_DIRECTIONS", "DIRECTION_DIMENSION"}


def test_the_dimensions_are_defined_once() -> None:
    again = []
    for path in source.paths():
        if path == Path(dimensions.__file__).resolve():
            continue
        for node in source.nodes(path):
            if isinstance(node, ast.Assign) and node.col_offset == 0:
                again += [f"{path.relative_to(ROOT)}: {t.id}" for t in node.targets
                          if isinstance(t, ast.Name) and t.id in NAMES]
    assert again == []


def test_the_directions_a_profile_may_list_hold_the_default_ones() -> None:
    assert set(dimensions.DEFAULT_DIRECTIONS) <= set(dimensions.DIRECTIONS)
    assert dimensions.DIRECTION == "direction" and dimensions.TUNNEL == "tunnel"
