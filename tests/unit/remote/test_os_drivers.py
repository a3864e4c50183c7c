"""One driver per OS, picked once per host: its dialect carries its own OS's build and tunnel
commands, and a journalled tunnel end is removed by the commands of the OS that made it."""

from __future__ import annotations

import subprocess

import pytest

from abtui.core.builds import Build, Method
from abtui.core.errors import BadInput
from abtui.remote.counters import counters_loop_command
from abtui.remote.os.builds import REPORTS_MARK, Interface
from abtui.remote.os.dialect import Dialect, as_function
from abtui.remote.os.pick import dialect_for, tunnels_for, tunnels_of


@pytest.mark.parametrize(("uname", "name"), [("Linux\n", "linux"), ("FreeBSD", "freebsd")])
def test_a_host_s_driver_carries_its_own_os_s_parts(uname: str, name: str) -> None:
    d = dialect_for(uname)
    assert d.name == name
    assert d.builds is not None and d.builds.name == name
    assert d.tunnels is not None and d.tunnels.name == name
    assert tunnels_for(name) is d.tunnels


def test_an_os_without_parts_has_no_build_or_tunnel_commands() -> None:
    assert Dialect.builds is None and Dialect.tunnels is None
    assert Dialect().counters_loop_command() is None


def test_the_counters_loop_is_linux_s_only() -> None:
    assert dialect_for("Linux").counters_loop_command() == counters_loop_command()
    assert dialect_for("FreeBSD").counters_loop_command() is None


def test_a_journalled_end_is_removed_by_the_os_that_made_it() -> None:
    gre = {"type": "gre", "ifname": "abg1sbeef"}
    assert tunnels_of(gre).down(gre).startswith("ip link del dev abg1sbeef")  # no os: Linux
    bsd = {**gre, "os": "freebsd"}
    assert tunnels_of(bsd).down(bsd).startswith("ifconfig abg1sbeef destroy")
    with pytest.raises(BadInput, match="linux and freebsd hosts, not darwin"):
        tunnels_of({**gre, "os": "Darwin"})


@pytest.mark.parametrize("uname", ["Linux", "FreeBSD"])
def test_a_reload_reads_its_reports_setting_in_the_same_round_trip(uname: str) -> None:
    builds = dialect_for(uname).builds
    assert builds is not None
    build = Build(Method.KLD if uname == "FreeBSD" else Method.MODPROBE, file="if_ix.ko")
    iface = Interface("ix0", "52:54:00:12:34:56", "1500", True, ("198.18.1.2/24",))
    plain = builds.reload_and_read("ix", build, iface, None)
    assert REPORTS_MARK not in plain
    assert plain == f"{builds.reload('ix', build, iface)}; {builds.module_state('ix', build)}"
    command = builds.reload_and_read("ix", build, iface, "echo 7")
    assert command.startswith(plain) and f"echo {REPORTS_MARK}" in command
    subprocess.run(["sh", "-n", "-c", as_function(command)], check=True)
    state, reported = builds.split_reload(f"loaded\nfile if_ix.ko\n{REPORTS_MARK}\n7\n")
    assert builds.parse_module_state(state).loaded and reported == "7\n"
    assert builds.split_reload("loaded\n") == ("loaded\n", "")
