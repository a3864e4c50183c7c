"""A profile value that becomes a command's own argument never begins with `-` (option
injection: `grub-reboot '--help'`, `insmod --help`, `modprobe -r --help`, `sysctl -n -a`,
`iperf3 -C -x`): one line naming the field, exit 2; a value inside a `name=value` word (a
module parameter, a sysctl's value) may."""

from __future__ import annotations

import pytest

from abtui.profile import parse_profile
from tests.reliability import Reliability
from tests.unit.profile.test_profile_builds import HEAD, KERNEL, MODULE, error_of

GRUB = KERNEL.replace('method = "command"\ncommand = ["abtui", "lab", "boot", "{host}", '
                      '"{value}"]', 'method = "grub-reboot"\nentry = "--help"')


def test_a_grub_entry_beginning_with_a_dash_is_refused_naming_it() -> None:
    said = error_of(GRUB)
    assert "knobs[0].build.entry" in said and '"--help" begins with' in said


@pytest.mark.parametrize(("field", "value"), [("file", "--help"), ("release", "-r")])
def test_an_insmod_file_or_a_release_beginning_with_a_dash_is_refused(field: str,
                                                                        value: str) -> None:
    text = MODULE.replace('method = "modprobe"', f'method = "insmod"\nfile = "/x.ko"\n'
                          f'{field} = "{value}"' if field == "release" else
                          f'method = "insmod"\nfile = "{value}"')
    said = error_of(text)
    assert f'"{value}" begins with' in said and field in said


def test_a_nextboot_kernel_beginning_with_a_dash_is_refused() -> None:
    said = error_of(KERNEL.replace('method = "command"\ncommand = ["abtui", "lab", "boot", '
                                   '"{host}", "{value}"]', 'method = "nextboot"\nkernel = "-h"'))
    assert "knobs[0].build.kernel" in said and '"-h" begins with' in said


@pytest.mark.reliability(
    "46d", "profile and `--set` values that become a host command's own argument beginning "
    "with `-` (`grub-reboot '--help'`, `insmod --help`, a module or sysctl key, a build or "
    "congestion value)",
    "one line naming the field and the value, exit 2, nothing sent (the loader, `--set`, "
    "`--alternate` and `check` share the rule); a value inside one word (`-1` of a sysctl) "
    "allowed")
def test_module_and_sysctl_keys_and_build_or_congestion_values_are_refused(
        reliability: Reliability) -> None:
    assert '"--help" begins with' in error_of(MODULE.replace('key = "e1000e"',
                                                                 'key = "--help"'))
    sysctl = HEAD + ('[[knobs]]\nname = "s"\nkind = "sysctl"\nkey = "-a"\n'
                     'values = ["1", "2"]\n')
    assert "knobs[0].key" in error_of(sysctl) and '"-a" begins with' in error_of(sysctl)
    cc = HEAD + ('[[knobs]]\nname = "cc"\nkind = "iperf3"\nkey = "congestion"\n'
                 'values = ["bbr", "-x"]\n')
    assert 'entry 1: "-x" begins with' in error_of(cc)
    build = KERNEL.replace('"linux-image-6.1.0-57-amd64"]', '"--version"]')
    assert 'entry 1: "--version" begins with' in error_of(build)
    reports = MODULE.replace('key = "rx-usecs"', 'key = "-x"')
    assert '"-x" begins with' in error_of(reports)
    reliability.row(fields_refused=6, example=f"`{error_of(sysctl)}`")


def test_a_value_inside_one_word_may_begin_with_a_dash() -> None:
    sysctl = HEAD + ('[[knobs]]\nname = "s"\nkind = "sysctl"\nkey = "net.x"\n'
                     'values = ["-1", "2"]\n')
    assert parse_profile(sysctl, "t.toml").knobs[0].values == ("-1", "2")


def test_a_set_or_alternated_iperf3_value_beginning_with_a_dash_is_refused() -> None:
    """`abtui run --set cc=-x` (or `--alternate cc=bbr,-x`) goes through the rule the engine
    and `abtui check` share, not the loader's: `iperf3 -C -x` was sent."""
    from abtui.core.errors import BadInput
    from abtui.profile.knobs import iperf3_setting

    cc = HEAD + ('[[knobs]]\nname = "cc"\nkind = "iperf3"\nkey = "congestion"\n'
                 'values = ["bbr", "reno"]\n')
    knob = parse_profile(cc, "t.toml").knobs[0]
    assert iperf3_setting(knob, "bbr") == ("congestion", "bbr")
    with pytest.raises(BadInput) as refused:
        iperf3_setting(knob, "-x")
    assert str(refused.value) == ("knob cc: \"-x\" begins with '-': the host's command would "
                                  "read it as an option; expected a name or a path")


@pytest.mark.parametrize(("table", "where"), [
    ('[test]\niperf3 = "-i0"\n', "test.iperf3"),  # `stdbuf -oL -i0 …`
    ('[[watches]]\nname = "w"\nrole = "sender"\nsysctl = "-a"\n', "watches[0].sysctl"),
])
def test_the_iperf3_program_and_a_watched_sysctl_beginning_with_a_dash_are_refused(
        table: str, where: str) -> None:
    """The program runs as `stdbuf -oL PROGRAM …` and a watch reads `sysctl -n KEY`: both
    are a command's own argument (`sysctl -n -a` was sent)."""
    said = error_of(HEAD + table)
    assert where in said and "begins with '-'" in said, said
