"""The end-to-end tier's fixtures: a tmux terminal, killed after the test."""

from __future__ import annotations

import os
from collections.abc import Iterator

import pytest

from tests.e2e.term import Term


@pytest.fixture
def term() -> Iterator[Term]:
    t = Term(f"abtui-e2e-{os.getpid()}")
    try:
        yield t
    finally:
        t.close()
