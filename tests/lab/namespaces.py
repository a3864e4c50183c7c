"""The test lab's names and a side channel into its namespaces: what lab tests (and the
end-to-end ones) use to look at hosts without going through abtui.

ABTUI_TEST_LAB="name,ifprefix,mgmt" picks the test lab's names (default "tlab,abt,254"). A
test run takes that management subnet and the one below it, for the labs a test brings up
beside the test lab (named with a suffix: the end-to-end tests' demo lab, the CLI's up/down
cycle, ...; one at a time): give runs that share a machine management numbers 2 apart.
"""

from __future__ import annotations

import contextlib
import os
import signal
import subprocess
import time
from collections.abc import Iterator
from pathlib import Path

from abtui.lab.netns import Lab


def lab_names(suffix: str = "") -> tuple[str, str, int]:
    """(name, ifprefix, mgmt) of the test lab, or of a lab named by `suffix` beside it."""
    raw = os.environ.get("ABTUI_TEST_LAB", "tlab,abt,254")
    name, ifprefix, mgmt = raw.split(",")
    return name + suffix, ifprefix + suffix, int(mgmt) - (1 if suffix else 0)


def make_test_lab(tmp: Path, suffix: str = "") -> Lab:
    name, ifprefix, mgmt = lab_names(suffix)
    return Lab(name=name, octet=19, ifprefix=ifprefix, mgmt=mgmt, state_dir=tmp / name)


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


# The settings tests change on the shared lab's hosts (knobs' sysctls): put back after each
# test, so one that fails half-way cannot hand its changed hosts to the next ones.
KEPT_SETTINGS = ("net.ipv4.tcp_rmem", "net.ipv4.tcp_wmem", "net.ipv4.tcp_congestion_control",
                 "net.ipv4.tcp_sack")


def host_settings(lab_: Lab) -> dict[str, list[str]]:
    """{alias: [value of each of KEPT_SETTINGS]} read in the hosts' namespaces."""
    out = {}
    for h in lab_.hosts(2):
        read = subprocess.run(["ip", "netns", "exec", h.netns, "sysctl", "-n", *KEPT_SETTINGS],
                              capture_output=True, text=True)
        out[h.alias] = [" ".join(v.split()) for v in read.stdout.splitlines()]
    return out


def tidy_after_test(lab_: Lab, settings: dict[str, list[str]]) -> list[str]:
    """What a test left on the shared lab, ended or set back (by PID, in the lab's own
    namespaces): sshd sessions (an engine never stopped keeps its links, and with them its
    hosts' leases), iperf3 and ping, and KEPT_SETTINGS changed from `settings`. Returns what
    was tidied, one phrase each."""
    tidied = []
    for h in lab_.hosts(2):
        daemon = lab_.sshd_pid(h.alias)
        for pid, comm, _cmdline, _state in netns_processes(h.netns):
            if comm in ("iperf3", "ping") or (comm == "sshd" and pid != daemon):
                with contextlib.suppress(ProcessLookupError):
                    os.kill(pid, signal.SIGKILL)
                tidied.append(f"{h.alias}: {comm} {pid} ended")
    now = host_settings(lab_)
    for alias, values in settings.items():
        for key, was, found in zip(KEPT_SETTINGS, values, now.get(alias, []), strict=False):
            if found != was:
                subprocess.run(["ip", "netns", "exec", f"abtui-{alias}", "sysctl", "-qw",
                                f"{key}={was}"], check=True)
                tidied.append(f"{alias}: {key} set back from '{found}' to '{was}'")
    return tidied
