"""The lab's ARM host (abtui.lab.vm.armhost) without booting it: a build named by its output
folder (image, release, version), bad `--arm-build` items said in one line, pair A's sender
made the ARM host by the layout, the guest's console read for its release and version, and
the lab profile it gets: the seed's procedure, its kernel knob's builds told apart by
`uname -v`, loadable as a profile."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from abtui.core.errors import BadInput
from abtui.lab.layout import LabLayout
from abtui.lab.vm import armguest, armhost
from abtui.profile.load import parse_profile


def _tree(root: Path, version: str, release: str = "6.1.192") -> Path:
    out = root / "out"
    (out / "arch" / "arm" / "boot").mkdir(parents=True)
    (out / "arch" / "arm" / "boot" / "zImage").write_bytes(b"\0" * 64)
    (out / "include" / "config").mkdir(parents=True)
    (out / "include" / "config" / "kernel.release").write_text(release + "\n")
    (out / "include" / "generated").mkdir(parents=True)
    (out / "include" / "generated" / "utsversion.h").write_text(
        f'#define UTS_VERSION "{version}"\n')
    return root


def test_a_build_folder_gives_its_image_release_and_version(tmp_path: Path) -> None:
    root = _tree(tmp_path / "b", "#1 Mon Dec  7 02:51:59 UTC 2026")
    for spec in (root, root / "out"):  # the build's folder or its out folder
        b = armhost.arm_build("before", str(spec))
        assert b.image.endswith("out/arch/arm/boot/zImage")
        assert (b.release, b.version) == ("6.1.192", "#1 Mon Dec  7 02:51:59 UTC 2026")


def test_bad_builds_are_one_line(tmp_path: Path) -> None:
    a = _tree(tmp_path / "a", "#1 A")
    same = _tree(tmp_path / "s", "#1 A")
    for items, says in ((["before"], "write NAME=FOLDER"),
                        ([f"x={tmp_path}"], "not a built ARM kernel tree"),
                        ([f"a b={a}"], "letters, digits"),
                        ([f"a={a}", f"a={a}"], "named twice"),
                        ([f"a={a}", f"b={same}"], "same version")):
        with pytest.raises(BadInput, match=says) as err:
            armhost.parse_arm_builds(items)
        assert "\n" not in str(err.value)


def test_pair_a_sender_is_the_arm_host_of_a_lab_that_has_one(tmp_path: Path) -> None:
    layout = LabLayout(name="t", octet=19, ifprefix="tq", state_dir=tmp_path, mgmt=230)
    plain = layout.hosts(1, {"A": "linux-image-6.1.0-57-amd64"}, arm="")
    assert [h.arch for h in plain] == ["", ""]
    hosts = layout.hosts(1, {"A": "linux-image-6.1.0-57-amd64"}, arm="before")
    snd, rcv = hosts
    assert (snd.arch, snd.kernel, snd.vm) == ("arm", "before", True)
    assert (rcv.arch, rcv.kernel) == ("", "linux-image-6.1.0-57-amd64")
    # same names and addresses as an x86 sender's: known_hosts and ssh_config are alike
    assert (snd.alias, snd.mgmt_address, snd.data_address) == \
        (plain[0].alias, plain[0].mgmt_address, plain[0].data_address)
    # the lab that is up: read from its record
    (tmp_path / "lab.json").write_text(json.dumps({
        "pairs": 1, "kernels": {"A": {"spec": "linux-image-6.1.0-57-amd64"}},
        "arm": {"pair": "A", "builds": {"before": {}, "after": {}}}}))
    assert layout.hosts(1)[0].arch == "arm" and layout.arm_first() == "before"


def test_the_console_says_release_and_version(tmp_path: Path) -> None:
    log = tmp_path / "arm-h.log"
    log.write_text("Booting Linux\r\n")
    assert armguest.ready_version(tmp_path, "h") is None
    log.write_text(f"x\r\n{armguest.VERSION}#1 Mon Dec  7 03:19:40 UTC 2026\r\n"
                   f"{armguest.READY}6.1.192 h\r\n")
    assert armguest.ready_version(tmp_path, "h") == ("6.1.192",
                                                      "#1 Mon Dec  7 03:19:40 UTC 2026")


def test_the_guest_script_says_its_version_and_keeps_run_to_root(tmp_path: Path) -> None:
    g = armguest.ArmGuest(alias="h", image=tmp_path / "z", mgmt_tap="t", mgmt_mac="m",
                          mgmt_address="198.19.1.1/24", data_tap="d", data_mac="n",
                          data_address="198.19.2.1/24", host_key=tmp_path / "k",
                          authorized_keys="", state_dir=tmp_path)
    script = armguest.guest_script(g)
    assert "chmod 0755 /run" in script  # abtui takes no lease in a world-writable folder
    assert script.index(armguest.VERSION) < script.index(armguest.READY)


def test_the_lab_profile_is_the_seed_procedure(tmp_path: Path) -> None:
    layout = LabLayout(name="t", octet=19, ifprefix="tq", state_dir=tmp_path, mgmt=230)
    snd, rcv = layout.hosts(1, {"A": "linux-image-6.1.0-57-amd64"}, arm="before")
    builds = [armhost.ArmBuild("before", "/z1", "6.1.192", "#1 Mon Dec  7 02:51:59 UTC 2026"),
              armhost.ArmBuild("after", "/z2", "6.1.192", "#1 Mon Dec  7 03:19:40 UTC 2026")]
    text = armhost.lab_profile(lab_name="t", ssh_config=str(tmp_path / "ssh_config"),
                               known_hosts=str(tmp_path / "known_hosts"), sender=snd,
                               receiver=rcv, builds=builds,
                               power=["abtui", "lab", "boot", "{host}", "{value}"],
                               timeout=900)
    profile = parse_profile(text)
    knobs = {k.name: k for k in profile.knobs}
    kernel = knobs["kernel"]
    assert list(kernel.values) == ["before", "after"]
    assert [kernel.builds[v].version for v in ("before", "after")] == [b.version for b in builds]
    assert kernel.builds["after"].command == ("abtui", "lab", "boot", "{host}", "{value}")
    assert list(knobs["tunnel"].values) == ["ipsec", "none"]
    assert profile.test.duration == 10  # iperf3's default options
    pair = profile.pairs[0]
    assert (pair.sender, pair.receiver, pair.target) == (snd.alias, rcv.alias, "198.19.1.2")


def test_an_arm_host_without_an_x86_peer_is_refused_before_anything_is_made(
        tmp_path: Path) -> None:
    from abtui.lab.netns import Lab

    lab = Lab(name="t", octet=19, ifprefix="tq", state_dir=tmp_path / "t", mgmt=230)
    build = armhost.ArmBuild("before", "/z1", "6.1.192", "#1 A")
    with pytest.raises(BadInput, match="give pair A a --kernel") as err:
        lab.up(pairs=1, kernels={}, arm={"before": build})
    assert "\n" not in str(err.value) and not (tmp_path / "t").exists()
