"""A guard for tests that feed hostile input to loaders: nothing they do may start a process."""

from __future__ import annotations

import contextlib
import os
import subprocess
from collections.abc import Iterator
from typing import Any
from unittest import mock


@contextlib.contextmanager
def nothing_runs() -> Iterator[None]:
    def refuse(*_a: Any, **_k: Any) -> None:
        raise AssertionError("the loader started a process")
    with mock.patch.object(subprocess.Popen, "__init__", refuse), \
            mock.patch.object(os, "system", refuse), mock.patch.object(os, "popen", refuse), \
            mock.patch.object(os, "execv", refuse), mock.patch.object(os, "execvp", refuse):
        yield
