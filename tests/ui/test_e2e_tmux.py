"""End to end in a real terminal: the console under tmux, driven by keys, read by capture-pane:
on a synthetic replay (fast, no root), and `abtui demo` on a real lab (root): a knob flipped by
a key press on the hosts, the phase table changing, ctrl+q restoring every knob."""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
import time
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

TMUX = shutil.which("tmux")
pytestmark = [pytest.mark.ui,
              pytest.mark.skipif(TMUX is None, reason="tmux is not installed (apt tmux)")]
ROOT = Path(__file__).resolve().parents[2]


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


@pytest.fixture
def term() -> Iterator[Term]:
    t = Term(f"abtui-e2e-{os.getpid()}")
    try:
        yield t
    finally:
        subprocess.run([TMUX, "-L", t.socket, "kill-server"], capture_output=True)  # type: ignore[list-item]


def intervals_shown(screen: str) -> int:
    counts = [int(n) for n in re.findall(r"\bn (\d+)\s", screen)]
    return min(counts) if counts else 0


def test_console_in_a_real_terminal(term: Term, tmp_path: Path) -> None:
    rc = tmp_path / "rc"
    cmd = (f"cd {ROOT} && {sys.executable} -m abtui tui --replay --speed 10 --pairs 2; "
           f"echo $? > {rc}; sleep 60")
    term.tmux("new-session", "-d", "-s", "e2e", "-x", "100", "-y", "30", cmd)
    term.wait("three intervals in both panes", lambda s: intervals_shown(s) >= 3)
    screen = term.screen()
    assert "REPLAY (synthetic)" in screen
    assert "a-snd → a-rcv" in screen and "b-snd → b-rcv" in screen
    screen = term.wait("the initial phase row filled", lambda s: re.search(
        r"^ initial\s+\d+\.\d\d n\d+", s, re.M) is not None)
    assert not re.search(r"^ tcp_wmem=", screen, re.M)
    term.keys("w")
    term.wait("a phase row for the new tcp_wmem",
              lambda s: re.search(r"^ tcp_wmem=4096 16384 65536\s+\d+\.\d\d n\d+", s, re.M)
              is not None)
    term.keys("C-q")
    deadline = time.monotonic() + 20
    while not rc.exists() and time.monotonic() < deadline:
        time.sleep(0.2)
    assert rc.exists(), term.screen()
    assert rc.read_text().strip() == "0"


def _ns(alias: str, *cmd: str) -> str:
    return subprocess.run(["ip", "netns", "exec", f"abtui-{alias}", *cmd], capture_output=True,
                          text=True, check=True).stdout.strip()


@pytest.mark.lab
def test_demo_on_the_lab_flips_a_knob_and_restores_it(term: Term, tmp_path: Path) -> None:
    from abtui.lab.netns import Lab
    from tests.conftest import test_lab_names

    name, ifprefix, mgmt = test_lab_names("d")
    lab = Lab(name=name, octet=19, ifprefix=ifprefix, mgmt=mgmt, state_dir=tmp_path / name)
    lab.down()  # leftovers of a killed run
    rc = tmp_path / "rc"
    env = (f"ABTUI_LAB={name},{ifprefix},{mgmt} ABTUI_LAB_DIR={tmp_path} "
           f"ABTUI_SESSIONS_DIR={tmp_path / 'sessions'}")
    cmd = (f"cd {ROOT} && {env} {sys.executable} -m abtui demo --keep-lab; echo $? > {rc}; "
           "sleep 120")
    receivers = [f"{name}-a-rcv", f"{name}-b-rcv"]
    try:
        term.tmux("new-session", "-d", "-s", "e2e", "-x", "120", "-y", "36", cmd)
        term.wait("intervals from both lab pairs", lambda s: intervals_shown(s) >= 3, 90)
        from abtui.profile import load_profile

        small = load_profile(lab.profile_path).knob("tcp_rmem").values[1]  # the flipped value
        original = {h: _ns(h, "sysctl", "-n", "net.ipv4.tcp_rmem") for h in receivers}
        links_before = {h: _ns(h, "ip", "-o", "link", "show") for h in receivers}
        assert all(v.split() != small.split() for v in original.values())  # not yet flipped
        # r (the lab profile's key for tcp_rmem) walks the cycle from what the hosts have:
        # the profile's values, then back to the hosts' own; press until the small one is set
        from abtui.core.configuration import cycle

        values = load_profile(lab.profile_path).knob("tcp_rmem").values
        own = " ".join(next(iter(original.values())).split())
        own = next((v for v in values if v.split() == own.split()), own)
        value = own
        while value != small:
            value = cycle(values, value, own)
            term.keys("r")
            term.wait(f"tcp_rmem={value} in the knob bar",  # the chip: key, name=value
                      lambda s, v=value: f"r tcp_rmem={v}" in s, 30)
        row = re.compile(rf"^ tcp_rmem={re.escape(small)}\s+\d+\.\d\d n\d+", re.M)
        term.wait("a phase row for the flipped tcp_rmem", lambda s: row.search(s) is not None, 30)
        flipped = {h: _ns(h, "sysctl", "-n", "net.ipv4.tcp_rmem") for h in receivers}
        assert all(v.split() == small.split() for v in flipped.values()), flipped
        term.keys("C-q")
        deadline = time.monotonic() + 60
        while not rc.exists() and time.monotonic() < deadline:
            time.sleep(0.2)
        assert rc.exists(), term.screen()
        assert rc.read_text().strip() == "0"
        assert {h: _ns(h, "sysctl", "-n", "net.ipv4.tcp_rmem") for h in receivers} == original
        assert {h: _ns(h, "ip", "-o", "link", "show") for h in receivers} == links_before
        assert list((tmp_path / "sessions").glob("*.abtui.jsonl.gz"))  # the session, finished
    finally:
        subprocess.run([TMUX, "-L", term.socket, "kill-server"], capture_output=True)  # type: ignore[list-item]
        lab.down()
