"""A terminal of our own for end-to-end tests: a private tmux server running one command,
read by capture-pane and driven by send-keys."""

from __future__ import annotations

import contextlib
import os
import re
import shutil
import signal
import subprocess
import time
from collections.abc import Callable
from pathlib import Path

TMUX = shutil.which("tmux")


class Term:
    """A tmux server of our own (private socket) with one window running a command."""

    def __init__(self, socket: str) -> None:
        self.socket = socket

    def tmux(self, *args: str) -> str:
        return subprocess.run([TMUX, "-L", self.socket, *args], capture_output=True, text=True,
                              check=True).stdout  # type: ignore[list-item]

    def close(self) -> None:
        """The server ended (what its window runs gets SIGHUP, as when a terminal closes),
        and its socket file removed: a killed server leaves it in tmux's folder."""
        subprocess.run([TMUX, "-L", self.socket, "kill-server"], capture_output=True)  # type: ignore[list-item]
        folder = Path(os.environ.get("TMUX_TMPDIR") or "/tmp") / f"tmux-{os.getuid()}"
        with contextlib.suppress(OSError):
            (folder / self.socket).unlink()

    def screen(self) -> str:
        return self.tmux("capture-pane", "-p", "-t", "e2e")

    def keys(self, *keys: str) -> None:
        self.tmux("send-keys", "-t", "e2e", *keys)

    def wait(self, what: str, cond: Callable[[str], bool], timeout: float = 20.0) -> str:
        deadline = time.monotonic() + timeout
        text = ""
        while time.monotonic() < deadline:
            text = self.screen()
            if cond(text):
                return text
            time.sleep(0.2)
        raise AssertionError(f"timed out waiting for {what}; screen:\n{text}")


def intervals_shown(screen: str) -> int:
    counts = [int(n) for n in re.findall(r"\bn (\d+)\s", screen)]
    return min(counts) if counts else 0


STARTED: dict[int, bytes] = {}  # consoles the tests started: PID -> its command line


def console_pid(term: Term, window: str = "e2e", timeout: float = 10.0) -> int:
    """The PID of what the window's shell runs (abtui): its one child."""
    shell = int(term.tmux("display", "-p", "-t", window, "#{pane_pid}").strip())
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        children = Path(f"/proc/{shell}/task/{shell}/children").read_text().split()
        if children:
            pid = int(children[0])
            with contextlib.suppress(OSError):
                STARTED[pid] = Path(f"/proc/{pid}/cmdline").read_bytes()
            return pid
        time.sleep(0.05)
    raise AssertionError("abtui did not start")


def end_console(pid: int, wait_s: float = 10.0) -> None:
    """End a console this test started, by its PID: SIGTERM (it restores the hosts, within
    abtui.ui.guard's bound), then SIGKILL if it is still there. A test that fails or times
    out must not leave a console measuring behind it."""
    def ours() -> bool:  # still that process (not a PID used again), and not a zombie
        try:
            return Path(f"/proc/{pid}/cmdline").read_bytes() == STARTED.get(pid) != b""
        except OSError:
            return False
    if not pid or not ours():
        return
    with contextlib.suppress(ProcessLookupError):
        os.kill(pid, signal.SIGTERM)
    deadline = time.monotonic() + wait_s
    while ours() and time.monotonic() < deadline:
        time.sleep(0.1)
    if ours():
        with contextlib.suppress(ProcessLookupError):
            os.kill(pid, signal.SIGKILL)
