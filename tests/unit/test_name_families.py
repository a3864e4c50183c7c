"""No family of three or more modules sharing a name prefix lies flat in one folder of abtui:
a prefix that names a family is a folder's job (`measure/engine/`, `parse/iperf3/`, `lab/vm/`).

The rule, read from file names only: a module's *first word* is its name up to the first `_`
(`engine_runs` → `engine`, `vmboot` → `vmboot`). A first word W of some module in a folder names
a family: every module of that folder whose first word starts with W (`vm`: `vm`, `vmboot`,
`vmpairs`; `engine`: `engine`, `engine_runs`, `engine_knobs`). `__init__` is no member; a
word of one letter names nothing."""

from __future__ import annotations

from collections import defaultdict
from pathlib import Path

import abtui

ROOT = Path(abtui.__file__).parent


def families(stems: list[str]) -> dict[str, list[str]]:
    """Each first word that names a family of two or more, with its members, sorted."""
    firsts = {s: s.split("_", 1)[0] for s in stems if s != "__init__"}
    out: dict[str, list[str]] = defaultdict(list)
    for word in set(firsts.values()):
        if len(word) < 2:
            continue
        members = sorted(s for s, first in firsts.items() if first.startswith(word))
        if len(members) >= 2:
            out[word] = members
    return dict(out)


def _folders() -> dict[str, list[str]]:
    found: dict[str, list[str]] = defaultdict(list)
    for path in ROOT.rglob("*.py"):
        found[str(path.parent.relative_to(ROOT))].append(path.stem)
    return found


def test_the_rule_finds_the_families_it_was_written_against() -> None:
    assert families(["vm", "vmboot", "vmpairs", "kernels"]) == {
        "vm": ["vm", "vmboot", "vmpairs"]}
    flat = ["engine", "engine_runs", "engine_knobs", "runs", "run_cpu", "run_procs", "bus"]
    assert families(flat) == {"engine": ["engine", "engine_knobs", "engine_runs"],
                              "run": ["run_cpu", "run_procs", "runs"]}
    assert families(["phases", "phase_book", "plan", "__init__", "a_b", "a_c", "a"]) == {
        "phase": ["phase_book", "phases"]}


def test_no_family_of_three_is_left_flat() -> None:
    flat = {f"abtui/{folder}: {word}*": members
            for folder, stems in _folders().items()
            for word, members in families(stems).items() if len(members) >= 3}
    assert not flat, flat
