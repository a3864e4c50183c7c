"""The lab hosts as the tests see them, independently of abtui: each knob's value read over SSH
(asyncssh with the lab's own ssh_config and known_hosts, never abtui's links), what a session
may leave behind (processes, tunnel interfaces), and a last-resort restore for the tests'
`finally` blocks so one failing test never leaves the shared lab changed for the next.

A knob's value on a host is what `sysctl -n`, `ethtool -k`, /sys/class/net/DEV/mtu or the
host's tunnel interfaces (abtui names them `ab` + type letter + pair number + ...) say;
whitespace is normalised (`sysctl -n net.ipv4.tcp_rmem` prints tabs, profiles use spaces).
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import re
import shlex
import signal
import subprocess
import time
from collections.abc import Iterable
from dataclasses import dataclass, field

import asyncssh

from abtui.core.model import Knob, KnobKind, Pair, Profile, Role
from abtui.lab.netns import Lab
from tests.lab.namespaces import netns_processes

# `ethtool -k` prints features by their long names
ETHTOOL_NAMES = {
    "tso": "tcp-segmentation-offload", "gso": "generic-segmentation-offload",
    "gro": "generic-receive-offload", "lro": "large-receive-offload",
    "rx": "rx-checksumming", "tx": "tx-checksumming", "sg": "scatter-gather",
    "rxvlan": "rx-vlan-offload", "txvlan": "tx-vlan-offload", "rxhash": "receive-hashing",
    "ntuple": "ntuple-filters",
}
# abtui's tunnel interfaces: "ab" + a letter for the type + the pair's number + ...
TUNNEL_IF = re.compile(r"^ab([wvgx])\d")
TUNNEL_TYPES = {"w": "wireguard", "v": "vxlan", "g": "gre", "x": "ipsec"}
MARK = "@@abtui-test@@"


def norm(value: str) -> str:
    return " ".join(str(value).split())


@dataclass(frozen=True, slots=True)
class Setting:
    """One knob on one host: what to read there."""

    knob: str
    kind: KnobKind
    key: str
    device: str | None


def host_settings(profile: Profile) -> dict[str, list[Setting]]:
    """Every host of the profile and the knob settings it carries (by the knobs' scopes).
    Tunnel knobs are read from the host's interfaces; iperf3 knobs live on no host."""
    out: dict[str, list[Setting]] = {}
    for pair in profile.pairs:
        for role in (Role.SENDER, Role.RECEIVER):
            out.setdefault(pair.host(role), [])
    for knob in profile.knobs:
        if knob.kind in (KnobKind.IPERF3, KnobKind.TUNNEL):
            continue
        for pair in profile.pairs:
            if knob.pairs and pair.label not in knob.pairs:
                continue
            for role in knob.scope.roles:
                device = knob.device or pair.device(role) or "data0"
                s = Setting(knob.name, knob.kind, knob.key, device)
                if s not in out[pair.host(role)]:
                    out[pair.host(role)].append(s)
    return out


def read_command(settings: Iterable[Setting]) -> str:
    """One shell command printing every setting (after a marker line each) and the links."""
    parts = []
    for s in settings:
        parts.append(f"echo {MARK}{s.knob}")
        if s.kind is KnobKind.SYSCTL:
            parts.append(f"sysctl -n {shlex.quote(s.key)} 2>&1")
        elif s.kind is KnobKind.ETHTOOL_FEATURE:
            name = ETHTOOL_NAMES.get(s.key, s.key)
            parts.append(f"ethtool -k {shlex.quote(s.device or 'data0')} 2>&1 | "
                         f"sed -n {shlex.quote(f's/^{name}: //p')}")
        elif s.kind is KnobKind.MTU:
            parts.append(f"cat /sys/class/net/{shlex.quote(s.device or 'data0')}/mtu 2>&1")
        elif s.kind is KnobKind.ETHTOOL_COALESCE:
            parts.append(f"ethtool -c {shlex.quote(s.device or 'data0')} 2>&1 | "
                         f"sed -n {shlex.quote(f's/^{s.key}: *//p')}")
    parts.append(f"echo {MARK}#links")
    parts.append("ip -o link show 2>&1")
    return "; ".join(parts)


@dataclass(slots=True)
class HostState:
    """What one host reported: knob -> value, and abtui's tunnel interfaces on it."""

    values: dict[str, str] = field(default_factory=dict)
    tunnel_ifs: list[str] = field(default_factory=list)

    @property
    def tunnel(self) -> str:
        kinds = sorted({TUNNEL_TYPES[m.group(1)] for m in map(TUNNEL_IF.match, self.tunnel_ifs)
                        if m})
        return "+".join(kinds) or "none"


def parse_read(out: str) -> HostState:
    state = HostState()
    current: str | None = None
    lines: dict[str, list[str]] = {}
    for line in out.splitlines():
        if line.startswith(MARK):
            current = line[len(MARK):]
            lines[current] = []
        elif current is not None:
            lines[current].append(line)
    for name, body in lines.items():
        if name == "#links":
            for line in body:
                parts = line.split(":", 2)
                if len(parts) >= 2:
                    ifname = parts[1].strip().split("@")[0]
                    if TUNNEL_IF.match(ifname):
                        state.tunnel_ifs.append(ifname)
        else:
            text = norm(" ".join(body))
            state.values[name] = text.split(" [")[0]  # ethtool: "off [fixed]"
    return state


@dataclass(slots=True)
class Reading:
    """All hosts at one moment (wall clock, as events are stamped)."""

    t: float
    hosts: dict[str, HostState]

    def pair_values(self, profile: Profile) -> dict[str, dict[str, str]]:
        """pair -> knob -> the value its hosts have; a knob whose hosts in the pair disagree
        reads "sender-value/receiver-value" (the form abtui.core.configuration shows)."""
        out: dict[str, dict[str, str]] = {}
        for pair in profile.pairs:
            values: dict[str, str] = {}
            for knob in profile.knobs:
                if knob.pairs and pair.label not in knob.pairs:
                    continue
                got = self.knob_values(knob, pair)
                if got:
                    values[knob.name] = got[0] if len(set(got)) == 1 else "/".join(got)
            out[pair.label] = values
        return out

    def knob_values(self, knob: Knob, pair: Pair) -> list[str]:
        if knob.kind is KnobKind.IPERF3:
            return []
        if knob.kind is KnobKind.TUNNEL:
            return [self.hosts[pair.host(r)].tunnel for r in (Role.SENDER, Role.RECEIVER)]
        return [self.hosts[pair.host(r)].values.get(knob.name, "?") for r in knob.scope.roles]


class HostReader:
    """One asyncssh connection per host, opened from the lab's ssh_config (its host keys
    checked against the lab's known_hosts), separate from anything abtui opened."""

    def __init__(self, profile: Profile, ssh_config: str) -> None:
        self.profile = profile
        self.ssh_config = ssh_config
        self.settings = host_settings(profile)
        self.conns: dict[str, asyncssh.SSHClientConnection] = {}

    async def open(self) -> None:
        async def one(alias: str) -> None:
            self.conns[alias] = await asyncssh.connect(alias, config=[self.ssh_config])

        await asyncio.gather(*(one(a) for a in self.settings))

    async def close(self) -> None:
        for conn in self.conns.values():
            conn.close()
        await asyncio.gather(*(c.wait_closed() for c in self.conns.values()),
                             return_exceptions=True)
        self.conns = {}

    async def read(self) -> Reading:
        async def one(alias: str) -> tuple[str, HostState]:
            conn = self.conns.get(alias)
            if conn is None:
                conn = self.conns[alias] = await asyncssh.connect(alias,
                                                                  config=[self.ssh_config])
            result = await conn.run(read_command(self.settings[alias]), check=False)
            return alias, parse_read(str(result.stdout))

        t0 = time.time()
        got = await asyncio.gather(*(one(a) for a in self.settings))
        return Reading((t0 + time.time()) / 2, dict(got))


def read_once(profile: Profile, ssh_config: str) -> Reading:
    """A reading from synchronous code (the tmux tests): connect, read, close."""
    async def go() -> Reading:
        reader = HostReader(profile, ssh_config)
        try:
            return await reader.read()
        finally:
            await reader.close()

    return asyncio.run(go())


# ---- what may be left behind (read locally: works even when a host's sshd is gone) --------

def leftovers(lab: Lab, aliases: Iterable[str]) -> dict[str, list[str]]:
    """alias -> every live process other than the host's sshd daemon ("pid comm: cmdline"),
    and every abtui tunnel interface ("link NAME"). A lab host at rest runs its sshd alone."""
    out: dict[str, list[str]] = {}
    for alias in aliases:
        daemon = lab.sshd_pid(alias)
        found = [f"{pid} {comm}: {cmdline[:120]}"
                 for pid, comm, cmdline, state in netns_processes(f"abtui-{alias}")
                 if pid != daemon and state != "Z"]
        links = subprocess.run(["ip", "netns", "exec", f"abtui-{alias}", "ip", "-o", "link",
                                "show"], capture_output=True, text=True).stdout
        for line in links.splitlines():
            parts = line.split(":", 2)
            name = parts[1].strip().split("@")[0] if len(parts) >= 2 else ""
            if TUNNEL_IF.match(name):
                found.append(f"link {name}")
        if found:
            out[alias] = found
    return out


def wait_no_leftovers(lab: Lab, aliases: Iterable[str], timeout: float = 10.0
                      ) -> dict[str, list[str]]:
    """Leftovers once they stop going away (sshd sessions and reaped children end a moment
    after the client leaves), or what is still there at the deadline."""
    aliases = list(aliases)
    deadline = time.monotonic() + timeout
    while True:
        left = leftovers(lab, aliases)
        if not left or time.monotonic() > deadline:
            return left
        time.sleep(0.2)


def force_restore(lab: Lab, profile: Profile, originals: Reading | None) -> list[str]:
    """The tests' last resort, by hand (ip netns exec): kill every process but the sshd
    daemon (by PID), delete abtui's tunnel interfaces and set every knob back to the value
    `originals` read. Returns what it had to do (empty when the hosts were clean)."""
    done: list[str] = []
    settings = host_settings(profile)
    for alias in settings:
        daemon = lab.sshd_pid(alias)
        for pid, comm, _cmd, state in netns_processes(f"abtui-{alias}"):
            if pid != daemon and state != "Z":
                with contextlib.suppress(ProcessLookupError):
                    os.kill(pid, signal.SIGKILL)
                    done.append(f"{alias}: killed {pid} {comm}")
    time.sleep(0.2)
    for alias in settings:
        netns = ["ip", "netns", "exec", f"abtui-{alias}"]
        for entry in leftovers(lab, [alias]).get(alias, []):
            if entry.startswith("link "):
                name = entry.split()[1]
                subprocess.run([*netns, "ip", "link", "del", "dev", name], capture_output=True)
                done.append(f"{alias}: deleted link {name}")
        if originals is None:
            continue
        want = originals.hosts[alias].values
        now = parse_read(subprocess.run([*netns, "sh", "-c", read_command(settings[alias])],
                                        capture_output=True, text=True).stdout).values
        for s in settings[alias]:
            if now.get(s.knob) == want.get(s.knob) or s.knob not in want:
                continue
            if s.kind is KnobKind.SYSCTL:
                cmd = ["sysctl", "-q", "-w", f"{s.key}={want[s.knob]}"]
            elif s.kind is KnobKind.ETHTOOL_FEATURE:
                cmd = ["ethtool", "-K", s.device or "data0", s.key, want[s.knob]]
            elif s.kind is KnobKind.MTU:
                cmd = ["ip", "link", "set", "dev", s.device or "data0", "mtu", want[s.knob]]
            else:
                continue
            subprocess.run([*netns, *cmd], capture_output=True)
            done.append(f"{alias}: {s.knob} {now.get(s.knob)!r} -> {want[s.knob]!r}")
    return done


def differences(reading: Reading, originals: Reading) -> list[str]:
    """Every knob whose value differs from the original, and every tunnel interface."""
    out = []
    for alias, state in reading.hosts.items():
        for knob, value in originals.hosts[alias].values.items():
            if state.values.get(knob) != value:
                out.append(f"{alias}: {knob} is {state.values.get(knob)!r}, was {value!r}")
        out += [f"{alias}: tunnel interface {name} left" for name in state.tunnel_ifs]
    return out
