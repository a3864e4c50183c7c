"""The VM lab's data NIC model (virtio or e1000e) without booting a guest: `--nic` and a
profile's [lab] nic, the guest's qemu device and driver, and ix-enable-aim mapped onto e1000e's
interrupt throttling with its /proc/interrupts vectors as the interrupt-rate watch."""

from __future__ import annotations

import dataclasses
import subprocess
from pathlib import Path

import pytest

from abtui import cli
from abtui.commands.lab import parse_nics
from abtui.core.errors import BadInput
from abtui.core.model import Knob, KnobKind, Role, Scope, Watch
from abtui.lab import kernels, moderation
from abtui.lab.mapping import STANDIN_KEY, LabFacts, map_profile
from abtui.lab.netns import Lab
from abtui.lab.prepare import lab_nics_for
from abtui.lab.vm import guest as lab_vm
from abtui.measure.run.sampling import watch_samples
from abtui.profile import load_profile

PROFILES = Path(__file__).resolve().parents[3] / "profiles"
BUILDS = ("linux-image-a (6.1.0-47-amd64)", "linux-image-b (6.1.0-57-amd64)", "")


def _lab(tmp_path: Path) -> Lab:
    return Lab(name="unit", octet=19, ifprefix="abu", state_dir=tmp_path, mgmt=230)


def _guest(tmp_path: Path, nic: str) -> lab_vm.Guest:
    h = _lab(tmp_path).hosts(1, {"A": "k"}, {"A": nic})[1]
    k = kernels.Kernel("k", "/k/vmlinuz-6.1", "6.1", "/k/lib/modules/6.1", "image")
    return _lab(tmp_path).vms.guest(h, k)


def test_the_data_nic_model_is_the_guests_qemu_device_and_driver(tmp_path, monkeypatch):
    monkeypatch.setattr(lab_vm, "vng_path", lambda: "/v/vng")
    e1000e = _guest(tmp_path, "e1000e")
    opts = lab_vm.vng_command(e1000e, "tcg")[-1]
    assert f"-device e1000e,netdev=data,mac={e1000e.data_mac}" in opts
    assert f"-device virtio-net-pci,netdev=mgmt,mac={e1000e.mgmt_mac}" in opts  # mgmt0 stays
    script = lab_vm.guest_script(e1000e)
    # no udev: the driver is loaded before the NICs are named by MAC, and data0 is data0
    assert script.index("modprobe e1000e") < script.index("name data0")
    virtio = _guest(tmp_path, "virtio")
    assert f"-device virtio-net-pci,netdev=data,mac={virtio.data_mac}" in \
        lab_vm.vng_command(virtio, "tcg")[-1]
    assert "e1000e" not in lab_vm.guest_script(virtio)


def test_each_vm_host_knows_its_nic_and_namespace_hosts_are_veth(tmp_path):
    hosts = _lab(tmp_path).hosts(2, {"A": "k", "B": "k"}, {"B": "e1000e"})
    assert [h.nic_name for h in hosts] == ["virtio", "virtio", "e1000e", "e1000e"]
    assert [h.nic_name for h in _lab(tmp_path).hosts(1, {})] == ["veth", "veth"]


def test_nic_arguments_per_pair_and_for_every_vm_pair():
    kernels_ = {"A": "x", "B": "y"}
    assert parse_nics(["e1000e"], kernels_) == {"A": "e1000e", "B": "e1000e"}
    assert parse_nics(["virtio", "b=e1000e"], kernels_) == {"A": "virtio", "B": "e1000e"}
    assert parse_nics([], kernels_) == {}
    with pytest.raises(BadInput, match="--nic A=rtl8139: the NIC models are e1000e, virtio"):
        parse_nics(["A=rtl8139"], kernels_)
    with pytest.raises(BadInput, match="--nic C=e1000e: pair C has no VM hosts"):
        parse_nics(["C=e1000e"], kernels_)
    with pytest.raises(BadInput, match="only VM pairs have a NIC model"):
        parse_nics(["e1000e"], {})


def test_a_bad_nic_argument_is_one_line_and_exit_2(capsys):
    assert cli.main(["lab", "up", "--pairs", "1", "--nic", "e1000e"]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "--nic e1000e: only VM pairs have a NIC model" in err


def _with_lab(tmp_path: Path, name: str, section: str) -> Path:
    path = tmp_path / name
    path.write_text((PROFILES / name).read_text() + section)
    return path


def test_a_profile_names_its_nic_or_gets_e1000e_for_interrupt_moderation(tmp_path):
    vm = {"A": "k", "B": "k", "C": "k"}
    ix = load_profile(PROFILES / "ix-enable-aim.toml")
    assert lab_nics_for(ix, {"A": "k", "B": "k"}) == {"A": "e1000e", "B": "e1000e"}
    assert lab_nics_for(ix, {}) == {}  # namespace pairs have veth
    crypto = load_profile(PROFILES / "softirq-crypto.toml")
    assert lab_nics_for(crypto, vm) == {}  # no moderation: the lab's default
    named = load_profile(_with_lab(tmp_path, "softirq-crypto.toml",
                                   '\n[lab]\nnic = "e1000e"\nnics = { AFTER = "virtio" }\n'))
    assert lab_nics_for(named, vm) == {"A": "e1000e", "B": "virtio"}
    bad = _with_lab(tmp_path, "ix-enable-aim.toml", '\n[lab]\nnic = "rtl8139"\n')
    with pytest.raises(BadInput, match=r"ix-enable-aim.toml:\d+: lab.nic: .rtl8139. is not "
                                       r"allowed; expected one of e1000e, virtio"):
        load_profile(bad)


def _ix_on(tmp_path: Path, nics: tuple[str, ...]):
    profile = load_profile(PROFILES / "ix-enable-aim.toml")
    vms = {chr(65 + i): "k" for i, n in enumerate(nics) if n != "veth"}
    hosts = _lab(tmp_path).hosts(3, vms, {k: n for k, n in zip("ABC", nics, strict=True)
                                          if k in vms})
    facts = LabFacts(frozenset(), builds=BUILDS if vms else (), nics=nics)
    return map_profile(profile, hosts, ssh_config="c", known_hosts="k", facts=facts)


def test_enable_aim_is_e1000e_interrupt_throttling_on_its_vm_pairs(tmp_path):
    mapped = _ix_on(tmp_path, ("e1000e", "e1000e", "veth"))
    knob = mapped.profile.knob("enable_aim")
    assert knob.for_os("linux") == (KnobKind.ETHTOOL_COALESCE, "rx-usecs")
    assert [knob.value_for_os("linux", v) for v in ("0", "1", "2")] == ["0", "1", "3"]
    assert knob.for_os("freebsd") == (KnobKind.SYSCTL, "dev.ix.2.enable_aim")  # its own
    assert knob.pairs == ("stock", "patched") and knob.device is None  # data0
    lines = [t.line() for t in mapped.translations]
    assert ("lab: knob enable_aim: dev.ix.2.enable_aim (Linux: ethtool-coalesce adaptive-rx) → "
            "ethtool -C data0 rx-usecs on stock, patched: 0 = 0 (off), 1 = 1 (dynamic), "
            "2 = 3 (dynamic conservative) (the VM pairs' data NIC is an emulated Intel 82574L "
            "(e1000e), whose interrupt throttling modes are the analog of adaptive interrupt "
            "moderation; e1000e has no adaptive-rx)") in lines
    assert any(ln.startswith("lab: knob enable_aim on linux-ref: ") and
               "veth has no interrupt moderation" in ln for ln in lines), lines
    assert not any(STANDIN_KEY in ln for ln in lines if "knob" in ln)
    irq = mapped.profile.watches[0]
    assert (irq.name, irq.sysctl, irq.command) == ("interrupt_rate", None, moderation.IRQ_WATCH)
    assert not any("veth has no interrupts" in ln for ln in lines if "interrupt_rate" in ln)
    # the Linux reference on a namespace pair keeps the stand-in, and says why
    assert mapped.profile.watches[1].name == "interrupts:data0.rx_pps"


def test_namespace_and_virtio_pairs_keep_the_stand_in_and_say_why(tmp_path):
    ns = _ix_on(tmp_path, ("veth", "veth", "veth"))
    assert ns.profile.knob("enable_aim").key == STANDIN_KEY
    assert any("veth has no interrupts: the receive packet rate" in t.why
               for t in ns.translations)
    virtio = _ix_on(tmp_path, ("virtio", "virtio", "veth"))
    assert virtio.profile.knob("enable_aim").key == STANDIN_KEY
    why = next(t.why for t in virtio.translations if t.subject == "knob enable_aim")
    assert why.startswith("virtio-net and veth have no interrupt coalescing "
                          "(`abtui lab up --nic e1000e` has)"), why


def test_the_linux_adaptive_rx_knob_and_rx_usecs_on_e1000e(tmp_path):
    profile = load_profile(PROFILES / "ix-enable-aim.toml")
    adaptive = Knob("aim", KnobKind.ETHTOOL_COALESCE, ("off", "on"), key="adaptive-rx",
                    device="eth0", scope=Scope.BOTH)
    usecs = Knob("itr", KnobKind.ETHTOOL_COALESCE, ("0", "3", "50"), key="rx-usecs")
    frames = Knob("frames", KnobKind.ETHTOOL_COALESCE, ("1", "8"), key="rx-frames")
    profile = dataclasses.replace(profile, knobs=[adaptive, usecs, frames])
    hosts = _lab(tmp_path).hosts(3, {"A": "k", "B": "k"}, {"A": "e1000e", "B": "e1000e"})
    facts = LabFacts(frozenset(), builds=BUILDS, nics=("e1000e", "e1000e", "veth"))
    mapped = map_profile(profile, hosts, ssh_config="c", known_hosts="k", facts=facts)
    aim = mapped.profile.knob("aim")
    assert (aim.for_os("linux"), aim.os_values["linux"], aim.device) == (
        (KnobKind.ETHTOOL_COALESCE, "rx-usecs"), {"off": "0", "on": "1"}, None)
    itr = mapped.profile.knob("itr")
    assert itr.key == "rx-usecs" and itr.os_values["linux"] == {"0": "0", "3": "3", "50": "50"}
    assert any("50 = 50 µs" in t.lab for t in mapped.translations)
    # e1000e has no rx-frames: the stand-in, as on veth
    assert mapped.profile.knob("frames").key == STANDIN_KEY


PROC_BEFORE = """\
           CPU0       CPU1
  0:         40          0   IO-APIC   2-edge      timer
 24:        100         50   PCI-MSI 49152-edge      data0-rx-0
 25:         10         10   PCI-MSI 49153-edge      data0-tx-0
 26:          2          0   PCI-MSI 49154-edge      data0
 27:        900          0   PCI-MSI 65536-edge      mgmt0
"""
PROC_AFTER = PROC_BEFORE.replace("100         50", "400        250").replace(
    "10         10", "60         10").replace("900", "5000")


def test_the_interrupt_watch_reads_each_data0_vector_per_second(tmp_path):
    """The watch's own shell and awk, on two /proc/interrupts readings."""
    before, after = tmp_path / "before", tmp_path / "after"
    before.write_text(PROC_BEFORE)
    after.write_text(PROC_AFTER)
    command = moderation.irq_command(str(before), str(after))
    assert command.replace(str(before), "/proc/interrupts").replace(
        str(after), "/proc/interrupts") == moderation.IRQ_WATCH
    out = subprocess.run(["sh", "-c", command], capture_output=True, text=True,
                         check=True).stdout
    # (400 + 250 - 150) / 0.5 s, (60 + 10 - 20) / 0.5 s, nothing; mgmt0 is not data0
    assert sorted(out.splitlines()) == ["data0 0", "data0-rx-0 1000", "data0-tx-0 100"]
    assert watch_samples("interrupt_rate", out) == [
        ("interrupt_rate:data0", "0"), ("interrupt_rate:data0-rx-0", "1000"),
        ("interrupt_rate:data0-tx-0", "100")]


def test_a_command_watch_is_one_series_unless_it_prints_named_numbers():
    assert watch_samples("w", "1234\n") == [("w", "1234")]
    assert watch_samples("w", "  45:  1234  PCI-MSI  eth0\n") == [
        ("w", "45:  1234  PCI-MSI  eth0")]
    assert watch_samples("w", "q1 7\nq0 5.5\n") == [("w:q0", "5.5"), ("w:q1", "7")]
    assert watch_samples("w", "q1 7\noops\n") == [("w", "q1 7\noops")]


def test_an_interrupt_watch_is_recognised_by_what_it_reads():
    assert moderation.is_interrupt_watch(Watch("x", Role.RECEIVER,
                                               sysctl="dev.ix.2.queue*.interrupt_rate"))
    assert moderation.is_interrupt_watch(Watch("x", Role.RECEIVER,
                                               command="grep eth0 /proc/interrupts"))
    assert not moderation.is_interrupt_watch(Watch("drops", Role.RECEIVER,
                                                   sysctl="net.core.netdev_max_backlog"))


def test_a_stand_in_names_the_nic_of_the_pairs_it_is_for(tmp_path):
    """The Linux reference's watch on a namespace pair: veth's reason, not its neighbours'."""
    mapped = _ix_on(tmp_path, ("e1000e", "e1000e", "veth"))
    why = next(t.why for t in mapped.translations if t.subject == "watch interrupts")
    assert why.endswith("veth has no interrupts: the receive packet rate is the lab's nearest "
                        "per-queue reading"), why
