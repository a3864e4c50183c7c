"""VM hosts without booting one: kernel SPECs resolved (and refused with one clear line),
`--kernel` parsed, the guest's script and virtme-ng command, the accelerator verdict, the lab
profile and the --lab mapping of a VM lab."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from abtui import cli
from abtui.commands.lab import parse_kernels
from abtui.core.errors import BadInput
from abtui.core.model import KnobKind
from abtui.lab import kernels
from abtui.lab.mapping import LabFacts, map_profile
from abtui.lab.netns import Lab
from abtui.lab.prepare import lab_kernels_for
from abtui.lab.profile import render_lab_profile
from abtui.lab.vm import guest as lab_vm
from abtui.profile import load_profile

PROFILES = Path(__file__).resolve().parents[3] / "profiles"
RELEASE = "6.1.0-99-amd64"


def _unpacked(root: Path, depmod: bool = True) -> Path:
    """The layout of an unpacked kernel package: boot/vmlinuz-R and lib/modules/R."""
    (root / "boot").mkdir(parents=True)
    image = root / "boot" / f"vmlinuz-{RELEASE}"
    image.write_bytes(b"\0" * 64)
    modules = root / "lib" / "modules" / RELEASE
    modules.mkdir(parents=True)
    if depmod:
        (modules / "modules.dep").write_text("")
    return image


def test_an_image_with_its_modules_beside_it(tmp_path):
    image = _unpacked(tmp_path)
    k = kernels.resolve(str(image))
    assert (k.kind, k.release, k.image) == ("image", RELEASE, str(image))
    assert k.modules == str(tmp_path / "lib" / "modules" / RELEASE)


def test_an_image_without_modules_or_their_index_is_refused(tmp_path):
    image = _unpacked(tmp_path / "a", depmod=False)
    with pytest.raises(BadInput, match=r"has no modules.dep: index it with `depmod -b "):
        kernels.resolve(str(image))
    lone = tmp_path / "vmlinuz-5.99.0-nowhere"
    lone.write_bytes(b"\0")
    with pytest.raises(BadInput, match=r"no modules for 5\.99\.0-nowhere"):
        kernels.resolve(str(lone))
    with pytest.raises(BadInput, match="no such file or folder, and not a Debian kernel"):
        kernels.resolve(str(tmp_path / "missing"))


def test_a_build_tree_needs_its_image_and_config(tmp_path):
    with pytest.raises(BadInput, match="must be a built kernel tree"):
        kernels.resolve(str(tmp_path))
    (tmp_path / "arch" / "x86" / "boot").mkdir(parents=True)
    (tmp_path / "arch" / "x86" / "boot" / "bzImage").write_bytes(b"\0")
    (tmp_path / ".config").write_text("CONFIG_X=y\n")
    (tmp_path / "include" / "config").mkdir(parents=True)
    (tmp_path / "include" / "config" / "kernel.release").write_text("6.13.0-rc1+\n")
    k = kernels.resolve(str(tmp_path))
    assert (k.kind, k.release, k.image) == ("tree", "6.13.0-rc1+", str(tmp_path))


def test_a_package_is_taken_from_the_cache(tmp_path, monkeypatch):
    monkeypatch.setenv("ABTUI_KERNEL_CACHE", str(tmp_path))
    name = "linux-image-6.1.0-99-amd64"
    with pytest.raises(BadInput, match="not fetched yet"):
        kernels.resolve(name, fetch=False)
    _unpacked(tmp_path / name / "root")
    (tmp_path / name / "ready").write_text(name)
    k = kernels.resolve(name)
    assert (k.kind, k.spec, k.release) == ("package", name, RELEASE)


def test_a_failed_fetch_says_why_and_leaves_nothing(tmp_path, monkeypatch):
    monkeypatch.setenv("ABTUI_KERNEL_CACHE", str(tmp_path / "cache"))
    bin_ = tmp_path / "bin"
    bin_.mkdir()
    for name, body in (("apt-get", "echo 'E: Unable to locate package x' >&2; exit 100"),
                       ("dpkg-deb", "exit 0"), ("depmod", "exit 0")):
        (bin_ / name).write_text(f"#!/bin/sh\n{body}\n")
        (bin_ / name).chmod(0o755)
    monkeypatch.setenv("PATH", f"{bin_}:/usr/bin:/bin")
    with pytest.raises(BadInput, match="apt-get download failed: E: Unable to locate package"):
        kernels.resolve("linux-image-6.1.0-98-amd64")
    assert list((tmp_path / "cache").iterdir()) == []


def test_kernel_arguments_per_pair_and_for_every_pair():
    assert parse_kernels(["X"], 2) == {"A": "X", "B": "X"}
    assert parse_kernels(["A=x", "b=y"], 2) == {"A": "x", "B": "y"}
    assert parse_kernels(["X", "B=y"], 2) == {"A": "X", "B": "y"}
    assert parse_kernels(["/k/vmlinuz-6.1=weird"], 1) == {"A": "/k/vmlinuz-6.1=weird"}
    with pytest.raises(BadInput, match="--kernel C=z: the lab has pairs A, B"):
        parse_kernels(["C=z"], 2)
    with pytest.raises(BadInput, match="pair A is given twice"):
        parse_kernels(["A=x", "A=y"], 2)


def test_a_bad_kernel_argument_is_one_line_and_exit_2(capsys):
    assert cli.main(["lab", "up", "--pairs", "1", "--kernel", "B=x"]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "--kernel B=x: the lab has pairs A" in err


def _guest(tmp_path) -> lab_vm.Guest:
    lab = Lab(name="unit", octet=19, ifprefix="abu", state_dir=tmp_path, mgmt=230)
    h = lab.hosts(1, {"A": "k"})[1]
    k = kernels.Kernel("k", "/k/vmlinuz-6.1", "6.1", "/k/lib/modules/6.1", "image")
    return lab.vms.guest(h, k)


def test_the_guest_script_names_nics_by_mac_and_runs_sshd(tmp_path):
    g = _guest(tmp_path)
    assert (g.mgmt_mac, g.data_mac) == ("52:54:00:e6:01:20", "52:54:00:e6:01:21")
    assert (g.mgmt_tap, g.data_tap) == ("abu-ar", "abu-ard")
    script = lab_vm.guest_script(g)
    assert "modprobe virtio_net" in script
    assert f'{g.mgmt_mac}) ip link set "${{i##*/}}" name mgmt0' in script
    assert f"ip addr add {g.data_address}/24 dev data0" in script
    assert "mount --bind /run/abtui-shadow /etc/shadow" in script
    assert script.rstrip().endswith(f"-f {tmp_path / 'sshd_config-unit-a-rcv'}")


def test_the_virtme_ng_command(tmp_path, monkeypatch):
    monkeypatch.setattr(lab_vm, "vng_path", lambda: "/v/vng")
    g = _guest(tmp_path)
    tcg = lab_vm.vng_command(g, "tcg")
    assert tcg[:4] == ["/v/vng", "--run", "/k/vmlinuz-6.1", "--disable-kvm"]
    assert "--disable-kvm" not in lab_vm.vng_command(g, "kvm")
    opts = tcg[-1]
    assert opts.startswith(f"--qemu-opts=-pidfile {g.pidfile} ")
    assert f"ifname={g.data_tap},script=no" in opts and f"mac={g.mgmt_mac}" in opts


def test_kvm_only_where_a_guest_boots_under_it(tmp_path, monkeypatch):
    k = kernels.Kernel("k", "/k/vmlinuz-6.1", "6.1", "", "image")
    monkeypatch.setenv("ABTUI_KERNEL_CACHE", str(tmp_path / "kernels"))
    monkeypatch.setenv("ABTUI_VM_ACCEL", "tcg")
    assert lab_vm.accelerator(k) == ("tcg", "ABTUI_VM_ACCEL=tcg")
    monkeypatch.delenv("ABTUI_VM_ACCEL")
    monkeypatch.setattr(lab_vm.os, "access", lambda *a: True)
    probes = []
    monkeypatch.setattr(lab_vm, "_probe_kvm", lambda kernel: probes.append(kernel) or (
        "tcg", "a KVM guest did not boot within 20 s"))
    assert lab_vm.accelerator(k)[0] == "tcg"
    assert lab_vm.accelerator(k)[0] == "tcg"
    assert len(probes) == 1  # the verdict is kept
    monkeypatch.setattr(lab_vm.os, "access", lambda *a: False)
    assert lab_vm.accelerator(k) == ("tcg", "no usable /dev/kvm")


def test_vm_lab_profile_offers_every_tunnel_type(tmp_path):
    hosts = Lab(name="unit", octet=19, ifprefix="abu", state_dir=tmp_path).hosts(1, {"A": "k"})
    assert all(h.vm and h.kernel == "k" for h in hosts)
    text = render_lab_profile(lab_name="unit", ssh_config="c", known_hosts="k", hosts=hosts,
                              pairs=1, congestion=["reno", "cubic"], all_vm=True)
    path = tmp_path / "lab.toml"
    path.write_text(text)
    profile = load_profile(path)
    assert profile.knob("tunnel").values == ("none", "wireguard", "vxlan", "ipsec", "gre")
    # both pairs start from the same socket buffers (a guest's defaults follow its memory)
    assert profile.knob("tcp_wmem").initial == profile.knob("tcp_wmem").values[0]
    assert profile.knob("tcp_rmem").initial == profile.knob("tcp_rmem").values[0]


def test_a_profile_names_its_builds_and_the_vm_lab_runs_them(tmp_path):
    text = (PROFILES / "softirq-crypto.toml").read_text() + (
        '\n[lab]\nkernel = "linux-image-a"\nkernels = { AFTER = "linux-image-b" }\n')
    path = tmp_path / "p.toml"
    path.write_text(text)
    profile = load_profile(path)
    assert lab_kernels_for(profile) == {"A": "linux-image-a", "B": "linux-image-b"}
    hosts = Lab(name="unit", octet=19, ifprefix="abu", state_dir=tmp_path).hosts(
        2, lab_kernels_for(profile))
    facts = LabFacts(frozenset(), ("none", "wireguard", "vxlan", "gre", "ipsec"), "",
                     ("linux-image-a (6.1.0-47-amd64)", "linux-image-b (6.1.0-57-amd64)"),
                     userspace_wireguard=False, netem=True)
    mapped = map_profile(profile, hosts, ssh_config="c", known_hosts="k", facts=facts)
    assert mapped.profile.knob("tunnel").values == ("ipsec", "wireguard")
    lines = [t.line() for t in mapped.translations]
    assert not any("knob tunnel" in ln for ln in lines), lines
    assert ("lab: kernels: BEFORE, AFTER → BEFORE on VM hosts booting linux-image-a "
            "(6.1.0-47-amd64), AFTER on VM hosts booting linux-image-b (6.1.0-57-amd64) (the "
            "builds the profile's [lab] names (or the lab that is up))") in lines
    path.write_text(text.replace("AFTER = ", "LATER = "))
    with pytest.raises(BadInput, match=r"p.toml:\d+: lab.kernels.LATER: no pair is labelled"):
        load_profile(path)


def test_netem_on_a_lab_without_it_is_translated_and_says_why(tmp_path):
    import dataclasses

    from abtui.core.model import Knob, Scope

    profile = load_profile(PROFILES / "softirq-crypto.toml")
    profile = dataclasses.replace(profile, knobs=[
        *profile.knobs, Knob("wan", KnobKind.NETEM, ("none", "delay 20ms"), scope=Scope.SENDER)])
    hosts = Lab(name="unit", octet=19, ifprefix="abu", state_dir=tmp_path).hosts(2)
    ns = map_profile(profile, hosts, ssh_config="c", known_hosts="k", facts=LabFacts())
    assert ns.profile.knob("wan").kind is KnobKind.SYSCTL
    assert any("this machine's kernel has no netem" in t.why for t in ns.translations)
    vm = map_profile(profile, hosts, ssh_config="c", known_hosts="k",
                     facts=LabFacts(netem=True, builds=("a", "b")))
    assert vm.profile.knob("wan").kind is KnobKind.NETEM


class _FakeLab:
    """What ensure_lab asks of a lab, and what it did."""

    name = "unit"

    def __init__(self, pairs: int, kernels: dict[str, str]) -> None:
        self.pairs, self.kernels, self.ups = pairs, kernels, []

    def pair_count(self) -> int:
        return self.pairs

    def kernel_specs(self) -> dict[str, str]:
        return dict(self.kernels)

    def nic_models(self) -> dict[str, str]:
        return {k: "virtio" for k in self.kernels}

    def status(self) -> dict:
        return {"ok": True}

    def clock(self) -> str:
        return ""

    def up(self, n, kernels, nics=None, clock=""):
        self.ups.append((n, kernels))
        return []

    def hosts(self, n):
        return [n]


def test_run_lab_keeps_a_vm_lab_with_the_builds_and_rebuilds_one_without():
    from abtui.lab.prepare import ensure_lab

    said = []
    same = _FakeLab(2, {"A": "x", "B": "y"})
    assert ensure_lab(same, 2, said.append, kernels={"A": "x", "B": "y"}) == [2]
    assert ensure_lab(same, 2, said.append) == [2]  # no [lab]: the lab that is up
    assert same.ups == [] and said == []
    other = _FakeLab(2, {"A": "x", "B": "old"})
    ensure_lab(other, 2, said.append, kernels={"A": "x", "B": "y"})
    assert other.ups == [(2, {"A": "x", "B": "y"})]
    assert said == ["lab: bringing up lab 'unit' with 2 pairs, pair A on VM hosts booting x, "
                    "pair B on VM hosts booting y (take it down with `abtui lab down`)"]
    grown = _FakeLab(1, {"A": "x"})
    ensure_lab(grown, 2, said.append)  # more pairs: its VM pair stays a VM pair
    assert grown.ups == [(2, {"A": "x"})]


def test_a_keyless_setting_is_named_by_its_kind():
    from abtui.remote.os.dialect import Setting

    assert Setting(KnobKind.NETEM, "", "data0").label() == "netem on data0"
    assert Setting(KnobKind.MTU, "", "eth0").label() == "mtu on eth0"


def test_quick_runs_on_vm_hosts_have_whole_second_intervals():
    from abtui.lab.mapping import quick

    profile = load_profile(PROFILES / "softirq-crypto.toml")
    ns, _ = quick(profile)
    vm, note = quick(profile, vm=True)
    assert (ns.test.duration, ns.test.interval) == (2.0, 0.5)
    assert (vm.test.duration, vm.test.interval) == (4.0, 2.0)
    assert note is not None and "iperf3 -t 4 -i 2" in note.lab


def test_a_vm_host_s_ssh_config_gives_its_links_more_time_to_connect(tmp_path):
    from abtui.remote.connection import DEFAULT_CONNECT_TIMEOUT
    from abtui.remote.link import HostLink

    lab = Lab(name="unit", octet=19, ifprefix="abu", state_dir=tmp_path)
    hosts = lab.hosts(2, {"B": "k"})
    for h in hosts:
        (tmp_path / f"host_{h.alias}.pub").write_text("ssh-ed25519 AAAAC3Nza x\n")
    lab.ssh.write_client_files(hosts)
    config = str(lab.ssh_config)
    assert HostLink("unit-a-snd", ssh_config=config).connect_timeout == DEFAULT_CONNECT_TIMEOUT
    assert HostLink("unit-b-rcv", ssh_config=config).connect_timeout == 60
    assert HostLink("unit-b-rcv", ssh_config=config, connect_timeout=3).connect_timeout == 3
    assert HostLink("x", ssh_config=str(tmp_path / "missing")).connect_timeout == \
        DEFAULT_CONNECT_TIMEOUT


def _tree(root: Path, modules: bool) -> Path:
    """A built tree's files (empty: nothing here boots), with CONFIG_MODULES=y."""
    (root / "arch" / "x86" / "boot").mkdir(parents=True)
    (root / "arch" / "x86" / "boot" / "bzImage").write_bytes(b"\0")
    (root / ".config").write_text("CONFIG_MODULES=y\nCONFIG_WIREGUARD=m\n")
    (root / "include" / "config").mkdir(parents=True)
    (root / "include" / "config" / "kernel.release").write_text("6.13.0\n")
    if modules:
        for name in ("modules.order", "modules.builtin", "modules.builtin.modinfo",
                     "System.map"):
            (root / name).write_text("")
    return root


def test_a_tree_with_modules_needs_what_make_modules_leaves(tmp_path):
    tree = _tree(tmp_path, modules=False)
    with pytest.raises(BadInput, match=r"CONFIG_MODULES=y but modules.order, modules.builtin, "
                       r"modules.builtin.modinfo, System.map are missing \(run `make modules`"):
        kernels.resolve(str(tree))


def test_a_trees_modules_are_indexed_once_where_virtme_ng_boots_them(tmp_path):
    tree = _tree(tmp_path, modules=True)
    k = kernels.resolve(str(tree))
    index = tree / ".virtme_mods" / "lib" / "modules" / "0.0.0"
    assert (k.kind, k.release, k.modules) == ("tree", "6.13.0", str(index))
    assert (index / "modules.dep").is_file()  # virtme-prep-kdir-mods ran, depmod indexed it
    made = (index / "modules.dep").stat().st_mtime_ns
    kernels.resolve(str(tree))  # up to date: not prepared again (two guests boot one tree)
    assert (index / "modules.dep").stat().st_mtime_ns == made


def test_a_trees_modules_are_linked_where_virtme_ng_looks(tmp_path):
    """As virtme-prep-kdir-mods lays them out: each module of modules.order (a 6.1 build lists
    `.ko`, a newer one `.o`) linked under .virtme_mods/lib/modules/0.0.0/kernel, indexed."""
    tree = _tree(tmp_path, modules=True)
    for name in ("net/wireguard/wireguard.ko", "drivers/net/virtio_net.ko"):
        (tree / name).parent.mkdir(parents=True, exist_ok=True)
        (tree / name).write_bytes(b"not an ELF file: depmod warns and lists it")
    (tree / "modules.order").write_text("net/wireguard/wireguard.ko\ndrivers/net/virtio_net.o\n")
    moddir = Path(kernels.resolve(str(tree)).modules)
    for name in ("net/wireguard/wireguard.ko", "drivers/net/virtio_net.ko"):
        link = moddir / "kernel" / name
        assert link.is_symlink() and not Path(os.readlink(link)).is_absolute(), link
        assert link.resolve() == (tree / name).resolve()
    assert (moddir / "build").resolve() == tree.resolve()
    dep = (moddir / "modules.dep").read_text()
    assert "kernel/net/wireguard/wireguard.ko:" in dep, dep
