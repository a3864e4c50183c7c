"""The live console's reference: what a person does by hand instead, on the same lab in the
same run. Two pairs, each with `ssh SENDER iperf3 -c RECEIVER -i 1` and `ssh SENDER ping
RECEIVER` in tmux panes (160x48, a tmux server of its own), the receivers' iperf3 servers
started beforehand as daemons.

Measured over the same window as the console's: the CPU (utime + stime) of everything the
person's terminal costs this machine, the ssh clients and the tmux server; and each interval
line's latency from the ssh client's output (a stamp taken by a read loop at the client, the
point abtui's own latency counts from: the line's arrival on the SSH channel) to the tmux
server's handing it to a client (a control-mode client reads it: what a terminal would draw).
The stamping read loops are the measurement's, not the person's: their CPU is not counted.
"""

from __future__ import annotations

import contextlib
import itertools
import os
import re
import shlex
import shutil
import signal
import subprocess
import tempfile
import threading
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from abtui.lab.netns import Lab
from tests.bench.cputime import cpu_used, read_cpu

PORT = 5399  # the hand servers' port, apart from abtui's
PING_INTERVAL = 0.2  # the profile's default ping interval (abtui.core.model.TestOptions)
# the stamp: the client's output line prefixed with the wall clock (bash's $EPOCHREALTIME)
STAMP = "while IFS= read -r l; do printf '%s %s\\n' \"$EPOCHREALTIME\" \"$l\"; done"
_INTERVAL = re.compile(r"(\d{9,}\.\d{6}) \[\s*\d+\]\s+\d+\.\d+-\s*\d+\.\d+\s+sec")


def _children(pid: int) -> list[int]:
    out: list[int] = []
    with contextlib.suppress(OSError):
        for task in Path(f"/proc/{pid}/task").iterdir():
            for child in (task / "children").read_text().split():
                out.append(int(child))
                out += _children(int(child))
    return out


def _comm(pid: int) -> str:
    try:
        return Path(f"/proc/{pid}/comm").read_text().strip()
    except OSError:
        return ""


class _Watcher(threading.Thread):
    """A tmux control-mode client: each interval line's latency, stamped to received."""

    def __init__(self, tmux: list[str]) -> None:
        super().__init__(daemon=True)
        self.proc = subprocess.Popen([*tmux, "-C", "attach", "-t", "h"], stdin=subprocess.PIPE,
                                     stdout=subprocess.PIPE, stderr=subprocess.DEVNULL,
                                     text=True, errors="replace")
        self.latencies: list[tuple[float, float]] = []  # (received at, seconds since stamp)

    def run(self) -> None:
        assert self.proc.stdout is not None
        for line in self.proc.stdout:
            now = time.time()
            if line.startswith("%output"):
                for stamp in _INTERVAL.findall(line):
                    self.latencies.append((now, now - float(stamp)))

    def stop(self) -> None:
        with contextlib.suppress(OSError, ValueError):
            assert self.proc.stdin is not None
            self.proc.stdin.close()
        self.proc.terminate()
        self.proc.wait(timeout=10)


def run_by_hand(lab: Lab, window: float, warmup: float) -> dict[str, Any]:
    """The person's panes on `lab`'s two pairs, measured over `window` after `warmup`."""
    hosts = lab.hosts(2)
    pairs = [(hosts[i], hosts[i + 1]) for i in (0, 2)]
    ssh = ["ssh", "-F", str(lab.ssh_config)]
    tmp = Path(tempfile.mkdtemp(prefix="abtui-bench-hand-"))
    try:
        for _, receiver in pairs:  # each server's PID kept, to end it (and only it) after
            subprocess.run([*ssh, receiver.alias, f"iperf3 -s -D -p {PORT} -I "
                            f"{tmp}/{receiver.alias}.pid"], check=True, capture_output=True,
                           timeout=30)
        commands = []
        for sender, receiver in pairs:
            # --forceflush: iperf3 prints to a pipe here, as under abtui (which passes it too)
            for cmd in (f"iperf3 -c {receiver.data_address} -p {PORT} -t 3600 -i 1 "
                        "--forceflush", f"ping -n -i {PING_INTERVAL:g} {receiver.data_address}"):
                line = f"{shlex.join([*ssh, sender.alias, cmd])} | {STAMP}"
                commands.append(f"exec bash -c {shlex.quote(line)}")
        return run_panes(tmp, commands, "ssh", window, warmup)
    finally:
        for _, receiver in pairs:
            with contextlib.suppress(OSError, ValueError):
                os.kill(int((tmp / f"{receiver.alias}.pid").read_text()), signal.SIGTERM)
        shutil.rmtree(tmp, ignore_errors=True)


# one pane of the replay's peer: iperf3's interval lines every INTERVAL s, stamped, printed
# by bash's builtins alone (read -t as the sleep: no fork a line)
REPLAY_PANE = (
    "exec 3<> <(:); k=0; while :; do read -r -t {interval} -u 3; "
    "printf '%s [  5] %6.2f-%-6.2f sec  1.09 GBytes  9.35 Gbits/sec    0   1.02 MBytes\\n' "
    "\"$EPOCHREALTIME\" \"$k\" \"$((k + 1))\"; k=$((k + 1)); done")


def run_replay_by_hand(pairs: int, interval: float, window: float, warmup: float
                       ) -> dict[str, Any]:
    """The peer of the console's replay: `pairs` tmux panes, each printing an iperf3 interval
    line every `interval` s (what `ssh HOST iperf3 -i INTERVAL` shows, without the network,
    as the replay has none); their CPU (the printing shells and the tmux server) and each
    line's latency from its printing to tmux handing it to a client."""
    tmp = Path(tempfile.mkdtemp(prefix="abtui-bench-peer-"))
    try:
        pane = REPLAY_PANE.format(interval=f"{interval:g}")
        return run_panes(tmp, [f"exec bash -c {shlex.quote(pane)}"] * pairs, "bash", window,
                         warmup)
    finally:
        shutil.rmtree(tmp, ignore_errors=True)


# how long a start may take to show its first interval (a loaded machine's SSH key exchange)
FIRST_SHOWN_S = 90.0


def first_shown(shown: Callable[[], bool], timeout: float) -> None:
    """Wait until `shown()` (the first interval is on screen); RuntimeError after `timeout`."""
    deadline = time.monotonic() + timeout
    while not shown():
        if time.monotonic() > deadline:
            raise RuntimeError(f"no interval shown within {timeout:g} s")
        time.sleep(0.02)


def run_panes(tmp: Path, commands: list[str], counted: str, window: float, warmup: float
              ) -> dict[str, Any]:
    """`commands` in tiled panes of a tmux server of their own (160x48) in `tmp`: the CPU of
    the tmux server and of the processes named `counted` under it, and the interval lines'
    latencies, over `window` after `warmup`."""
    tmux = ["tmux", "-S", str(tmp / "tmux")]
    watcher: _Watcher | None = None
    try:
        subprocess.run([*tmux, "new-session", "-d", "-s", "h", "-x", "160", "-y", "48",
                        commands[0]], check=True)
        for cmd in commands[1:]:
            subprocess.run([*tmux, "split-window", "-t", "h", cmd], check=True)
            subprocess.run([*tmux, "select-layout", "-t", "h", "tiled"], check=True)
        server = int(subprocess.run([*tmux, "display", "-p", "#{pid}"], capture_output=True,
                                    text=True, check=True).stdout)
        watcher = _Watcher(tmux)
        watcher.start()
        # the warm-up counted from the first interval shown, as the console's is: on a
        # loaded machine the clients' start (SSH's key exchange) spilled into a window
        # that began a fixed time after the spawn
        first_shown(lambda: bool(watcher and watcher.latencies), FIRST_SHOWN_S)
        time.sleep(warmup)
        pids = [p for p in _children(server) if _comm(p) == counted]
        if len(pids) < len(commands):
            raise RuntimeError(f"{len(pids)} {counted} processes in the panes, want "
                               f"{len(commands)}")
        mine = [server, *pids]
        c0, w0, since = read_cpu(mine), time.monotonic(), time.time()
        t0 = read_cpu([server])
        time.sleep(window)
        c1, w1, until = read_cpu(mine), time.monotonic(), time.time()
        terminal = cpu_used(t0, read_cpu([server]))
    finally:
        if watcher is not None:
            watcher.stop()
        subprocess.run([*tmux, "kill-server"], capture_output=True)
    lat = [d * 1000 for at, d in watcher.latencies if since <= at <= until]
    if not lat:
        raise RuntimeError("the panes showed no interval in the window")
    return {"cpu_pct": 100 * cpu_used(c0, c1) / (w1 - w0), "latencies": lat,
            "terminal_cpu_pct": 100 * terminal / (w1 - w0)}


_FIRST_PORTS = itertools.cycle(range(PORT + 1, PORT + 40))


def first_number_by_hand(lab: Lab, timeout: float = 60) -> float:
    """`make demo`'s reference: a person's first live number by hand on the lab's first pair,
    in a fresh tmux (160x48): `ssh RECEIVER iperf3 -s -1 -D`, then `ssh SENDER iperf3 -c
    RECEIVER -i 1`; seconds from the spawn to tmux handing the first interval line to a
    client."""
    sender, receiver = lab.hosts(1)
    ssh = shlex.join(["ssh", "-F", str(lab.ssh_config)])
    port = next(_FIRST_PORTS)  # each its own: the last one's test may still be ending
    tmp = Path(tempfile.mkdtemp(prefix="abtui-bench-first-"))
    tmux = ["tmux", "-S", str(tmp / "tmux")]
    line = (f"{ssh} {receiver.alias} iperf3 -s -1 -D -p {port}; "
            f"{ssh} {sender.alias} iperf3 -c {receiver.data_address} -p {port} -t 3 -i 1 "
            f"--forceflush | {STAMP}")
    watcher: _Watcher | None = None
    try:
        subprocess.run([*tmux, "new-session", "-d", "-s", "h", "-x", "160", "-y", "48",
                        "sleep 600"], check=True)
        watcher = _Watcher(tmux)
        watcher.start()
        t0 = time.time()
        subprocess.run([*tmux, "respawn-pane", "-k", "-t", "h", f"exec bash -c "
                        f"{shlex.quote(line)}; sleep 600"], check=True)
        deadline = time.monotonic() + timeout
        while not watcher.latencies:
            if time.monotonic() > deadline:
                screen = subprocess.run([*tmux, "capture-pane", "-p", "-t", "h"],
                                        capture_output=True, text=True).stdout
                shown = " | ".join(x.strip() for x in screen.splitlines() if x.strip())
                raise RuntimeError(f"no interval by hand within {timeout:g} s; the terminal "
                                   f"showed: {shown[-400:]!r}")
            time.sleep(0.01)
        return watcher.latencies[0][0] - t0
    finally:
        if watcher is not None:
            watcher.stop()
        subprocess.run([*tmux, "kill-server"], capture_output=True)
        shutil.rmtree(tmp, ignore_errors=True)
