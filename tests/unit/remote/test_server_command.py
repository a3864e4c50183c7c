"""The iperf3 server's command line: with `drain`, the host passes its lines on until it says
it listens and drops the rest itself. Run by this machine's sh (plain POSIX sh: Linux and
FreeBSD), with a scripted program in iperf3's place."""

from __future__ import annotations

import subprocess

from abtui.remote.iperf_cmd import plain, server_argv, server_command

LISTENING = ["iperf 3.12", "  Linux h 6.18  ", "-" * 20, "Server listening on 5201 (test #1)"]
AFTER = ["Accepted connection from 198.18.0.1, port 40000",
         "[  5]   0.00-1.00   sec   483 MBytes  4.05 Gbits/sec"]


def _run(printed: str, drain: bool, err: str = "") -> subprocess.CompletedProcess[str]:
    """`server_command` with `printf` as the server: `printed` on stdout, then `err` on
    stderr."""
    command = server_command(["sh", "-c", "printf '%s' \"$1\"; printf '%s' \"$2\" >&2",
                              "sh", printed, err], drain)
    return subprocess.run(["sh", "-c", command], capture_output=True, text=True, timeout=10)


def test_the_lines_pass_until_it_listens_then_the_host_drops_them() -> None:
    done = _run("\n".join(LISTENING + AFTER) + "\n", drain=True, err="after, to stderr\n")
    assert done.returncode == 0 and done.stderr == ""
    assert done.stdout.splitlines() == LISTENING  # leading and trailing blanks kept


def test_a_server_that_never_listens_is_passed_on_whole_its_last_line_too() -> None:
    said = "iperf3: error - unable to start listener for connections: Address already in use"
    done = _run("iperf 3.12\n", drain=True, err=said)  # on stderr, no newline at its end
    assert done.stdout.splitlines() == ["iperf 3.12", said]


def test_without_drain_it_is_the_server_as_before() -> None:
    argv = server_argv(5201)
    assert server_command(argv, drain=False) == plain(argv) + " 2>&1"
    done = _run("\n".join(LISTENING + AFTER) + "\n", drain=False, err="bye\n")
    assert done.stdout.splitlines() == [*LISTENING, *AFTER, "bye"]
