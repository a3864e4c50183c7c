"""The lab tier's fixtures (the lab itself is in tests/conftest.py: the end-to-end tier uses it
too)."""

from __future__ import annotations

import contextlib
import os
import signal
from collections.abc import Iterator

import pytest

from abtui.lab.netns import Lab
from tests.lab.engine_kit import stray_pids


@pytest.fixture
def no_strays(lab: Lab) -> Iterator[None]:
    """After each test, failed ones included: nothing of ours is left on any host."""
    yield
    left = stray_pids(lab)
    for entries in left.values():  # clean up for the next test, then fail this one
        for pid, _ in entries:
            with contextlib.suppress(ProcessLookupError):
                os.kill(pid, signal.SIGKILL)
    assert not left, f"processes left on lab hosts: {left}"
