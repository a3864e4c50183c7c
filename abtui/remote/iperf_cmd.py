"""Build the remote command lines of a run: iperf3 server and client, ping, armed starts.

Every word that comes from a profile or a host goes through shlex, so no value reaches a shell
unquoted. An *armed* command waits for one line on stdin, prints the host's clock, then execs
the program: the engine starts every pair's processes ahead and releases them together.
"""

from __future__ import annotations

import dataclasses
import math
import re
import shlex
from typing import Any

from abtui.core.errors import BadInput
from abtui.core.model import DEFAULT_IPERF3, Pair, TestOptions

MIN_INTERVAL = 0.1
# A continuous run is a chain of runs this long, restarted as soon as one ends.
CONTINUOUS_CHUNK_S = 3600
JSON_STREAM_SINCE = (3, 17)
CLOCK_CMD = "date +%s.%N"
ARMED_MARK = "__ABTUI_ARMED__"

_VERSION = re.compile(r"iperf (\d+)\.(\d+)")


def parse_iperf_version(text: str) -> tuple[int, int] | None:
    """(major, minor) from `iperf3 --version` output, None when it does not say."""
    m = _VERSION.search(text)
    return (int(m.group(1)), int(m.group(2))) if m else None


@dataclasses.dataclass(frozen=True, slots=True)
class HostTools:
    """What a host has for a run: iperf3's version (None: not there), bash (a fork-free
    clock at release) and stdbuf (every iperf3 line flushed as printed)."""

    iperf_version: tuple[int, int] | None
    bash: bool
    stdbuf: bool
    perf: bool = False  # `perf` is there (a run's profile: abtui.remote.profiling)
    sockperf: bool = False  # `sockperf` is there (a request/response load beside iperf3)


def install_hint(program: str) -> str:
    """How to get the iperf3 a host lacks (said when connecting and when a run cannot start)."""
    if program == DEFAULT_IPERF3:
        return "install the iperf3 package"
    return "install iperf3 there, or correct the profile's [test] iperf3 option"


def tools_command(program: str) -> str:
    """Ask a host, in one round trip, for `program`'s version, bash (5 or later: its clock
    $EPOCHREALTIME, for armed starts and gathered pings) and stdbuf."""
    return (f"{shlex.quote(program)} --version 2>&1 | head -n 1; "
            "bash -c '[ -n \"${EPOCHREALTIME:-}\" ]' 2>/dev/null && echo __abtui_bash; "
            "command -v stdbuf >/dev/null && echo __abtui_stdbuf; "
            "command -v perf >/dev/null && echo __abtui_perf; "
            "command -v sockperf >/dev/null && echo __abtui_sockperf; true")


def parse_tools(stdout: str) -> HostTools:
    """What `tools_command` found."""
    lines = stdout.splitlines()
    return HostTools(parse_iperf_version(lines[0] if lines else ""),
                     "__abtui_bash" in lines, "__abtui_stdbuf" in lines,
                     "__abtui_perf" in lines, "__abtui_sockperf" in lines)


def options_for(base: TestOptions, pair: Pair, extra: dict[str, Any] | None = None) -> TestOptions:
    """The pair's options: the profile's, with the pair's overrides (and live ones) on top."""
    merged = {**pair.overrides, **(extra or {})}
    names = {f.name for f in dataclasses.fields(TestOptions)}
    unknown = sorted(set(merged) - names)
    if unknown:
        raise BadInput(f"pair {pair.label}: unknown test option(s) {', '.join(unknown)} "
                       f"(known: {', '.join(sorted(names))})")
    opts = dataclasses.replace(base, **merged)
    if isinstance(opts.extra_args, list):
        opts.extra_args = tuple(opts.extra_args)
    validate_options(opts, f"pair {pair.label}")
    return opts


def validate_options(opts: TestOptions, where: str) -> None:
    if opts.interval < MIN_INTERVAL:
        raise BadInput(f"{where}: interval {opts.interval:g} s is below {MIN_INTERVAL} s")
    if opts.duration < 0:
        raise BadInput(f"{where}: duration must be ≥ 0 (0 means continuous)")
    if opts.parallel < 1:
        raise BadInput(f"{where}: parallel must be ≥ 1")
    if opts.reverse and opts.bidir:
        raise BadInput(f"{where}: reverse and bidir exclude each other")
    if not 1 <= opts.port <= 65535:
        raise BadInput(f"{where}: port {opts.port} is not a TCP port")


def run_seconds(opts: TestOptions, duration: float | None = None) -> int:
    """iperf3's -t is whole seconds; 0 (continuous) runs in long chunks."""
    d = opts.duration if duration is None else duration
    if d <= 0:
        return CONTINUOUS_CHUNK_S
    return max(1, math.ceil(d))


def client_argv(opts: TestOptions, target: str, port: int, seconds: int,
                json_stream: bool = False, program: str = "iperf3") -> list[str]:
    argv = [program, "-c", target, "-p", str(port), "-t", str(seconds),
            "-i", f"{opts.interval:g}"]
    # -V: the text output's `CPU Utilization:` line (--json-stream's end event has it anyway)
    argv += ["--json-stream"] if json_stream else ["--forceflush", "-V"]
    if opts.parallel > 1:
        argv += ["-P", str(opts.parallel)]
    if opts.reverse:
        argv.append("-R")
    if opts.bidir:
        argv.append("--bidir")
    if opts.udp:
        argv.append("-u")
        argv += ["-b", opts.bitrate or "1M"]
    elif opts.bitrate:
        argv += ["-b", opts.bitrate]
    if opts.omit:
        argv += ["-O", str(opts.omit)]
    if opts.congestion:
        argv += ["-C", opts.congestion]
    if opts.bind:
        argv += ["-B", opts.bind]
    argv += list(opts.extra_args)
    return argv


def server_argv(port: int, program: str = "iperf3") -> list[str]:
    """A one-shot server: it serves one test and exits, so nothing lingers. -V: when it sends
    (-R) its text output has the sender's `CPU Utilization:` (the client's has none then)."""
    return [program, "-s", "-1", "-p", str(port), "--forceflush", "-V"]


# What iperf3's server prints once it listens (`Server listening on 5201 (test #1)`).
SERVER_LISTENING = "Server listening on"


def server_command(argv: list[str], drain: bool) -> str:
    """The server's command line, stderr with stdout. With `drain` (nobody reads what it
    prints once it listens: a TCP run's server) the host passes its lines on until it says
    it listens, then drops the rest itself: its per-interval lines no longer cross the link
    to be read and thrown away (a packet a second a pair). Plain sh (Linux and FreeBSD);
    the filter (a `cat` once it drains) is in the server's process group and ends when the
    server does, so the group still ends with it and nothing is left behind."""
    if not drain:
        return f"{plain(argv)} 2>&1"
    passed = ("while IFS= read -r l || [ -n \"$l\" ]; do printf '%s\\n' \"$l\"; "
              f"case $l in *{shlex.quote(SERVER_LISTENING)}*) exec cat >/dev/null;; esac; "
              "done")
    return f"LC_ALL=C {shlex.join(argv)} 2>&1 | {{ {passed}; }}"


def ping_argv(opts: TestOptions, target: str) -> list[str]:
    argv = ["ping", "-n", "-i", f"{opts.ping_interval:g}", target]
    if opts.bind:
        argv[1:1] = ["-I", opts.bind]
    return argv


# A gathered ping's lines are sent at most this often (a line waits GATHER_S + GATHER_POLL_S
# at most): one SSH packet a second instead of one a reply. The console shows a ping reply
# within a second anyway (abtui.ui.flow.feed.LAZY_S); a ping slower than this is not gathered.
GATHER_S = 1.0
GATHER_POLL_S = 0.25
# ... nor one faster than this: bash reads a pipe a byte at a time, so the gatherer costs
# its host about 0.015 % of a core per reply a second (measured: at most 0.05 % at 0.2 s,
# 0.15 % at 0.1 s, 0.4 % at 0.05 s, 1.7 % at 0.01 s); above 10 replies a second each reply
# is sent as it comes, and the host under test keeps that CPU.
GATHER_MIN_INTERVAL_S = 0.1


def gathers(ping_interval: float, bash: bool) -> bool:
    """Whether a ping at this interval is gathered on its host: it needs bash there (its
    clock is a builtin), more than one reply per GATHER_S and at most ten a second."""
    return bash and GATHER_MIN_INTERVAL_S <= ping_interval < GATHER_S


# A gathered batch is one line, its records apart by this (ASCII's record separator): bash's
# stdout is line-buffered, so a batch of lines would still leave the host a write a line, and
# on a busy host sshd would send each in its own packet again.
GATHER_SEP = "\x1e"


def gathered(argv: list[str]) -> str:
    """`argv`'s output (stderr with stdout) gathered on the host and sent GATHER_S at a time,
    as one line of `AGE LINE` records apart by GATHER_SEP, each line's age in microseconds
    when sent: the controller dates it by the moment the batch came, less its age, with no
    clock shared with the host. A bash script (EPOCHREALTIME); it ignores SIGINT (ping's cue
    for its summary, sent to the whole group), so ping's last lines pass, and sends what it
    holds at the end."""
    now = "${EPOCHREALTIME//[!0-9]/}"
    gather = (
        f"trap '' INT; s=$'\\x{ord(GATHER_SEP):02x}'; n=0; while :; do "
        f"if IFS= read -r -t {GATHER_POLL_S:g} l; then a[n]={now}; b[n++]=$l; e=0; "
        "elif (( $? > 128 )); then e=0; else e=1; fi; "
        f"t={now}; "
        f"if (( n && (e || t - a[0] >= {round(GATHER_S * 1e6)}) )); then o=; "
        "for ((i = 0; i < n; i++)); do o+=\"${o:+$s}$((t - a[i])) ${b[i]}\"; done; "
        "echo \"$o\"; n=0; fi; "
        "(( e )) && break; done")
    return f"LC_ALL=C {shlex.join(argv)} 2>&1 | {{ {gather}; }}"


def ungathered(batch: str) -> list[tuple[float, str]]:
    """A gathered batch's lines, each with its age in seconds; a record without an age (not
    one abtui's gatherer wrote) is taken as it is, aged 0."""
    records = []
    for record in batch.split(GATHER_SEP):
        age, sep, rest = record.partition(" ")
        if sep and age.isdigit():
            records.append((int(age) / 1e6, rest))
        else:
            records.append((0.0, record))
    return records


CPU_END_MARK = "__ABTUI_CPU__"


def cpu_loop_command(command: str) -> str:
    """One long command that runs `command` (a dialect's `cpu_times_command`) for every line
    it reads on stdin, then prints CPU_END_MARK: a sample costs the caller a write and a
    read, not a round trip on the control shell. It ends at end of file on stdin."""
    return f"while read -r _abtui_tick; do {command} 2>&1; echo {CPU_END_MARK}; done"


# sockperf's server listens this far above the run's iperf3 port (moved on when taken)
SOCKPERF_PORT_OFFSET = 6000
# a client's own bound: it is interrupted when the run ends, and ends by itself this much later
SOCKPERF_SPARE_S = 30
SOCKPERF_MAX_S = 36_000_000  # sockperf's own largest -t


def sockperf_server_argv(port: int, tcp: bool) -> list[str]:
    """sockperf's server on every address of the receiver (what the pair's target is)."""
    return ["sockperf", "server", "-p", str(int(port)), *(["--tcp"] if tcp else [])]


def sockperf_client_argv(opts: TestOptions, target: str, port: int, seconds: int,
                         spare: int = SOCKPERF_SPARE_S) -> list[str]:
    """sockperf's client for a run of `seconds` (0: continuous): ping-pong (one message in
    flight) or under-load (a fixed rate whatever the replies, each one answered), round trips
    (`--full-rtt`) and every observation printed when it ends (`--full-log /dev/fd/3`: the
    caller points fd 3 at the stream it reads, abtui.measure.run.rr). `spare`: seconds past
    the run's `seconds` it may go on (it is interrupted when the run ends; 0: it ends then)."""
    mode = opts.sockperf or "ping-pong"
    limit = SOCKPERF_MAX_S if seconds <= 0 else min(SOCKPERF_MAX_S, seconds + spare)
    argv = ["sockperf", mode, "-i", target, "-p", str(int(port)), "-t", str(limit),
            "--mps", str(int(opts.sockperf_mps)), "--full-rtt", "--full-log", "/dev/fd/3"]
    if mode == "under-load":
        argv += ["--reply-every", "1"]
    if opts.sockperf_tcp:
        argv.append("--tcp")
    if opts.bind:
        argv += ["--client_ip", opts.bind]
    return argv


def sockperf_version_command() -> str:
    """sockperf's first line of `--version` (`sockperf, version 3.7-no.git`), nothing when the
    host has none."""
    return "command -v sockperf >/dev/null 2>&1 && sockperf --version 2>&1 | head -n 1; true"


def sockperf_finding(alias: str, out: str) -> tuple[bool, str]:
    """`abtui check`'s line on a host's sockperf (the profile asks for a request/response
    load): present with its version, or missing and what to do."""
    m = re.search(r"version\s+(\S+)", out)
    if out.strip():
        return True, f"{alias}: sockperf present ({m.group(1) if m else out.strip()[:40]})"
    return False, (f"{alias}: sockperf is missing: install it (the sockperf package), or "
                   "leave [test] sockperf out (its pairs would run without the "
                   "request/response load)")


def plain(argv: list[str]) -> str:
    return f"LC_ALL=C exec {shlex.join(argv)}"


def armed(argv: list[str], bash: bool = False) -> str:
    """Say it is armed, wait for a line on stdin, print the host clock, then exec.

    The engine waits for the mark before releasing, so every shell is already blocked in
    `read` when the newline comes and the skew is not the shells' start-up time. With bash
    (5+) the clock is a builtin ($EPOCHREALTIME): no fork between the release and the clock."""
    return armed_command(f"LC_ALL=C exec {shlex.join(argv)}", bash)


def armed_command(command: str, bash: bool = False) -> str:
    """`armed` for a shell command line (`command` is run by bash when `bash`, else sh)."""
    if bash:
        inner = (f"echo {ARMED_MARK} && read -r _abtui_go && "
                 f"echo \"${{EPOCHREALTIME:-$({CLOCK_CMD})}}\" && {command}")
        return f"exec bash --norc --noprofile -c {shlex.quote(inner)}"
    return f"echo {ARMED_MARK} && read _abtui_go && LC_ALL=C {CLOCK_CMD} && {command}"


def parse_clock(line: str) -> float | None:
    try:
        value = float(line.strip().replace(",", "."))
    except ValueError:
        return None
    return value if math.isfinite(value) and value > 0 else None


def sample_command(sysctl: str | None, command: str | None) -> str:
    """The command a watch runs each time it samples."""
    if sysctl:
        return f"sysctl -n {shlex.quote(sysctl)}"
    if command:
        return f"sh -c {shlex.quote(command)}"
    raise BadInput("a watch needs a sysctl or a command")


def interrupt_group(pgid: int) -> str:
    """SIGINT to a process group (ping then prints its summary); quiet if it is gone."""
    return f"kill -INT -{int(pgid)} 2>/dev/null; true"


def sysctl_names_command() -> str:
    """Every sysctl's name, one a line (Linux's `-aN`, FreeBSD's `-N -a`)."""
    return "sysctl -aN 2>/dev/null || sysctl -N -a 2>/dev/null; true"


def sysctl_values_command(names: list[str]) -> str:
    """The values of these sysctls, one a line, in order."""
    return f"sysctl -n {shlex.join(names)}"
