"""Parts, not files: no class of abtui inherits from another class of abtui to spread one
object over modules. The few bases that are a real kind-of relation are named here, each with
why; anything else (a mixin holding half of a class's methods, a chain of layers sharing one
set of attributes) fails, as `HostLink(HostKeyChecks)` did."""

from __future__ import annotations

import ast

from tests.unit import source

PACKAGE = source.ABTUI

# base -> why subclassing it is a kind-of relation, not a file split
ALLOWED_BASES = {
    "AbtuiError": "exceptions: a kind of error, caught by their base",
    "LabError": "exceptions: a kind of lab error",
    "RemoteError": "exceptions: a kind of host failure (a lease held by another controller)",
    "Payload": "the event catalogue's dataclasses, one per kind",
    "UndoRecord": "the undo journal's lines, one dataclass per kind (as Payload's)",
    "Dialect": "an OS dialect (Linux, FreeBSD) filling in the same commands",
    "BuildCommands": "an OS's build commands (Linux, FreeBSD) filling in the same commands",
    "TunnelCommands": "an OS's tunnel commands (Linux, FreeBSD) filling in the same commands",
    "EventReader": "the one event dispatch; a reader defines its handlers",
    "_Modal": "Textual modal screens sharing their close binding",
}


def _classes() -> dict[str, tuple[str, list[str]]]:
    found: dict[str, tuple[str, list[str]]] = {}
    for path in source.paths():
        for node in source.nodes(path):
            if isinstance(node, ast.ClassDef):
                bases = [ast.unparse(b).split(".")[-1].split("[")[0] for b in node.bases]
                found[node.name] = (str(path.relative_to(PACKAGE.parent)), bases)
    return found


def test_no_class_inherits_from_the_packages_own_classes_to_split_itself() -> None:
    classes = _classes()
    wrong = [f"{where}: {name}({base})" for name, (where, bases) in classes.items()
             for base in bases if base in classes and base not in ALLOWED_BASES]
    assert not wrong, "classes built from the package's own classes: " + ", ".join(wrong)


def test_no_chain_of_the_packages_own_classes_three_deep() -> None:
    classes = _classes()

    def depth(name: str) -> int:
        own = [b for b in classes[name][1] if b in classes]
        return 1 + max((depth(b) for b in own), default=0)

    deep = [name for name in classes if name not in ALLOWED_BASES and depth(name) >= 3
            and not {"AbtuiError", "LabError", "RemoteError"} & set(classes[name][1])]
    assert not deep, f"chains three deep: {deep}"
