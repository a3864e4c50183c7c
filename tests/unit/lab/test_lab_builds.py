"""A same-hosts procedure on the lab: its build knob's values mapped by the profile's [lab]
builds onto Debian kernels the lab's VM hosts boot (docs/profiles.md, "The seed procedures on
the lab"). The knob keeps its name and values (the report's BEFORE/AFTER stay), becomes a
kernel knob with each value's kexec image (or the lab's power-cycle), and the release checked
after the boot is the package's; a bad [lab] builds is one line naming it."""

from __future__ import annotations

import re
import tomllib
from pathlib import Path

import pytest

from abtui.core.builds import Method
from abtui.core.errors import BadInput
from abtui.core.model import KnobKind, Scope
from abtui.lab.mapping import LabBuilds, LabFacts, LabModule, LabModules, map_profile
from abtui.lab.netns import Lab
from abtui.lab.prepare import lab_kernels_for, lab_module_builds, profile_builds
from abtui.lab.profile import LabBuild
from abtui.profile import load_profile
from abtui.profile.load import lab_modules

PROFILES = Path(__file__).resolve().parents[3] / "profiles"
K47, K57 = "linux-image-6.1.0-47-amd64", "linux-image-6.1.0-57-amd64"
VM_FACTS = LabFacts(frozenset(), ("none", "wireguard", "vxlan", "gre", "ipsec"), "",
                    (f"{K47} (6.1.0-47-amd64)",), userspace_wireguard=False, netem=True)


def _with_lab(tmp_path: Path, name: str, lab: str) -> Path:
    """The shipped profile with `lab` as its [lab] section (its own [lab], if any, left out)."""
    text = (PROFILES / f"{name}.toml").read_text()
    text = text[:text.index("\n[lab]")] if "\n[lab]" in text else text
    path = tmp_path / f"{name}.toml"
    path.write_text(text + "\n[lab]\n" + lab)
    return path


def _lab_builds(*specs: str) -> dict[str, LabBuild]:
    return {s: LabBuild(s, f"/cache/{s}/vmlinuz", f"/cache/{s}.cpio") for s in specs}


def test_the_kernel_knob_boots_the_debian_builds_its_values_name(tmp_path: Path) -> None:
    path = _with_lab(tmp_path, "softirq-crypto-same-hosts",
                     f'builds = {{ before = "{K47}", after = "{K57}" }}\n')
    profile = load_profile(path)
    assert profile_builds(profile) == {"before": K47, "after": K57}
    # the one pair boots BEFORE's build at lab up (both hosts: the receiver needs ESP too)
    assert lab_kernels_for(profile) == {"A": K47}
    made = _lab_builds(K47, K57)
    builds = LabBuilds({"before": made[K47], "after": made[K57]})
    hosts = Lab(name="unit", octet=19, ifprefix="abu", state_dir=tmp_path).hosts(
        1, lab_kernels_for(profile))
    mapped = map_profile(profile, hosts, ssh_config="c", known_hosts="k", facts=VM_FACTS,
                         builds=builds)
    knob = mapped.profile.knob("kernel")
    assert (knob.kind, knob.values, knob.scope) == (KnobKind.KERNEL, ("before", "after"),
                                                    Scope.SENDER)
    after = knob.builds["after"]
    assert (after.method, after.image, after.initrd, after.release) == (
        Method.KEXEC, f"/cache/{K57}/vmlinuz", f"/cache/{K57}.cpio", "6.1.0-57-amd64")
    line = next(t.line() for t in mapped.translations if t.subject == "knob kernel")
    assert line == (f"lab: knob kernel: kernel by kexec → kexec into before = {K47}, after = "
                    f"{K57} (the Debian kernels the profile's [lab] builds names, booted on "
                    "the VM hosts)"), line


def test_a_module_build_knob_becomes_the_kernel_that_carries_it(tmp_path: Path) -> None:
    """A module knob whose [lab] builds are Debian kernels: on the lab, the module each kernel
    carries, reached by the lab's power-cycle where this machine has no kexec."""
    path = _with_lab(tmp_path, "wireguard-gro-same-hosts",
                     f'builds = {{ plain = "{K47}", gro = "{K57}" }}\n')
    profile = load_profile(path)
    made = _lab_builds(K47, K57)
    power = ("abtui", "lab", "boot", "{host}", "{value}")
    builds = LabBuilds({"plain": made[K47], "gro": made[K57]}, power)
    hosts = Lab(name="unit", octet=19, ifprefix="abu", state_dir=tmp_path).hosts(
        1, lab_kernels_for(profile))
    mapped = map_profile(profile, hosts, ssh_config="c", known_hosts="k", facts=VM_FACTS,
                         builds=builds)
    knob = mapped.profile.knob("wg")
    assert (knob.kind, knob.key, knob.values) == (KnobKind.KERNEL, "", ("plain", "gro"))
    gro = knob.builds["gro"]
    assert (gro.method, gro.command, gro.release) == (
        Method.COMMAND, ("abtui", "lab", "boot", "{host}", K57), "6.1.0-57-amd64")
    t = next(t for t in mapped.translations if t.subject == "knob wg")
    assert t.original == "module wireguard by insmod"
    assert t.why.endswith("each carries its own wireguard module"), t.why


def test_the_shipped_wireguard_profile_builds_its_modules_for_the_lab_kernel(
        tmp_path: Path) -> None:
    """wireguard-gro-same-hosts's [lab] modules: the plain-call patch (found beside the
    profile) for `plain`, none for `gro`, built for the [lab] kernel the one pair boots; on
    the lab the knob stays a module knob, each value's lab-built .ko loaded by insmod and
    proved by its srcversion."""
    profile = load_profile(PROFILES / "wireguard-gro-same-hosts.toml")
    raw = tomllib.loads(profile.source_text or "")
    table = lab_modules(raw, list(profile.knobs), PROFILES)
    assert table == {"plain": (PROFILES / "patches" / "wireguard-plain-call" /
                               "0001-wireguard-receive-plain-call.patch",), "gro": ()}
    assert lab_kernels_for(profile) == {"A": K57}
    modules = LabModules("6.1.0-57-amd64", "linux-source-6.1_6.1.192-3", {
        "plain": LabModule("/cache/p/wireguard.ko", "DB6416EBEE70509A3FCF608",
                           ("0001-wireguard-receive-plain-call.patch",)),
        "gro": LabModule("/cache/g/wireguard.ko", "A54194B1D21918923AF110D")})
    hosts = Lab(name="unit", octet=19, ifprefix="abu", state_dir=tmp_path).hosts(
        1, lab_kernels_for(profile))
    mapped = map_profile(profile, hosts, ssh_config="c", known_hosts="k", facts=VM_FACTS,
                         modules=modules)
    knob = mapped.profile.knob("wg")
    assert (knob.kind, knob.key, knob.values) == (KnobKind.MODULE, "wireguard",
                                                  ("plain", "gro"))
    assert [(b.method, b.file, b.srcversion) for b in knob.builds.values()] == [
        (Method.INSMOD, "/cache/p/wireguard.ko", "DB6416EBEE70509A3FCF608"),
        (Method.INSMOD, "/cache/g/wireguard.ko", "A54194B1D21918923AF110D")]
    line = next(t.line() for t in mapped.translations if t.subject == "knob wg")
    assert line == (
        "lab: knob wg: module wireguard by insmod → insmod of plain = wireguard.ko srcversion "
        "DB6416EBEE70509A3FCF608 (+ 0001-wireguard-receive-plain-call.patch), gro = "
        "wireguard.ko srcversion A54194B1D21918923AF110D (no patch) (built by the lab out of "
        "tree from linux-source-6.1_6.1.192-3 against Debian's "
        "linux-headers-6.1.0-57-amd64, the VM guests' kernel)"), line


@pytest.mark.parametrize(("lab", "says"), [
    ('kernel = "linux-image-6.1.0-57-amd64"\n[lab.modules]\nplain = []\n',
     r"lab\.modules: has no build for \"gro\"; expected one for every value of knob wg"),
    ('[lab.modules]\nplain = []\ngro = []\n',
     r"lab\.kernel: missing; \[lab\] modules are built for the VM guests' kernel"),
    ('kernel = "linux-image-6.1.0-57-amd64"\n[lab.modules]\nplain = "x"\ngro = []\n',
     r"lab\.modules\.plain: got a string; expected a list of patch files"),
])
def test_a_bad_lab_modules_is_one_line_naming_it(tmp_path: Path, lab: str, says: str) -> None:
    path = _with_lab(tmp_path, "wireguard-gro-same-hosts", lab)
    with pytest.raises(BadInput, match=rf"wireguard-gro-same-hosts\.toml:\d+: {says}"):
        load_profile(path)


def test_without_lab_builds_a_build_knob_is_not_booted(tmp_path: Path) -> None:
    profile = load_profile(PROFILES / "softirq-crypto-same-hosts.toml")
    assert profile_builds(profile) == {}
    assert lab_kernels_for(profile) == {}


@pytest.mark.parametrize(("lab", "says"), [
    (f'builds = {{ before = "{K47}" }}\n',
     r"lab\.builds: has no build for \"after\"; expected one for every value of knob kernel"),
    (f'builds = {{ before = "{K47}", later = "{K57}" }}\n',
     r"lab\.builds: names \"before\", \"later\"; expected the values of one kernel or "
     r"module knob \(kernel\)"),
    ('builds = { before = "/boot/vmlinuz-6.1", after = "linux-image-6.1.0-57-amd64" }\n',
     r"lab\.builds\.before: \"/boot/vmlinuz-6\.1\" is not a Debian kernel package; expected "
     r"linux-image-RELEASE"),
])
def test_a_bad_lab_builds_is_one_line_naming_it(tmp_path: Path, lab: str, says: str) -> None:
    path = _with_lab(tmp_path, "softirq-crypto-same-hosts", lab)
    with pytest.raises(BadInput, match=rf"softirq-crypto-same-hosts\.toml:\d+: {says}"):
        load_profile(path)


def test_ix_s_enable_aim_with_no_linux_counterpart_is_e1000e_s_throttling(tmp_path: Path) -> None:
    """The same-hosts ix-enable-aim is FreeBSD only (no [knobs.os.linux]): on an e1000e VM
    pair its enable_aim still becomes the NIC's interrupt throttling (0 off, 1 dynamic,
    2 conservative), never the receive-buffer stand-in."""
    import dataclasses

    path = _with_lab(tmp_path, "ix-enable-aim-same-hosts",
                     f'builds = {{ stock = "{K47}", D30155 = "{K57}" }}\n')
    profile = load_profile(path)
    made = _lab_builds(K47, K57)
    hosts = Lab(name="unit", octet=19, ifprefix="abu", state_dir=tmp_path).hosts(
        1, lab_kernels_for(profile))
    mapped = map_profile(profile, hosts, ssh_config="c", known_hosts="k",
                         facts=dataclasses.replace(VM_FACTS, nics=("e1000e",)),
                         builds=LabBuilds({"stock": made[K47], "D30155": made[K57]}))
    aim = mapped.profile.knob("enable_aim")
    assert aim.for_os("linux") == (KnobKind.ETHTOOL_COALESCE, "rx-usecs")
    assert aim.os_values["linux"] == {"0": "0", "1": "1", "2": "3"}
    line = next(t.line() for t in mapped.translations if t.subject == "knob enable_aim")
    assert "ethtool -C data0 rx-usecs on ix: 0 = 0 (off), 1 = 1 (dynamic)" in line, line


def test_a_missing_patch_is_one_line_when_the_lab_builds(tmp_path: Path) -> None:
    """The profile loads wherever it is saved; the lab, asked to build, names the patch it
    cannot find (before fetching or compiling anything)."""
    path = _with_lab(tmp_path, "wireguard-gro-same-hosts",
                     'kernel = "linux-image-6.1.0-57-amd64"\n[lab.modules]\n'
                     'plain = ["nope.patch"]\ngro = []\n')
    profile = load_profile(path)
    said: list[str] = []
    with pytest.raises(BadInput, match=rf"\[lab\] modules plain: no such patch file "
                       rf"{re.escape(str(tmp_path / 'nope.patch'))} \(paths are relative"):
        lab_module_builds(profile, said.append)
    assert said == []
