"""A lab VM host switched to another build, without booting one: the kexec command the guest
runs, the guest script's modules link (run by a real shell on folders laid out as the kernel
cache), the lab profile's kernel knob (loaded as a profile), which build a host runs (the
guest's own word over the record), and `abtui lab boot`'s bad input."""

from __future__ import annotations

import json
import shlex
import subprocess
from pathlib import Path

import pytest

from abtui import cli
from abtui.core.errors import BadInput, LabError
from abtui.core.model import KnobKind
from abtui.lab.kernels import Kernel
from abtui.lab.netns import Lab
from abtui.lab.profile import LabBuild, kernel_knob, render_lab_profile
from abtui.lab.vm import guest as lab_vm
from abtui.lab.vm.boot import booted_kernel, kexec_command
from abtui.profile import load_profile

K57 = Kernel("linux-image-6.1.0-57-amd64", "/c/linux-image-6.1.0-57-amd64/root/boot/vmlinuz-x",
             "6.1.0-57-amd64", "/c/linux-image-6.1.0-57-amd64/root/lib/modules/6.1.0-57-amd64",
             "package")


def test_the_kexec_command_points_the_modules_link_at_the_build(tmp_path):
    """The guest's own command line, its virtme_link_mods= (wherever it stands) replaced by
    the build's: run by a shell on a fake /proc/cmdline."""
    cmd = kexec_command(K57, Path("/c/initramfs/x y.cpio"))
    assert cmd.startswith("kexec -l /c/linux-image-6.1.0-57-amd64/root/boot/vmlinuz-x "
                          "--initrd='/c/initramfs/x y.cpio' --command-line=")
    assert "kexec -e" in cmd.split("&&", 1)[1]
    # the command line as the guest computes it: the load replaced by a print
    printed = cmd.split(" && ")[0].replace("kexec -l", "printf %s\\\\n", 1)
    for before in ("virtme_link_mods=/c/47 virtme.exec=`c2g=` init=/x",
                   "quiet virtme_link_mods=/c/47 init=/x"):
        fake = tmp_path / "cmdline"
        fake.write_text(before + "\n")
        out = subprocess.run(["sh", "-c", printed.replace("/proc/cmdline", str(fake))],
                             capture_output=True, text=True, check=True).stdout.splitlines()
        line = out[-1].removeprefix("--command-line=")
        assert line.split().count(f"virtme_link_mods={K57.modules}") == 1, line
        assert "/c/47" not in line and "init=/x" in line


def test_the_guest_links_the_running_builds_modules_from_the_cache(tmp_path, monkeypatch):
    """After a kexec that kept the command line, /lib/modules/RELEASE points at the build the
    guest first booted: the script's lines point it at the running build's, found in the
    kernel cache; a link that is right is left alone."""
    cache = tmp_path / "cache"
    for release in ("6.1.0-47-amd64", "6.1.0-57-amd64"):
        mods = cache / f"linux-image-{release}" / "root" / "lib" / "modules" / release
        mods.mkdir(parents=True)
        (mods / "modules.dep").write_text("")
    monkeypatch.setenv("ABTUI_KERNEL_CACHE", str(cache))
    libmods = tmp_path / "lib-modules"
    libmods.mkdir()
    stale = libmods / "6.1.0-57-amd64"
    stale.symlink_to(cache / "linux-image-6.1.0-47-amd64/root/lib/modules/6.1.0-47-amd64")
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    for name, text in (("uname", "echo 6.1.0-57-amd64"),
                       ("modinfo", f'cat {shlex.quote(str(tmp_path / "vermagic"))}')):
        (bin_dir / name).write_text(f"#!/bin/sh\n{text}\n")
        (bin_dir / name).chmod(0o755)
    script = "\n".join(lab_vm.modules_link()).replace('"/lib/modules/$r"', f'"{libmods}/$r"')
    env = {"PATH": f"{bin_dir}:/usr/bin:/bin"}
    (tmp_path / "vermagic").write_text("6.1.0-47-amd64 SMP mod_unload\n")
    subprocess.run(["sh", "-c", script], env=env, check=True)
    assert stale.resolve() == (cache / "linux-image-6.1.0-57-amd64/root/lib/modules/"
                               "6.1.0-57-amd64").resolve()
    stale.unlink()
    stale.symlink_to(tmp_path)  # right, by the modules' own word: kept
    (tmp_path / "vermagic").write_text("6.1.0-57-amd64 SMP mod_unload\n")
    subprocess.run(["sh", "-c", script], env=env, check=True)
    assert stale.resolve() == tmp_path.resolve()


def test_the_lab_profile_offers_its_builds_as_a_kernel_knob(tmp_path):
    hosts = Lab(name="unit", octet=19, ifprefix="abu", state_dir=tmp_path).hosts(
        2, {"A": "linux-image-a", "B": "linux-image-b"})
    builds = [LabBuild(f"linux-image-6.1.0-{n}-amd64", f"/k/{n}/vmlinuz", f"/k/{n}.cpio")
              for n in (47, 57)]
    assert kernel_knob(builds[:1], ["A"]) == ""  # one build: nothing to switch to
    text = render_lab_profile(lab_name="unit", ssh_config="c", known_hosts="k", hosts=hosts,
                              pairs=2, congestion=["reno"], all_vm=True,
                              kernel=kernel_knob(builds, ["A", "B"]))
    path = tmp_path / "lab.toml"
    path.write_text(text)
    knob = load_profile(path).knob("kernel")
    assert knob.kind is KnobKind.KERNEL
    assert knob.values == ("linux-image-6.1.0-47-amd64", "linux-image-6.1.0-57-amd64")
    assert knob.pairs == ("A", "B")
    build = knob.builds["linux-image-6.1.0-57-amd64"]
    assert (str(build.method), build.image, build.initrd, build.release) == (
        "kexec", "/k/57/vmlinuz", "/k/57.cpio", "6.1.0-57-amd64")
    # no kexec on this machine (nor in its guests): the lab's power-cycle, as a command
    power = ["/venv/python", "-m", "abtui", "lab", "boot", "{host}", "{value}"]
    path.write_text(text.replace(kernel_knob(builds, ["A", "B"]),
                                 kernel_knob(builds, ["A", "B"], power=power)))
    build = load_profile(path).knob("kernel").builds["linux-image-6.1.0-47-amd64"]
    assert (str(build.method), build.command, build.release) == (
        "command", tuple(power), "6.1.0-47-amd64")


def _record(lab: Lab, booted: dict[str, object] | None = None) -> None:
    lab.state_dir.mkdir(parents=True, exist_ok=True)
    k47 = {**K57.to_json(), "spec": "linux-image-6.1.0-47-amd64", "release": "6.1.0-47-amd64"}
    lab.meta_path.write_text(json.dumps({"pairs": 1, "kernels": {"A": k47},
                                         "booted": booted or {}}))


def test_the_build_a_host_runs_is_its_guests_word(tmp_path, monkeypatch):
    lab = Lab(name="unit", octet=19, ifprefix="abu", state_dir=tmp_path / "unit")
    _record(lab, {"unit-a-snd": K57.to_json()})
    snd, rcv = lab.hosts(1)
    assert booted_kernel(lab.layout, snd).spec == K57.spec  # `lab boot` recorded it
    assert booted_kernel(lab.layout, rcv).release == "6.1.0-47-amd64"  # its pair's
    # a kexec from inside: the guest said it runs 57, the record knows only its pair's 47
    share = lab_vm.share_of(lab.state_dir, rcv.alias)
    share.mkdir(parents=True)
    (share / "guest.log").write_text("+ echo x\nabtui guest ready: 6.1.0-57-amd64 unit-a-rcv\n")
    monkeypatch.setattr("abtui.lab.kernels.resolve", lambda spec, fetch=True: K57
                        if spec == K57.spec else pytest.fail(spec))
    assert booted_kernel(lab.layout, rcv) == K57
    (share / "guest.log").write_text("abtui guest ready: 9.9.9-other unit-a-rcv\n")
    monkeypatch.setattr("abtui.lab.kernels.resolve", lambda spec, fetch=True: (_ for _ in ())
                        .throw(BadInput("not fetched")))
    with pytest.raises(LabError, match=r"unit-a-rcv: the lab cannot tell which build it "
                                       r"runs \(9\.9\.9-other\)"):
        booted_kernel(lab.layout, rcv)


def test_lab_boot_refuses_what_it_cannot_boot_in_one_line(tmp_path, monkeypatch, capsys):
    monkeypatch.setenv("ABTUI_LAB", "unit,abu,230")
    monkeypatch.setenv("ABTUI_LAB_DIR", str(tmp_path))
    monkeypatch.setattr(Lab, "check_prerequisites", staticmethod(lambda: None))
    assert cli.main(["lab", "boot", "unit-a-snd", "linux-image-6.1.0-57-amd64"]) == 2
    assert "lab 'unit' is not up" in capsys.readouterr().err
    lab = Lab.default()
    _record(lab)
    for alias, said in (("unit-z-snd", "lab boot unit-z-snd: no such host in lab 'unit'"),):
        assert cli.main(["lab", "boot", alias, "linux-image-6.1.0-57-amd64"]) == 2
        err = capsys.readouterr().err
        assert said in err and "Traceback" not in err and len(err.strip().splitlines()) == 1
    assert cli.main(["lab", "boot", "--method", "warp", "unit-a-snd", "k"]) == 2
    assert "invalid choice: 'warp'" in capsys.readouterr().err


def test_a_switch_that_fails_power_cycles_the_hosts_back(tmp_path, monkeypatch):
    """A guest that does not come up on the build (powered off, another release, too slow):
    `lab boot` fails in one line naming it, after booting each host back onto the build it
    ran, and the record keeps that build."""
    lab = Lab(name="unit", octet=19, ifprefix="abu", state_dir=tmp_path / "unit")
    _record(lab)
    monkeypatch.setattr("abtui.lab.kernels.resolve", lambda spec, fetch=True: K57)
    cycled: list[tuple[str, str]] = []
    boots = lab.boots
    monkeypatch.setattr(boots, "_power_cycle", lambda hosts, kernel: cycled.extend(
        (h.alias, kernel.release) for h in hosts) or {h.alias: kernel for h in hosts})
    waits = iter([LabError("unit-a-rcv powered off while booting 6.1.0-57-amd64: no NIC"),
                  {"unit-a-snd": 40.0}, {"unit-a-rcv": 41.0}])

    def wait(guests, t0):
        got = next(waits)
        if isinstance(got, Exception):
            raise got
        return got

    monkeypatch.setattr(boots, "_await_ready", wait)
    with pytest.raises(LabError) as err:
        boots.boot(["unit-a-snd", "unit-a-rcv"], K57.spec)
    assert str(err.value) == ("unit-a-rcv powered off while booting 6.1.0-57-amd64: no NIC; "
                              "power-cycled back onto 6.1.0-47-amd64")
    assert cycled == [("unit-a-snd", "6.1.0-57-amd64"), ("unit-a-rcv", "6.1.0-57-amd64"),
                      ("unit-a-snd", "6.1.0-47-amd64"), ("unit-a-rcv", "6.1.0-47-amd64")]
    record = json.loads(lab.meta_path.read_text())
    assert record["booted"] == {} and record["boot_s"] == {"unit-a-snd": 40.0,
                                                           "unit-a-rcv": 41.0}
