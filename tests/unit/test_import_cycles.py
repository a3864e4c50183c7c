"""No two modules import each other, however indirectly: every import counts, those under
`TYPE_CHECKING` and those inside a function included (a cycle hidden there still ties the two
modules into one). Read from the source with `ast`, so nothing is imported to check it."""

from __future__ import annotations

import ast
from collections.abc import Set
from functools import cache
from graphlib import CycleError, TopologicalSorter
from pathlib import Path

from tests.unit import source

ROOT = source.ABTUI


def _module(path: Path) -> str:
    parts = path.relative_to(ROOT.parent).with_suffix("").parts
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


MODULES = {_module(p): p for p in source.paths()}


def _imports(name: str, tree: ast.AST, skip: Set[int] = frozenset()) -> set[str]:
    """The abtui modules a module's source imports (a package's `from p import m` names
    the module m when there is one); `skip`: the ids of import nodes not to count."""
    out: set[str] = set()
    for node in ast.walk(tree):
        if id(node) in skip:
            continue
        if isinstance(node, ast.Import):
            out.update(a.name for a in node.names)
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:  # relative: from the module's own package
                package = name.rsplit(".", node.level)[0]
                base = f"{package}.{base}" if base else package
            for alias in node.names:
                sub = f"{base}.{alias.name}"
                out.add(sub if sub in MODULES else base)
    return {m for m in out if m in MODULES and m != name}


@cache
def graph() -> dict[str, set[str]]:
    """abtui's import graph (read once a run: the caller must not change it)."""
    return {name: _imports(name, source.tree(path)) for name, path in MODULES.items()}


def _cycle(edges: dict[str, set[str]]) -> list[str] | None:
    try:
        TopologicalSorter(edges).prepare()
    except CycleError as exc:
        return list(exc.args[1])
    return None


def test_the_reader_sees_type_checking_and_function_imports() -> None:
    # the two cycles this check was written against, each half of it a guarded import
    edges = graph()
    assert "abtui.core.events" in edges["abtui.sessions.session"]
    assert "abtui.reports.naming" in edges["abtui.reports.cpu"]
    assert _cycle({"a": {"b"}, "b": {"a"}}) is not None
    text = ("from typing import TYPE_CHECKING\nif TYPE_CHECKING:\n"
            "    from abtui.core import events\n"
            "def f():\n    from abtui.reports.report import markdown\n")
    assert _imports("abtui.x", ast.parse(text)) == {"abtui.core.events",
                                                      "abtui.reports.report"}


def test_no_import_cycle() -> None:
    cycle = _cycle(graph())
    assert cycle is None, " -> ".join(cycle or [])
