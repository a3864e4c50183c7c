"""A terminal of our own for end-to-end tests: a private tmux server running one command,
read by capture-pane and driven by send-keys."""

from __future__ import annotations

import re
import shutil
import subprocess
import time
from collections.abc import Callable

TMUX = shutil.which("tmux")


class Term:
    """A tmux server of our own (private socket) with one window running a command."""

    def __init__(self, socket: str) -> None:
        self.socket = socket

    def tmux(self, *args: str) -> str:
        return subprocess.run([TMUX, "-L", self.socket, *args], capture_output=True, text=True,
                              check=True).stdout  # type: ignore[list-item]

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
