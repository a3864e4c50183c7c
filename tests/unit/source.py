"""abtui's own source, parsed once per test run for the tests that read it with `ast` (the
architecture page's names, import cycles, class chains, the dimensions, measure's floors):
each parsed every module again and walked it whole, seconds of `make check`'s CPU between
them. The trees are shared: a reader must not change them."""

from __future__ import annotations

import ast
from functools import cache
from pathlib import Path

import abtui

ABTUI = Path(abtui.__file__).resolve().parent


@cache
def paths() -> tuple[Path, ...]:
    """Every module of abtui, in a stable order."""
    return tuple(sorted(ABTUI.rglob("*.py")))


@cache
def tree(path: Path) -> ast.Module:
    """The module at `path` (one of paths()), parsed."""
    return ast.parse(path.read_text(encoding="utf-8"), str(path))


@cache
def nodes(path: Path) -> tuple[ast.AST, ...]:
    """Every node of tree(path), in ast.walk's order."""
    return tuple(ast.walk(tree(path)))
