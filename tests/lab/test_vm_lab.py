"""VM hosts (abtui.lab.vm.guest): a lab whose pairs boot real Debian kernels under qemu.

One 2-pair VM lab for the whole module (four guests: pair A boots one kernel build, pair B
another, as a built kernel tree assembled from its Debian package: `--kernel TREE` for real;
booting is the expensive part): the hosts are lab hosts like the namespace ones, every
tunnel type carries traffic through the tunnel for real (the tunnel's counters rise, and the
plain link carries only ESP, GRE or UDP, never the inner TCP), netem shapes the data link and
is restored, `abtui check` and a procedure run on the real kernels, and `lab down` leaves
nothing. Skipped, with the reason, where qemu/virtme-ng or the kernel packages are missing.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import re
import socket
import struct
import subprocess
import sys
import threading
import time
from collections import Counter
from collections.abc import Iterator
from pathlib import Path

import pytest

from abtui.core.errors import AbtuiError
from abtui.hosts.connect import open_hosts
from abtui.lab.kernels import resolve
from abtui.lab.netns import Lab
from abtui.lab.vm import guest as lab_vm
from abtui.profile import load_profile
from tests.lab.guests import guest_ssh as _ssh
from tests.lab.kernel_tree import tree_from_package
from tests.lab.namespaces import make_test_lab
from tests.lab.through import iperf3_mbits

# booting four TCG guests (in the first test's setup) and a procedure's runs take minutes:
# the slow tier (about 4.5 minutes of CI's 25)
pytestmark = [pytest.mark.lab, pytest.mark.slow, pytest.mark.timeout(1200)]
ROOT = Path(__file__).resolve().parents[2]
# Two real builds (6.1.170 and 6.1.192): pair A boots the first package, pair B the second
# as a built tree (bzImage, .config, System.map and in-tree modules) made from its package.
KERNELS = os.environ.get("ABTUI_TEST_KERNELS",
                         "linux-image-6.1.0-47-amd64,linux-image-6.1.0-57-amd64").split(",")
IPERF_PORT = 5299


@pytest.fixture(scope="module")
def vm_lab(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Lab]:
    reason = lab_vm.missing_reason()
    if reason:
        pytest.skip(reason)
    try:
        kernels = [resolve(k) for k in KERNELS[:2]]
    except AbtuiError as exc:
        pytest.skip(f"the test kernels cannot be had: {exc}")
    tree = tree_from_package(kernels[1], tmp_path_factory.mktemp("linux-tree"))
    lab = make_test_lab(tmp_path_factory.mktemp("vmlab"), "v")
    lab.down()
    # pair A's data NIC is e1000e (interrupt moderation), pair B's the default (virtio); pair B
    # boots a built tree assembled from a Debian package
    lab.up(pairs=2, kernels={"A": kernels[0].spec, "B": str(tree)}, nics={"A": "e1000e"})
    try:
        yield lab
    finally:
        lab.down()



class Sniffer:
    """Count the IPv4 packets on a root-namespace device (a guest's data tap) by kind: ESP,
    GRE, UDP to a port, TCP to a port. A raw AF_PACKET socket: no capture tool needed."""

    def __init__(self, device: str) -> None:
        self.device = device
        self.counts: Counter[str] = Counter()
        self._stop = threading.Event()
        self._sock = socket.socket(socket.AF_PACKET, socket.SOCK_RAW, socket.htons(0x0003))
        self._sock.bind((device, 0))
        self._sock.settimeout(0.1)
        self._thread = threading.Thread(target=self._loop, daemon=True)

    def __enter__(self) -> Sniffer:
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._stop.set()
        self._thread.join()
        self._sock.close()

    def _loop(self) -> None:
        while not self._stop.is_set():
            try:
                frame = self._sock.recv(256)
            except TimeoutError:
                continue
            if len(frame) < 38 or frame[12:14] != b"\x08\x00":
                continue
            ip = frame[14:]
            proto, ihl = ip[9], (ip[0] & 0x0F) * 4
            if proto == 50:
                self.counts["esp"] += 1
            elif proto == 47:
                self.counts["gre"] += 1
            elif proto in (6, 17) and len(ip) >= ihl + 4:
                dport = struct.unpack("!H", ip[ihl + 2:ihl + 4])[0]
                self.counts[f"{'tcp' if proto == 6 else 'udp'}:{dport}"] += 1


async def _iperf3(hosts, pair, target: str, seconds: int = 2, side: str = "sender") -> float:
    """iperf3's Mbit/s through `target`, from its sender or receiver summary line."""
    return await iperf3_mbits(hosts, pair, target, port=IPERF_PORT, seconds=seconds, side=side,
                              timeout=60)


def _leftovers(lab: Lab, alias: str) -> list[str]:
    """abtui's tunnel links, SAs and policies, netem and wireguard-go left on a guest."""
    out = _ssh(lab, alias, "ip -br link; echo ---; ip xfrm state; ip xfrm policy; echo ---; "
               "tc qdisc show dev data0; echo ---; pgrep -a wireguard-go; true")
    links, xfrm, qdisc, procs = out.split("---\n")
    found = [ln.split()[0] for ln in links.splitlines() if ln.startswith("ab")]
    found += [ln for ln in xfrm.splitlines() if ln.strip()]
    found += [ln for ln in qdisc.splitlines() if "netem" in ln]
    return found + [ln for ln in procs.splitlines() if ln.strip()]


def _tunnel_counter(lab: Lab, alias: str, kind: str, ifname: str) -> int:
    """Packets the sender's tunnel carried: its device's, or for IPsec (no device) the ESP
    SAs' own counters."""
    if kind == "ipsec":
        out = _ssh(lab, alias, "ip -s xfrm state")
        return sum(int(n) for n in re.findall(r"\(bytes\),\s*(\d+)\(packets\)", out))
    return int(_ssh(lab, alias, f"cat /sys/class/net/{ifname}/statistics/tx_packets"))


def test_vm_hosts_are_lab_hosts(vm_lab: Lab):
    status = vm_lab.status()
    assert status["ok"], status
    assert status["accel"] in ("kvm", "tcg") and status["accel_why"]
    releases = {h["pair"]: h["release"] for h in status["hosts"]}
    assert releases["A"] != releases["B"]
    specs = vm_lab.kernel_specs()
    assert specs["A"] == KERNELS[0] and resolve(specs["B"]).kind == "tree"
    for h in status["hosts"]:
        assert h["kernel"] == specs[h["pair"]]
        assert h["boot_s"] > 0
    async def each() -> dict[str, str]:
        hosts = await open_hosts(load_profile(vm_lab.profile_path))  # known_hosts verified
        try:
            assert hosts.errors == {}
            outs = await asyncio.gather(*(hosts.links[a].check("uname -r; hostname")
                                          for a in hosts.links))
            return dict(zip(hosts.links, outs, strict=True))
        finally:
            await hosts.close()

    seen = asyncio.run(each())
    for h in vm_lab.hosts(2):
        assert seen[h.alias].split() == [releases[h.pair], h.alias]
    snd, rcv = vm_lab.hosts(2)[:2]
    assert "1 received" in _ssh(vm_lab, snd.alias, f"ping -c 1 -W 5 {rcv.data_address}")
    text = subprocess.run([sys.executable, "-m", "abtui", "lab", "status"], cwd=ROOT,
                          capture_output=True, text=True, env=_lab_env(vm_lab)).stdout
    assert f"VM {releases['A']} ({status['accel']}, booted in" in text


def test_a_built_tree_boots_with_its_own_modules(vm_lab: Lab):
    """Pair B boots the tree: the package's release, and the modules it loads (its NIC's,
    WireGuard) are the tree's own files, linked by virtme-ng from where `make` left them."""
    tree = Path(vm_lab.kernel_specs()["B"])
    want = resolve(KERNELS[1]).release
    for h in vm_lab.hosts(2)[2:]:
        out = _ssh(vm_lab, h.alias, "uname -r; for m in virtio_net wireguard; do "
                   "readlink -f $(modinfo -n $m); done; test -d /sys/module/wireguard && "
                   "echo loaded")
        release, virtio_net, wireguard, loaded = out.split()
        assert release == want, out
        assert virtio_net == str(tree / "drivers/net/virtio_net.ko"), out
        assert wireguard == str(tree / "drivers/net/wireguard/wireguard.ko"), out
        assert loaded == "loaded", out


def _lab_env(lab: Lab) -> dict[str, str]:
    """The environment that makes `abtui` (lab, run --lab) use this lab."""
    return {**os.environ, "ABTUI_LAB": f"{lab.name},{lab.ifprefix},{lab.mgmt}",
            "ABTUI_LAB_DIR": str(lab.state_dir.parent)}


async def test_every_tunnel_type_carries_traffic_through_the_tunnel(vm_lab: Lab):
    from abtui.hosts.tunnels import TunnelManager

    profile = load_profile(vm_lab.profile_path)
    hosts = await open_hosts(profile)
    manager = TunnelManager(hosts.links, hosts.dialects, profile.pairs)
    a = profile.pairs[0]
    plain = {"wireguard": "udp:51821", "ipsec": "esp", "gre": "gre", "vxlan": "udp:4789"}
    try:
        for kind, wire in plain.items():
            targets = await manager.switch_pairs(["A", "B"], kind)  # both builds at once
            ifname = manager.active["A"].ends[0].ifname
            before = _tunnel_counter(vm_lab, a.sender, kind, ifname)
            with Sniffer(f"{vm_lab.ifprefix}-ard") as sniff:
                mbits = await _iperf3(hosts, a, targets["A"])
            after = _tunnel_counter(vm_lab, a.sender, kind, ifname)
            assert mbits > 0.5, kind
            assert after - before > 100, (kind, before, after)
            assert sniff.counts[wire] > 100, (kind, sniff.counts)
            # the inner TCP never shows on the plain link: it went through the tunnel
            assert sniff.counts[f"tcp:{IPERF_PORT}"] == 0, (kind, sniff.counts)
            if kind == "wireguard":  # the kernel's own WireGuard, not wireguard-go
                out = _ssh(vm_lab, a.sender, "test -d /sys/module/wireguard && echo kernel; "
                           "pgrep -c wireguard-go; true")
                assert out.split() == ["kernel", "0"], out
            b = profile.pairs[1]
            assert "1 received" in await hosts.links[b.sender].check(
                f"ping -c 1 -W 5 {targets['B']}", timeout=20)
        await manager.down_all()
    finally:
        await manager.down_all()
        await hosts.close()
    for h in vm_lab.hosts(2):
        assert _leftovers(vm_lab, h.alias) == [], h.alias


async def test_netem_shapes_the_data_link_and_is_restored(vm_lab: Lab):
    from abtui.core.model import Knob, KnobKind, Scope
    from abtui.hosts.knobs import KnobManager, resolve_targets

    profile = load_profile(vm_lab.profile_path)
    hosts = await open_hosts(profile)
    a = profile.pairs[0]
    knob = Knob("wan", KnobKind.NETEM, ("none", "delay 40ms", "rate 20mbit"),
                scope=Scope.SENDER, pairs=("A",))
    manager = KnobManager(hosts.links, hosts.dialects)
    ping = f"ping -c 5 -i 0.2 -W 5 {a.target}"
    try:
        result = await manager.apply(knob, "delay 40ms", resolve_targets(profile.pairs, knob))
        assert result.values == {a.sender: "delay 40ms"}
        rtt = re.search(r"= ([\d.]+)/", await hosts.links[a.sender].check(ping, timeout=30))
        assert rtt and float(rtt.group(1)) >= 40.0, rtt
        await manager.apply(knob, "rate 20mbit", resolve_targets(profile.pairs, knob))
        # what arrived (the sender's figure counts what its queue still held)
        assert await _iperf3(hosts, a, a.target, seconds=3, side="receiver") < 22.0
        restored = await manager.restore_all()
        assert [(r.host, r.value, r.ok) for r in restored] == [(a.sender, "none", True)]
    finally:
        await manager.restore_all()
        await hosts.close()
    assert _leftovers(vm_lab, a.sender) == []


def test_check_reports_every_tunnel_type_available(vm_lab: Lab):
    proc = subprocess.run([sys.executable, "-m", "abtui", "check", str(vm_lab.profile_path)],
                          cwd=ROOT, capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    for label in ("A", "B"):
        line = next(ln for ln in proc.stdout.splitlines() if f"pair {label}: tunnels" in ln)
        assert re.fullmatch(r"ok   pair [AB]: tunnels available: none, wireguard \((kernel|"
                            r"module)\), vxlan( \(module\))?, gre( \(module\))?, "
                            r"ipsec( \(module\))?", line), line
    for h in vm_lab.hosts(2):
        release = vm_lab.status()["hosts"][0 if h.pair == "A" else 2]["release"]
        assert f"ok   {h.alias}: reachable, Linux {release} ({h.alias}), as root" in proc.stdout


# its goldens (tests/golden/softirq-crypto-*vm.*) stay
def test_softirq_crypto_runs_on_two_real_builds(vm_lab: Lab, tmp_path):
    """The procedure as its authors ran it: BEFORE and AFTER on two kernel builds, real IPsec
    and kernel WireGuard, TX and RX; no tunnel is translated."""
    profile = tmp_path / "softirq-crypto.toml"
    specs = vm_lab.kernel_specs()  # AFTER: the built tree pair B boots
    profile.write_text((ROOT / "profiles" / "softirq-crypto.toml").read_text() + (
        f'\n[lab]\nkernels = {{ BEFORE = "{specs["A"]}", AFTER = "{specs["B"]}" }}\n'))
    out = tmp_path / "s.jsonl"
    proc = subprocess.run([sys.executable, "-m", "abtui", "run", str(profile), "--headless",
                           "--lab", "--quick", "--out", str(out)], cwd=ROOT, capture_output=True,
                          text=True, timeout=900, env=_lab_env(vm_lab))
    assert proc.returncode == 0, proc.stderr[-3000:]
    assert "bringing up" not in proc.stderr  # the VM lab that is up has these builds
    lines = [ln for ln in proc.stderr.splitlines() if ln.startswith("abtui: lab: ")]
    assert not any("knob tunnel" in ln for ln in lines), lines
    kernels = next(ln for ln in lines if "lab: kernels:" in ln)
    assert "BEFORE on VM hosts booting linux-image" in kernels
    assert f"AFTER on VM hosts booting {specs['B']} (6.1.0-57-amd64)" in kernels, kernels
    report = subprocess.run([sys.executable, "-m", "abtui", "export", str(out), "--format",
                             "json"], cwd=ROOT, capture_output=True, text=True, check=True)
    import json

    phases = json.loads(report.stdout)["phases"]
    seen = {(p["pair"], p["config"]["tunnel"], p["config"].get("direction")) for p in phases
            if (p["summary"] or {}).get("sender_bits_per_second")}
    assert seen == {(pair, t, d) for pair in ("BEFORE", "AFTER")
                    for t in ("ipsec", "wireguard") for d in ("tx", "rx")}, seen


# ix-enable-aim on pair A's e1000e NIC, its stock pair only (the others would need pairs the
# module's lab does not have, and a lab rebuilt for them)
IX_ONE_PAIR = """
[profile]
name = "ix-enable-aim-1"
base_pair = "stock"
[test]
duration = 4
interval = 2.0
ping_count = 3
[[pairs]]
label = "stock"
sender = "stock-snd"
receiver = "stock-rcv"
target = "198.18.1.2"
sender_device = "ix2"
receiver_device = "ix2"
[[knobs]]
name = "enable_aim"
kind = "sysctl"
key = "dev.ix.2.enable_aim"
values = [0, 1, 2]
scope = "both"
[knobs.os.linux]
kind = "ethtool-coalesce"
key = "adaptive-rx"
values = { 0 = "off", 1 = "on", 2 = "on" }
[[watches]]
name = "interrupt_rate"
role = "receiver"
sysctl = "dev.ix.2.queue*.interrupt_rate"
interval = 2.0
[plan]
matrix = ["enable_aim"]
repetitions = 1
shuffle = false
pause = 0.5
[report]
layout = "sweep"
"""


def _rx_usecs(lab: Lab, alias: str) -> str:
    out = _ssh(lab, alias, "ethtool -c data0")
    return re.search(r"^rx-usecs:\s*(\S+)", out, re.M).group(1)  # type: ignore[union-attr]


async def test_enable_aim_flips_e1000e_interrupt_throttling_and_is_restored(vm_lab: Lab):
    """The ix knob as the lab maps it onto a VM pair's e1000e: each value reads back from the
    guest's own `ethtool -c data0`, and the host's mode comes back."""
    from abtui.hosts.knobs import KnobManager, resolve_targets
    from abtui.lab import moderation

    snd, rcv = vm_lab.hosts(2)[:2]
    assert snd.nic_name == "e1000e" and "e1000e" in _ssh(vm_lab, rcv.alias, "ethtool -i data0")
    assert [h["nic"] for h in vm_lab.status()["hosts"]] == ["e1000e"] * 2 + ["virtio"] * 2
    before = _rx_usecs(vm_lab, rcv.alias)
    aim = load_profile(ROOT / "profiles" / "ix-enable-aim.toml").knob("enable_aim")
    profile = load_profile(vm_lab.profile_path)
    knob = moderation.itr_knob(aim, moderation.itr_values(aim) or {}, (profile.pairs[0].label,))
    hosts = await open_hosts(profile)
    manager = KnobManager(hosts.links, hosts.dialects)
    try:
        for value, itr in (("0", "0"), ("1", "1"), ("2", "3")):
            result = await manager.apply(knob, value, resolve_targets(profile.pairs, knob))
            assert result.values == {snd.alias: itr, rcv.alias: itr}, value
            assert _rx_usecs(vm_lab, rcv.alias) == itr
        await manager.apply(knob, "0", resolve_targets(profile.pairs, knob))
        restored = await manager.restore_all()
        assert {(r.host, r.value, r.ok) for r in restored} == {
            (snd.alias, before, True), (rcv.alias, before, True)}
    finally:
        await manager.restore_all()
        await hosts.close()
    assert _rx_usecs(vm_lab, rcv.alias) == before


def test_ix_enable_aim_runs_on_e1000e_with_interrupt_rates_per_vector(vm_lab: Lab, tmp_path):
    """The procedure's knob and watch, no stand-in: every phase has each receiver's data0
    vectors' interrupt rates, and the knob is restored."""
    from abtui.sessions.session import Session

    profile = tmp_path / "ix1.toml"
    profile.write_text(IX_ONE_PAIR)
    out = tmp_path / "ix.jsonl"
    rcv = vm_lab.hosts(2)[1]
    before = _rx_usecs(vm_lab, rcv.alias)
    proc = subprocess.run([sys.executable, "-m", "abtui", "run", str(profile), "--headless",
                           "--lab", "--quick", "--out", str(out)], cwd=ROOT, capture_output=True,
                          text=True, timeout=600, env=_lab_env(vm_lab))
    assert proc.returncode == 0, proc.stderr[-3000:]
    assert "bringing up" not in proc.stderr  # the module's lab has e1000e on pair A already
    assert "ethtool -C data0 rx-usecs on stock: 0 = 0 (off)" in proc.stderr
    assert "rx_pps" not in proc.stderr
    session = Session.load(out)
    rates: dict[tuple[str, str], list[float]] = {}
    for (pair, _host, name), (_t, values) in session.watches.items():
        rates.setdefault((str(pair), name), []).extend(values)
    rx = rates.get(("stock", "interrupt_rate:data0-rx-0"), [])
    assert rx and max(rx) > 100, sorted(rates)  # interrupts/s during iperf3
    assert ("stock", "interrupt_rate:data0-tx-0") in rates
    assert not [k for k in rates if "rx_pps" in k[1]]  # no stand-in
    assert _rx_usecs(vm_lab, rcv.alias) == before



def test_down_removes_every_vm_link_process_and_file(vm_lab: Lab):
    pids = {p for p in vm_lab.vms.pids()}
    assert len(pids) >= 4  # four guests (qemu) and their virtme-ng
    vm_lab.down()
    deadline = time.monotonic() + 10
    while time.monotonic() < deadline and any(_alive(p) for p in pids):
        time.sleep(0.1)
    assert not [p for p in pids if _alive(p)]
    links = subprocess.run(["ip", "-o", "link"], capture_output=True, text=True).stdout
    assert f" {vm_lab.ifprefix}-" not in links
    assert not vm_lab.state_dir.exists()
    assert vm_lab.status()["up"] is False


def _alive(pid: int) -> bool:
    with contextlib.suppress(OSError):
        state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
        return state != "Z"
    return False

