"""The lab the benches build: names of their own, never the user's lab or a test run's.

ABTUI_BENCH_LAB="name,ifprefix,mgmt" picks them (default "blab,abb,230"); each bench brings
the lab up in a temporary folder and takes it down again, even when it fails.
"""

from __future__ import annotations

import os
import tempfile
from collections.abc import Callable
from pathlib import Path
from typing import TypeVar

from abtui.lab.netns import Lab

T = TypeVar("T")
DEFAULT = "blab,abb,230"


def bench_lab(state: Path) -> Lab:
    raw = os.environ.get("ABTUI_BENCH_LAB", DEFAULT)
    try:
        name, ifprefix, mgmt = raw.split(",")
        return Lab(name=name, octet=19, ifprefix=ifprefix, mgmt=int(mgmt), state_dir=state / name)
    except ValueError as exc:
        raise ValueError(f"ABTUI_BENCH_LAB={raw!r}: expected name,ifprefix,mgmt ({exc})") \
            from exc


def with_lab(pairs: int, measure: Callable[[Lab], T]) -> T:
    """`measure(lab)` on a freshly built lab of `pairs` pairs; the lab is down afterwards."""
    with tempfile.TemporaryDirectory(prefix="abtui-bench-") as tmp:
        lab = bench_lab(Path(tmp))
        lab.down()  # leftovers of an earlier, killed bench
        lab.up(pairs=pairs)
        try:
            return measure(lab)
        finally:
            lab.down()
