"""The netem knob kind: values in one spelling, tc's output read back, Linux commands built
from checked words, FreeBSD and bad values refused with one clear line."""

from __future__ import annotations

import shlex
import subprocess
import textwrap

import pytest

from abtui.core import netem
from abtui.core.errors import BadInput
from abtui.core.model import KnobKind
from abtui.profile import load_profile
from abtui.remote.os.dialect import Setting
from abtui.remote.os.freebsd.knobs import FreeBSD
from abtui.remote.os.linux.knobs import NETEM_MISSING, Linux
from abtui.remote.refusals import EXIT_UNKNOWN

NETEM = Setting(KnobKind.NETEM, "", "data0")


@pytest.mark.parametrize(("given", "canonical"), [
    ("none", "none"),
    ("delay 20ms", "delay 20ms"),
    ("delay 20000us", "delay 20ms"),
    ("delay 1s 10ms loss 1%", "delay 1000ms 10ms loss 1%"),
    ("loss 0.5", "loss 0.5%"),
    ("rate 100mbit", "rate 100mbit"),
    ("rate 12.5Mbit delay 5ms", "delay 5ms rate 12500kbit"),
    ("delay 5ms limit 5000", "delay 5ms limit 5000"),
    ("delay 5ms limit 1000", "delay 5ms"),
])
def test_values_have_one_spelling(given, canonical):
    assert netem.canonical(given) == canonical


@pytest.mark.parametrize(("tc", "value"), [
    ("qdisc netem 8001: root refcnt 2 limit 1000 delay 20ms  5ms loss 1% rate 100Mbit",
     "delay 20ms 5ms loss 1% rate 100mbit"),
    ("qdisc netem 8002: root refcnt 2 limit 5000 delay 500us rate 12500Kbit",
     "delay 0.5ms rate 12500kbit limit 5000"),
    ("qdisc fq_codel 0: root refcnt 2 limit 10240p flows 1024 quantum 1514", "none"),
    ("qdisc noqueue 0: root refcnt 2", "none"),
    ("Error: Cannot find device \"data0\".", None),
])
def test_tc_output_read_back_in_the_same_spelling(tc, value):
    assert netem.from_tc(tc) == value


@pytest.mark.parametrize("bad", ["delay", "delay 20", "loss 120%", "rate 10mbps",
                                 "jitter 5ms", "delay 20ms; reboot", "limit 0", ""])
def test_bad_values_are_refused_naming_the_word(bad):
    with pytest.raises(BadInput, match="netem value"):
        netem.canonical(bad)


def test_linux_commands_replace_the_root_qdisc_and_read_it_back():
    d = Linux()
    write = d.write_command(NETEM, "delay 20ms  loss 1%")
    assert "tc qdisc replace dev data0 root netem delay 20ms loss 1% || return $?" in write
    assert write.rstrip().endswith("tc qdisc show dev data0 root\n}; abtui_do")
    none = d.write_command(NETEM, "none")
    assert "tc qdisc del dev data0 root" in none and "replace" not in none
    assert d.normalize(NETEM, "delay 20000us") == "delay 20ms"
    assert d.parse_value(NETEM, "qdisc netem 8001: root refcnt 2 limit 1000 delay 20ms\n") \
        == "delay 20ms"
    with pytest.raises(BadInput):
        d.write_command(Setting(KnobKind.NETEM, "", "data0;reboot"), "delay 1ms")


def test_reading_says_when_the_kernel_has_no_netem(tmp_path):
    """The read runs in a shell whose `tc` prints a non-netem qdisc and where no probe finds
    sch_netem: it fails with EXIT_UNKNOWN and says why."""
    bin_ = tmp_path / "bin"
    bin_.mkdir()
    for name, body in (("tc", "echo 'qdisc noqueue 0: root refcnt 2'"), ("modprobe", "exit 1"),
                       ("zcat", "echo '# CONFIG_NET_SCH_NETEM is not set'")):
        (bin_ / name).write_text(f"#!/bin/sh\n{body}\n")
        (bin_ / name).chmod(0o755)
    command = Linux().read_command(NETEM).replace("/sys/module/sch_netem",
                                                  str(tmp_path / "nope"))
    proc = subprocess.run(["sh", "-c", command], capture_output=True, text=True,
                          env={"PATH": f"{bin_}:/usr/bin:/bin"})
    assert proc.returncode == EXIT_UNKNOWN
    assert NETEM_MISSING in proc.stderr
    # with netem there (a module directory names it), the qdisc line is the answer
    (tmp_path / "nope").mkdir()
    proc = subprocess.run(["sh", "-c", command], capture_output=True, text=True,
                          env={"PATH": f"{bin_}:/usr/bin:/bin"})
    assert proc.returncode == 0 and proc.stdout == "qdisc noqueue 0: root refcnt 2\n"


def test_freebsd_has_no_netem():
    with pytest.raises(BadInput, match="FreeBSD has no netem"):
        FreeBSD().write_command(NETEM, "delay 1ms")


def _profile(tmp_path, knob: str):
    path = tmp_path / "p.toml"
    path.write_text(textwrap.dedent("""\
        [[pairs]]
        label = "A"
        sender = "s"
        receiver = "r"
        target = "198.18.1.2"
        sender_device = "data0"

        [[knobs]]
        name = "wan"
        kind = "netem"
        scope = "sender"
        """) + knob)
    return path


def test_profile_netem_knob_loads_and_bad_values_name_the_line(tmp_path):
    p = load_profile(_profile(tmp_path, 'values = ["none", "delay 20ms loss 1%"]\n'))
    assert p.knobs[0].kind is KnobKind.NETEM and p.knobs[0].values[1] == "delay 20ms loss 1%"
    with pytest.raises(BadInput) as exc:
        load_profile(_profile(tmp_path, 'values = ["none", "delay fast"]\n'))
    assert "p.toml:12: knobs[0].values: entry 1: netem value 'delay fast'" in str(exc.value)
    with pytest.raises(BadInput, match="a netem knob has no key"):
        load_profile(_profile(tmp_path, 'key = "x"\nvalues = ["none"]\n'))


def test_write_values_never_reach_a_shell_unquoted():
    cmd = Linux().write_command(NETEM, "delay 20ms")
    assert all(not set(w) & set(";|&$`") for w in shlex.split(
        cmd.split("netem ", 1)[1].split("||")[0]))
