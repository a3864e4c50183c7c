"""measure/'s modules stand on at most four floors: the longest chain of imports from one of
its modules to another (headless → engine.front → engine.runs → ports, say) is at most four
modules long, so a reader who opens a module finds what it stands on within three steps.

Which imports count, read from the source with `ast` (nothing is imported to check it): every
import of an abtui.measure module by an abtui.measure module, at module level or inside a
function, a method or a class (an import hidden in a function still loads the module at run
time, and still ties the two). Not counted: imports under `if TYPE_CHECKING:`. Those run only
for the type checker: the module names a type of an object its owner hands in (the engine
hands its run scheduler the host pool and the run class; a run hands its parts their context)
and never loads the other module, so no chain of loading runs through them; mypy still checks
both sides. Also not counted: the package `__init__` a dotted import loads first (each is a
docstring, standing on nothing)."""

from __future__ import annotations

import ast
from functools import cache

from tests.unit import source as abtui_source
from tests.unit.test_import_cycles import MODULES, _imports

LIMIT = 4
PACKAGE = "abtui.measure"


def _guarded(tree: ast.AST) -> set[int]:
    """The ids of the import nodes under an `if TYPE_CHECKING:` (or `typing.TYPE_CHECKING`)."""
    out: set[int] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.If) and "TYPE_CHECKING" in ast.unparse(node.test):
            for stmt in node.body:
                out.update(id(n) for n in ast.walk(stmt))
    return out


def imports(name: str, source: str | ast.Module) -> set[str]:
    """The abtui.measure modules a module's source (or its tree) imports at run time (see the
    docstring)."""
    tree = ast.parse(source) if isinstance(source, str) else source
    return {m for m in _imports(name, tree, _guarded(tree)) if m.startswith(PACKAGE + ".")}


def graph() -> dict[str, set[str]]:
    return {name: imports(name, abtui_source.tree(path))
            for name, path in MODULES.items() if name == PACKAGE
            or name.startswith(PACKAGE + ".")}


def longest(edges: dict[str, set[str]]) -> list[str]:
    """The longest chain of imports, as the modules along it (there is no cycle:
    test_import_cycles)."""
    @cache
    def chain(name: str) -> tuple[str, ...]:
        below = [chain(d) for d in sorted(edges.get(name, ()))]
        return (name, *max(below, key=len, default=()))

    return list(max((chain(n) for n in sorted(edges)), key=len, default=()))


def test_the_reader_counts_function_imports_and_not_type_checking_ones() -> None:
    source = ("from typing import TYPE_CHECKING\n"
              "from abtui.measure import ports\n"
              "if TYPE_CHECKING:\n    from abtui.measure.engine.hosts import HostPool\n"
              "def f():\n    from abtui.measure.run.pair import PairRun\n"
              "class C:\n    def g(self):\n        import abtui.measure.tasks\n")
    assert imports("abtui.measure.x", source) == {
        "abtui.measure.ports", "abtui.measure.run.pair", "abtui.measure.tasks"}
    assert longest({"a": {"b", "c"}, "b": {"c"}, "c": set()}) == ["a", "b", "c"]


def test_measure_stands_on_at_most_four_floors() -> None:
    chain = longest(graph())
    assert len(chain) <= LIMIT, " → ".join(chain)
