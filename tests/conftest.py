"""Shared fixtures. Lab tests (marked `lab`) need root; each run uses its own lab names so a
user's lab (or another checkout's test run) never collides with it.

ABTUI_TEST_LAB="name,ifprefix,mgmt" picks the test lab's names (default "tlab,abt,254").
"""

from __future__ import annotations

import contextlib
import os
import signal
import subprocess
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from abtui.lab.netns import Lab

FIXTURES = Path(__file__).resolve().parent / "fixtures"
SHARED_FIXTURES = Path(__file__).resolve().parents[2] / "shared" / "fixtures"


def pytest_configure(config: pytest.Config) -> None:
    """No test reads or writes the user's own abtui state and data (undo journals, saved
    sessions): a run gets folders of its own, inherited by every abtui it starts."""
    import tempfile

    home = Path(tempfile.mkdtemp(prefix="abtui-test-home-"))
    config.stash[_HOME] = home
    for var, sub in (("XDG_STATE_HOME", "state"), ("XDG_DATA_HOME", "data")):
        os.environ[var] = str(home / sub)


def pytest_unconfigure(config: pytest.Config) -> None:
    import shutil

    home = config.stash.get(_HOME, None)
    if home is not None:
        shutil.rmtree(home, ignore_errors=True)


_HOME = pytest.StashKey[Path]()


def test_lab_names(suffix: str = "") -> tuple[str, str, int]:
    raw = os.environ.get("ABTUI_TEST_LAB", "tlab,abt,254")
    name, ifprefix, mgmt = raw.split(",")
    return name + suffix, ifprefix + suffix, int(mgmt) - (1 if suffix else 0)


def make_test_lab(tmp: Path, suffix: str = "") -> Lab:
    name, ifprefix, mgmt = test_lab_names(suffix)
    return Lab(name=name, octet=19, ifprefix=ifprefix, mgmt=mgmt, state_dir=tmp / name)


def _root_reason() -> str | None:
    if os.geteuid() != 0:
        return "lab tests need root (network namespaces, sshd)"
    return None


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    reason = _root_reason()
    if reason is None:
        return
    skip = pytest.mark.skip(reason=reason)
    for item in items:
        if "lab" in item.keywords:
            item.add_marker(skip)


@pytest.fixture(scope="session")
def lab(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Lab]:
    """A 2-pair lab shared by the lab tests of one run; taken down even when tests fail."""
    the_lab = make_test_lab(tmp_path_factory.mktemp("lab"))
    the_lab.down()  # leftovers of an earlier, killed run
    the_lab.up(pairs=2)
    try:
        yield the_lab
    finally:
        the_lab.down()


def sshd_sessions(lab: Lab, alias: str) -> list[int]:
    """The PIDs of the sshd processes serving sessions on a lab host (not the daemon)."""
    daemon = lab.sshd_pid(alias)
    return [pid for pid, comm, _cmdline, _state in netns_processes(f"abtui-{alias}")
            if comm == "sshd" and pid != daemon]


def kill_sshd(lab: Lab, alias: str) -> None:
    """SIGKILL a host's sshd daemon and its session processes, by PID."""
    daemon = lab.sshd_pid(alias)
    assert daemon is not None, f"{alias}: sshd is not running"
    victims = [daemon, *sshd_sessions(lab, alias)]
    for pid in victims:
        with contextlib.suppress(ProcessLookupError):  # a session may end meanwhile
            os.kill(pid, signal.SIGKILL)
    # SIGKILL is delivered asynchronously: return only once the daemon is really gone
    deadline = time.monotonic() + 5.0
    while lab.sshd_pid(alias) is not None and time.monotonic() < deadline:
        time.sleep(0.02)
    assert lab.sshd_pid(alias) is None, f"{alias}: sshd PID {daemon} survived SIGKILL"


def netns_processes(netns: str) -> Iterator[tuple[int, str, str, str]]:
    """(pid, comm, command line, state) of the processes in a network namespace. PID
    namespaces are shared with the rest of the machine: only the namespace's own PIDs are
    looked at, never a process by its name alone."""
    pids = subprocess.run(["ip", "netns", "pids", netns], capture_output=True,
                          text=True).stdout.split()
    for pid in pids:
        proc = Path("/proc") / pid
        try:
            comm = (proc / "comm").read_text().strip()
            argv = (proc / "cmdline").read_bytes().rstrip(b"\0").split(b"\0")
            state = (proc / "stat").read_text().rsplit(")", 1)[1].split()[0]
        except OSError:  # ended meanwhile
            continue
        yield int(pid), comm, b" ".join(argv).decode(errors="replace"), state


def ns_exec(lab_: Lab, alias: str, *cmd: str) -> str:
    """Run a command inside a lab host's namespace directly (the tests' side channel)."""
    return subprocess.run(["ip", "netns", "exec", f"abtui-{alias}", *cmd],
                          capture_output=True, text=True, check=True).stdout


# the reliability table (tests/reliability.py): its fixture and the hooks that note each
# scenario's outcome and write the table
from tests.reliability import (  # noqa: E402, F401
    pytest_collection_finish,
    pytest_runtest_makereport,
    pytest_sessionfinish,
    reliability,
)
