"""The commands that switch builds, per OS: every profile word quoted, and what the hosts print
parsed into states that say whether a build is running."""

from __future__ import annotations

import shlex
import subprocess

import pytest

from abtui.core.builds import Build, Method, Reports
from abtui.core.errors import BadInput
from abtui.remote.os.builds import (
    Interface,
    KernelState,
    ModuleState,
    kernel_mismatch,
    module_mismatch,
)
from abtui.remote.os.dialect import as_function
from abtui.remote.os.freebsd.builds import FreeBSDBuilds
from abtui.remote.os.linux.builds import LinuxBuilds
from abtui.remote.os.pick import dialect_for

LINUX, FREEBSD = LinuxBuilds(), FreeBSDBuilds()


def sh_ok(command: str) -> None:
    """The command is shell syntax `sh -n` accepts (as a function, as hosts run it)."""
    subprocess.run(["sh", "-n", "-c", as_function(command)], check=True)


def test_kexec_loads_the_image_with_its_initrd_and_the_running_command_line():
    cmd = LINUX.boot(Build(Method.KEXEC, release="6.1.0-57-amd64", append="quiet x=1"))
    assert cmd.startswith("kexec -l /boot/vmlinuz-6.1.0-57-amd64 "
                          "--initrd=/boot/initrd.img-6.1.0-57-amd64 --reuse-cmdline "
                          "--append='quiet x=1' || return $?; ")
    assert "systemctl kexec; else kexec -e" in cmd and "setsid -f sh -c" in cmd
    sh_ok(cmd)


def test_a_hostile_entry_is_one_quoted_word():
    cmd = LINUX.boot(Build(Method.GRUB_REBOOT, entry="1>2; rm -rf /"))
    assert cmd.startswith("grub-reboot '1>2; rm -rf /' || return $?; ")
    sh_ok(cmd)
    assert shlex.split(cmd.split("||")[0]) == ["grub-reboot", "1>2; rm -rf /"]


def test_freebsd_boots_by_nextboot_and_refuses_linux_methods():
    cmd = FREEBSD.boot(Build(Method.NEXTBOOT, kernel="D30155"))
    assert cmd.startswith("nextboot -k D30155 || return $?; daemon -f sh -c")
    assert "shutdown -r now" in cmd
    sh_ok(cmd)
    with pytest.raises(BadInput):
        FREEBSD.boot(Build(Method.KEXEC, release="x"))
    with pytest.raises(BadInput):
        LINUX.boot(Build(Method.NEXTBOOT, kernel="x"))
    assert isinstance(dialect_for("FreeBSD").builds, FreeBSDBuilds)
    assert isinstance(dialect_for("Linux").builds, LinuxBuilds)


def test_a_module_reload_takes_its_parameters_and_gives_the_interface_back():
    iface = Interface("data0", "52:54:00:12:34:56", "1500", True,
                      ("198.18.1.2/24", "fd00::2/64"))
    build = Build(Method.MODPROBE, params=(("InterruptThrottleRate", "10000"),))
    cmd = LINUX.reload("e1000e", build, iface)
    assert cmd.startswith("if [ -d /sys/module/e1000e ]; then modprobe -r e1000e || "
                          "rmmod e1000e || return $?; fi; "
                          "modprobe e1000e InterruptThrottleRate=10000 || return $?; ")
    assert "[ \"$a\" = 52:54:00:12:34:56 ]" in cmd
    assert "\"link set dev $n name \"data0" in cmd
    assert ("printf '%s\\n' 'link set dev data0 mtu 1500 up' 'addr replace 198.18.1.2/24 dev "
            "data0' 'addr replace fd00::2/64 dev data0'; } | ip -batch -") in cmd

    sh_ok(cmd)
    insmod = LINUX.reload("e1000e", Build(Method.INSMOD, file="/srv/my e1000e.ko"), None)
    assert "insmod '/srv/my e1000e.ko' || return $?" in insmod
    sh_ok(insmod)
    with pytest.raises(BadInput):
        LINUX.reload("e1000e; reboot", build, None)


@pytest.mark.parametrize(("depends", "loaded"), [
    ("libcurve25519-generic,udp_tunnel,ip6_udp_tunnel", "libcurve25519-generic udp_tunnel "
     "ip6_udp_tunnel"),
    ("", ""),
])
def test_insmod_loads_what_the_file_depends_on_first(tmp_path, depends, loaded):
    """`modprobe -r` takes a module's unused dependencies along; insmod resolves none: the
    file's own `depends` are loaded from the running kernel's modules before it (run with
    stand-in programs that log their arguments)."""
    log = tmp_path / "log"
    for name, body in (("modinfo", f'[ "$1 $2" = "-F depends" ] && echo "{depends}"'),
                       ("modprobe", f'echo "modprobe $*" >> {log}'),
                       ("insmod", f'echo "insmod $*" >> {log}'),
                       ("rmmod", f'echo "rmmod $*" >> {log}')):
        (tmp_path / name).write_text(f"#!/bin/sh\n{body}\n")
        (tmp_path / name).chmod(0o755)
    cmd = LINUX.reload("wireguard", Build(Method.INSMOD, file="/c/wg plain/wireguard.ko"), None)
    proc = subprocess.run(["sh", "-c", as_function(cmd)], env={"PATH": f"{tmp_path}:/usr/bin:/bin"},
                          capture_output=True, text=True)
    assert proc.returncode == 0, proc.stderr
    want = ([f"modprobe -a {loaded}"] if loaded else []) + ["insmod /c/wg plain/wireguard.ko"]
    assert log.read_text().splitlines() == want


def test_freebsd_reloads_a_kld_and_puts_back_its_addresses():
    iface = Interface("ix0", "00:1b:21:aa:bb:cc", "9000", True, ("10.0.0.1/24",))
    cmd = FREEBSD.reload("if_ix", Build(Method.KLD, file="/boot/modules/if_ix.ko"), iface)
    assert cmd.startswith("if kldstat -q -n if_ix; then kldunload -n if_ix || return $?; fi; "
                          "kldload /boot/modules/if_ix.ko || return $?; ")
    assert "ifconfig ix0 mtu 9000" in cmd and "ifconfig ix0 inet 10.0.0.1/24 alias" in cmd
    sh_ok(cmd)


def test_the_linux_interface_is_read_with_its_global_addresses():
    out = ("mac 52:54:00:12:34:56\nmtu 1500\nflags 0x1003\n"
           "3: data0    inet 198.18.1.2/24 brd 198.18.1.255 scope global data0\\       valid\n"
           "3: data0    inet6 fd00::2/64 scope global \\       valid_lft forever\n"
           "3: data0    inet6 fe80::5054:ff:fe12:3456/64 scope link \\       valid_lft\n")
    assert LINUX.parse_interface(out, "data0") == Interface(
        "data0", "52:54:00:12:34:56", "1500", True, ("198.18.1.2/24", "fd00::2/64"))
    assert LINUX.parse_interface("", "data0") is None


def test_the_freebsd_interface_is_read_from_ifconfig():
    out = ("ix0: flags=8843<UP,BROADCAST,RUNNING,SIMPLEX,MULTICAST> metric 0 mtu 9000\n"
           "\tether 00:1b:21:aa:bb:cc\n"
           "\tinet 10.0.0.1 netmask 0xffffff00 broadcast 10.0.0.255\n"
           "\tinet6 fe80::21b:21ff:feaa:bbcc%ix0 prefixlen 64 scopeid 0x1\n")
    assert FREEBSD.parse_interface(out, "ix0") == Interface(
        "ix0", "00:1b:21:aa:bb:cc", "9000", True, ("10.0.0.1/24",))


def test_kernel_state_and_its_mismatches():
    state = LINUX.parse_kernel_state("boot 1f2e\nrelease 6.1.0-57-amd64\n"
                                     "version #1 SMP PREEMPT_DYNAMIC Debian 6.1.158-1\n")
    assert state == KernelState("1f2e", "6.1.0-57-amd64",
                                "#1 SMP PREEMPT_DYNAMIC Debian 6.1.158-1")
    assert kernel_mismatch(Build(Method.KEXEC, release="6.1.0-57-amd64"), state) is None
    assert kernel_mismatch(Build(Method.KEXEC, release="6.1.0-47-amd64"), state) == \
        "came back on 6.1.0-57-amd64, expected 6.1.0-47-amd64"
    assert "does not contain" in kernel_mismatch(
        Build(Method.KEXEC, release="6.1.0-57-amd64", version="6.1.170"), state)
    bsd = FREEBSD.parse_kernel_state("boot { sec = 1, usec = 2 }\nrelease 14.0-RELEASE\n"
                                     "version FreeBSD 14.0\nbootfile /boot/D30155/kernel\n")
    assert kernel_mismatch(Build(Method.NEXTBOOT, kernel="D30155"), bsd) is None
    assert kernel_mismatch(Build(Method.NEXTBOOT, kernel="kernel"), bsd) == \
        "booted /boot/D30155/kernel, expected /boot/kernel/kernel"


def test_module_state_and_its_mismatches():
    state = LINUX.parse_module_state("loaded\nsrcversion 8E7B3C\nparam copybreak 256\n")
    assert state == ModuleState(True, "8E7B3C", None, None, {"copybreak": "256"})
    build = Build(Method.MODPROBE, params=(("copybreak", "128"), ("InterruptThrottleRate", "3")),
                  reports=Reports("ethtool-coalesce", "rx-usecs", "3"))
    assert module_mismatch(build, state) == "parameter copybreak reads 256, expected 128"
    assert module_mismatch(Build(Method.MODPROBE, srcversion="8E7B3C"), state) is None
    assert module_mismatch(Build(Method.MODPROBE), ModuleState()) == "the module is not loaded"
    kld = FREEBSD.parse_module_state("loaded\nfile /boot/modules/if_ix.ko\n")
    assert module_mismatch(Build(Method.KLD, file="/boot/modules/if_ix.ko"), kld) is None
    assert module_mismatch(Build(Method.KLD, file="if_ix"), kld) is None
    assert "expected /boot/kernel/if_ix.ko" in module_mismatch(
        Build(Method.KLD, file="/boot/kernel/if_ix.ko"), ModuleState(True, file="/x/if_ix.ko"))


def test_the_module_state_command_reads_sysfs(tmp_path):
    """Run on this machine: a module that is loaded here reads as loaded (its parameters)."""
    out = subprocess.run(["sh", "-c", as_function(LINUX.module_state(
        "nosuchmodule", Build(Method.MODPROBE, params=(("x", "1"),))))],
        capture_output=True, text=True, check=True).stdout
    assert LINUX.parse_module_state(out) == ModuleState()
    if not __import__("os").path.isdir("/sys/module/printk/parameters"):
        pytest.skip("no /sys/module/printk/parameters on this machine")
    out = subprocess.run(["sh", "-c", as_function(LINUX.module_state(
        "printk", Build(Method.MODPROBE, params=(("time", "Y"), ("nosuch", "1")))))],
        capture_output=True, text=True, check=True).stdout
    state = LINUX.parse_module_state(out)
    assert state.loaded and set(state.params) == {"time"}
