"""What the lab's receivers really had while a session measured, seen out of band (never
through abtui): a watcher process inside each receiver's network namespace reads its
`net.ipv4.tcp_rmem` every POLL_S seconds and notes every iperf3 process of that namespace
with its start time (from /proc, on this machine's clock, the clock the controller stamps its
events with: the lab runs on the same machine). `ran_under` then tells, for every interval a
session counted, whether the run that measured it was released, and its iperf3 server
started, while the receiver held the value the interval's phase names.
"""

from __future__ import annotations

import bisect
import subprocess
import sys
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

POLL_S = 0.02
# /proc/PID/stat's start time counts clock ticks (USER_HZ, 100 a second on Linux): a process
# seen started at T started in [T, T + START_TICK_S)
START_TICK_S = 0.01

# Runs inside a receiver's namespace: `S t value` each poll, `P t pid start argv` once per
# iperf3 process of that namespace (its start on the wall clock, 10 ms ticks).
WATCHER = r"""
import os, sys, time
poll = float(sys.argv[1])
me = os.stat("/proc/self/ns/net").st_ino
tick = os.sysconf("SC_CLK_TCK")
seen = set()
while True:
    t = time.time()
    boot = t - time.clock_gettime(time.CLOCK_BOOTTIME)
    with open("/proc/sys/net/ipv4/tcp_rmem") as f:
        value = " ".join(f.read().split())
    out = [f"S {t:.6f} {value}"]
    for pid in os.listdir("/proc"):
        if not pid.isdigit() or pid in seen:
            continue
        try:
            with open(f"/proc/{pid}/comm") as f:
                if f.read().strip() != "iperf3":
                    continue
            if os.stat(f"/proc/{pid}/ns/net").st_ino != me:
                continue
            with open(f"/proc/{pid}/stat") as f:
                start = boot + int(f.read().rsplit(")", 1)[1].split()[19]) / tick
            with open(f"/proc/{pid}/cmdline", "rb") as f:
                argv = f.read().rstrip(b"\0").replace(b"\0", b" ").decode()
        except OSError:
            continue
        seen.add(pid)
        out.append(f"P {t:.6f} {pid} {start:.3f} {argv}")
    print("\n".join(out), flush=True)
    time.sleep(poll)
"""


@dataclass
class Receiver:
    """What one receiver's watcher saw: its tcp_rmem over time, its iperf3 servers."""

    samples: list[tuple[float, str]] = field(default_factory=list)
    servers: list[tuple[float, int, str]] = field(default_factory=list)  # start, port, argv

    def value_at(self, t: float) -> tuple[str | None, str | None]:
        """The value sampled last at or before `t`, and the one sampled first after it (they
        differ when the value changed between the two polls around `t`)."""
        times = [s[0] for s in self.samples]
        i = bisect.bisect_right(times, t)
        before = self.samples[i - 1][1] if i else None
        after = self.samples[i][1] if i < len(self.samples) else None
        return before, after

    def server_of(self, port: int, released: float) -> tuple[float, int, str] | None:
        """The iperf3 server on `port` started last before the run was released."""
        got = [s for s in self.servers if s[1] == port and s[0] <= released + 0.02]
        return got[-1] if got else None


class Watchers:
    """One watcher per receiver namespace, started by `start`, ended (and read) by `stop`."""

    def __init__(self, netns: Mapping[str, str], tmp: Path) -> None:
        self.netns = dict(netns)  # receiver alias -> its namespace
        self.tmp = tmp
        self._procs: dict[str, tuple[subprocess.Popen[bytes], Path]] = {}
        self.seen: dict[str, Receiver] = {}

    def start(self) -> Watchers:
        for alias, ns in self.netns.items():
            out = self.tmp / f"watch-{alias}.txt"
            with out.open("wb") as f:
                proc = subprocess.Popen(["ip", "netns", "exec", ns, sys.executable, "-c",
                                         WATCHER, str(POLL_S)], stdout=f)
            self._procs[alias] = (proc, out)
        return self

    def stop(self) -> dict[str, Receiver]:
        for alias, (proc, out) in self._procs.items():
            proc.kill()
            proc.wait()
            self.seen[alias] = parse(out.read_text())
        self._procs.clear()
        return self.seen


def parse(text: str) -> Receiver:
    r = Receiver()
    for line in text.splitlines():
        kind, _, rest = line.partition(" ")
        if kind == "S":
            t, _, value = rest.partition(" ")
            r.samples.append((float(t), value))
        elif kind == "P":
            _t, _pid, start, argv = rest.split(" ", 3)
            words = argv.split()
            if "-s" in words and "-p" in words:
                r.servers.append((float(start), int(words[words.index("-p") + 1]), argv))
    r.servers.sort()
    return r


@dataclass
class Verdict:
    """Per counted interval's run: where the receiver's value matched the phase's label."""

    runs: int = 0  # runs with counted intervals
    intervals: int = 0
    wrong: list[str] = field(default_factory=list)  # a run measured under another value
    unclear: int = 0  # a change fell between the polls around a release or server start
    values: dict[str, list[float]] = field(default_factory=dict)  # value -> counted rates


def ran_under(events: Iterable[Mapping[str, Any]], knob: str,
              receivers: Mapping[str, Receiver], receiver_of: Mapping[str, str]) -> Verdict:
    """Every interval counted in a phase (not straddling a change, not omitted): its phase's
    value of `knob` against what the pair's receiver held when the run that measured it was
    released and when that run's iperf3 server started. `events` are journal records
    (`kind`, `t`, `pair`, `data`); `receiver_of` maps a pair to its receiver's alias."""
    phase_value: dict[tuple[str, int], str] = {}
    starts: dict[str, tuple[str, float, int]] = {}  # run -> pair, released, port
    counted: dict[str, list[tuple[int, float]]] = {}  # run -> (phase, rate)
    for e in events:
        d = e["data"]
        if e["kind"] == "phase" and knob in (d.get("config") or {}):
            phase_value[(e["pair"], d["phase"])] = d["config"][knob]
        elif e["kind"] == "run_start":
            starts[d["run"]] = (e["pair"], e["t"], d["port"])
        elif e["kind"] == "interval" and not d.get("straddles") and not d.get("omitted"):
            counted.setdefault(d["run"], []).append((d["phase"], d["bits_per_second"]))
    out = Verdict()
    for run, got in counted.items():
        pair, released, port = starts[run]
        rcv = receivers[receiver_of[pair]]
        server = rcv.server_of(port, released)
        for phase, rate in got:
            value = phase_value.get((pair, phase))
            if value is None:
                continue  # a phase not closed (a session cut short): nothing claimed
            out.intervals += 1
            out.values.setdefault(value, []).append(rate)
        labels = {phase_value.get((pair, ph)) for ph, _ in got} - {None}
        if not labels:
            continue
        out.runs += 1
        if len(labels) > 1:
            out.wrong.append(f"{run}: counted in phases of {sorted(labels)}")
            continue
        (value,) = labels
        moments = [("released", released, 0.0)]
        if server is None:
            out.wrong.append(f"{run}: no iperf3 server on port {port} seen on {pair}'s receiver")
        else:  # /proc's start time is whole clock ticks: the start is up to one tick later
            moments.append(("its server started", server[0], START_TICK_S))
        for what, t, late in moments:
            before, after = rcv.value_at(t)
            if before == value:
                continue
            if after == value or (late and value in rcv.value_at(t + late)):
                out.unclear += 1  # the value came between the polls around that moment
                continue
            out.wrong.append(f"{run} ({pair}) counted under {value!r}, but {what} at {t:.3f} "
                             f"while the receiver had {before!r}")
    return out
