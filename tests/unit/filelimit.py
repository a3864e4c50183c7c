"""Real write errors without root: a file size limit (RLIMIT_FSIZE). The kernel cuts a write
that crosses it short and refuses the next one with EFBIG ("File too large"), as a full disk
does with ENOSPC; Python ignores SIGXFSZ, so the error reaches the writer as an OSError. With
SIGXFSZ at its default, the same limit kills the process mid-write instead."""

from __future__ import annotations

import contextlib
import resource
import signal
import subprocess
import sys
from collections.abc import Callable, Iterator, Sequence
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]


@contextlib.contextmanager
def file_size_limit(limit: int) -> Iterator[None]:
    """No file written by this process may grow past `limit` bytes while inside."""
    assert signal.getsignal(signal.SIGXFSZ) is signal.SIG_IGN, "Python ignores SIGXFSZ"
    soft, hard = resource.getrlimit(resource.RLIMIT_FSIZE)
    resource.setrlimit(resource.RLIMIT_FSIZE, (limit, hard))
    try:
        yield
    finally:
        resource.setrlimit(resource.RLIMIT_FSIZE, (soft, hard))


_CLI = ("import signal, sys\n"
        "if sys.argv[1] == 'kill': signal.signal(signal.SIGXFSZ, signal.SIG_DFL)\n"
        "from abtui.cli import main\n"
        "sys.exit(main(sys.argv[2:]))\n")


def abtui_limited(args: Sequence[str], limit: int, *, killed: bool = False,
                  env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    """`abtui ARGS` whose files may not grow past `limit` bytes: a write error there
    (EFBIG), or with `killed` the process killed by SIGXFSZ in the middle of the write."""

    def limited() -> None:
        resource.setrlimit(resource.RLIMIT_CORE, (0, 0))
        resource.setrlimit(resource.RLIMIT_FSIZE, (limit, limit))

    preexec: Callable[[], None] = limited
    return subprocess.run([sys.executable, "-c", _CLI, "kill" if killed else "error", *args],
                          capture_output=True, text=True, timeout=120, cwd=ROOT,
                          preexec_fn=preexec,
                          env={**(env or {}), **_base_env()})


def _base_env() -> dict[str, str]:
    import os

    return {**os.environ, "PYTHONDONTWRITEBYTECODE": "1"}
