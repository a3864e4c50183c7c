"""docs/architecture.md names only what exists: what it cites as code is checked against the
source (read with `ast`, nothing imported), so a move or a rename that leaves the page behind
fails here.

What counts as cited, in backticks (`…`) unless said:
- a path with a `/` (`measure/engine/front.py`, `tests/unit/…`, and in a package's row of the
  table its own folders, `engine/front.py`): a file or folder under the repository's root,
  abtui/ or one of abtui's packages;
- a file name alone (`sections.py`): some file of that name under abtui/ or tests/;
- a dotted module path `abtui.x.y` anywhere in the text (backticks or not), with an optional
  last `.Name`: the module exists, and so does the name in it (a definition or an import);
  one that is a file's name (`abtui.tcss`) is that file;
- a capitalised name (`PairRun`, `HostKnobs`), alone or with one member
  (`IntervalReader._take`, `Event.of()`): a class, function or assignment of that name
  somewhere in abtui, and its member defined in that class's body. Textual's own names the
  page cites (`Widget.refresh`, `Binding`, `App`) are listed in EXTERNAL.
Lower-case `a.b` forms (`engine.book`: an attribute of an object) and the rest are prose.
"""

from __future__ import annotations

import ast
import re
from collections import defaultdict
from functools import cache
from pathlib import Path

from tests.unit import source

ABTUI = source.ABTUI
ROOT = ABTUI.parent
DOC = ROOT / "docs" / "architecture.md"
EXTERNAL = {"App", "Binding", "Widget.refresh", "StylesCache"}  # Textual's, not abtui's


def _module_of(path: Path) -> str:
    parts = path.relative_to(ROOT).with_suffix("").parts
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


@cache
def _index() -> tuple[dict[str, set[str]], dict[str, set[str]]]:
    """Each module's top-level names; each class's member names (classes by name, merged).
    Read once a run: a caller must not change them."""
    modules: dict[str, set[str]] = {}
    members: dict[str, set[str]] = defaultdict(set)
    for path in source.paths():
        names: set[str] = set()
        for node in source.nodes(path):
            if isinstance(node, (ast.ClassDef, ast.FunctionDef, ast.AsyncFunctionDef)):
                names.add(node.name)
            elif isinstance(node, (ast.Assign, ast.AnnAssign)):
                targets = node.targets if isinstance(node, ast.Assign) else [node.target]
                names.update(t.id for t in targets if isinstance(t, ast.Name))
            elif isinstance(node, (ast.Import, ast.ImportFrom)):
                names.update((a.asname or a.name).split(".")[0] for a in node.names)
            if isinstance(node, ast.ClassDef):
                for stmt in ast.walk(node):
                    if isinstance(stmt, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
                        members[node.name].add(stmt.name)
                    elif isinstance(stmt, ast.AnnAssign) and isinstance(stmt.target, ast.Name):
                        members[node.name].add(stmt.target.id)
                    elif isinstance(stmt, ast.Assign):
                        members[node.name].update(
                            t.id for t in stmt.targets if isinstance(t, ast.Name))
                        members[node.name].update(
                            t.attr for t in stmt.targets if isinstance(t, ast.Attribute))
        modules[_module_of(path)] = names
    return modules, members


def problems(text: str) -> list[str]:
    modules, members = _index()
    defined = set().union(*modules.values())
    files = {p.name for top in (ABTUI, ROOT / "tests") for p in top.rglob("*")}
    out: list[str] = []
    for dotted in sorted(set(re.findall(r"\babtui(?:\.\w+)+", text))):
        if dotted in modules or dotted in files:  # `abtui.tcss` is a file
            continue
        head, _, name = dotted.rpartition(".")
        if head not in modules or name not in modules[head]:
            out.append(f"no module or name {dotted}")
    for span in sorted(set(re.findall(r"`([^`\n]+)`", text))):
        span = re.sub(r"\(.*\)$", "", span.strip())
        if "/" in span and re.fullmatch(r"[\w./-]+", span):
            bases = (ROOT, ABTUI, *(d for d in ABTUI.iterdir() if d.is_dir()))
            if not any((base / span).exists() for base in bases):
                out.append(f"no file {span}")
        elif re.fullmatch(r"\w+\.py", span):
            if span not in files:
                out.append(f"no file named {span}")
        elif span in EXTERNAL:
            continue
        elif m := re.fullmatch(r"([A-Z]\w*)(?:\[\w+\])?(?:\.(\w+))?", span):
            cls, member = m.groups()
            if cls not in defined:
                out.append(f"no definition {cls}")
            elif member and member not in members.get(cls, set()):
                out.append(f"no member {cls}.{member}")
    return out


def test_the_reader_finds_what_is_missing() -> None:
    text = ("`measure/engine/front.py` `measure/engine.py` `sections.py` `nowhere.py` "
            "abtui.measure.engine.front.Engine abtui.measure.engine_runs "
            "`PairRun` `PairRun._emit_interval` `IntervalReader._take` `Event.of()` "
            "`Event[IntervalMeasured]` `engine.book` `NoSuchThing`")
    assert set(problems(text)) == {
        "no module or name abtui.measure.engine_runs", "no file measure/engine.py",
        "no definition NoSuchThing", "no member PairRun._emit_interval",
        "no file named nowhere.py"}


def test_the_architecture_page_names_what_exists() -> None:
    assert problems(DOC.read_text(encoding="utf-8")) == []
