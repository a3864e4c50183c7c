"""The end-to-end tier's fixtures: a tmux terminal, killed after the test."""

from __future__ import annotations

import os
import subprocess
from collections.abc import Iterator

import pytest

from tests.e2e.term import TMUX, Term


@pytest.fixture
def term() -> Iterator[Term]:
    t = Term(f"abtui-e2e-{os.getpid()}")
    try:
        yield t
    finally:
        subprocess.run([TMUX, "-L", t.socket, "kill-server"], capture_output=True)  # type: ignore[list-item]
