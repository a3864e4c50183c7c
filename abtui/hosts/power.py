"""A `command` build's command (power control, PXE, `abtui lab boot`), run on the controller.

An argv, never a shell: each word's placeholders are replaced as plain text. It runs in a
process group of its own, stdin from /dev/null, with abtui's environment plus ABTUI_HOST,
ABTUI_VALUE, ABTUI_RELEASE and ABTUI_BOOT_ID; past its time limit the group gets SIGTERM, then
SIGKILL 5 s later. Exit 0 means "the host is booting the build (or has booted it)"; the
caller then waits for the host itself.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import signal
from collections.abc import Mapping
from dataclasses import dataclass

from abtui.core.builds import fill

KILL_GRACE_S = 5.0
KEPT_LINES = 20  # the command's last output lines kept for the one line a failure shows


@dataclass(frozen=True, slots=True)
class Ran:
    """How the command ended: its exit status (None: killed at its time limit), its output."""

    status: int | None
    output: str

    @property
    def last_line(self) -> str:
        lines = [x.strip() for x in self.output.splitlines() if x.strip()]
        return lines[-1] if lines else ""


def command_argv(words: tuple[str, ...], values: Mapping[str, str]) -> list[str]:
    """The argv with `{host}`, `{value}`, ... replaced (plain text, one word each)."""
    return [fill(w, dict(values)) for w in words]


async def run_command(argv: list[str], timeout: float, env: Mapping[str, str]) -> Ran:
    """Run `argv` on this machine within `timeout` seconds; OSError when it cannot start."""
    proc = await asyncio.create_subprocess_exec(
        *argv, stdin=asyncio.subprocess.DEVNULL, stdout=asyncio.subprocess.PIPE,
        stderr=asyncio.subprocess.STDOUT, start_new_session=True,
        env={**os.environ, **env})
    try:
        out, _ = await asyncio.wait_for(proc.communicate(), timeout)
    except TimeoutError:
        await _end(proc)
        return Ran(None, "")
    except asyncio.CancelledError:
        await _end(proc)
        raise
    text = out.decode("utf-8", "replace")
    return Ran(proc.returncode, "\n".join(text.splitlines()[-KEPT_LINES:]))


async def _end(proc: asyncio.subprocess.Process) -> None:
    """The command's process group: SIGTERM, then SIGKILL after the grace period."""
    for sig, wait in ((signal.SIGTERM, KILL_GRACE_S), (signal.SIGKILL, KILL_GRACE_S)):
        with contextlib.suppress(ProcessLookupError):
            os.killpg(proc.pid, sig)
        try:
            await asyncio.wait_for(proc.wait(), wait)
            return
        except TimeoutError:
            continue
