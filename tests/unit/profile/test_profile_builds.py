"""Kernel and module knobs: each value's build, how a host reaches it, and one FILE:LINE line
naming the field for a wrong entry."""

from __future__ import annotations

import pytest

from abtui.core.builds import Build, Method, Reports, derived_release, fill, placeholders
from abtui.core.errors import EXIT_BAD_INPUT, BadInput
from abtui.core.model import KnobKind
from abtui.profile import parse_profile
from abtui.profile.save import save_profile

HEAD = """\
[[pairs]]
label = "A"
sender = "a-snd"
receiver = "a-rcv"
target = "198.18.1.2"
receiver_device = "data0"

"""

KERNEL = HEAD + """\
[[knobs]]
name = "kernel"
kind = "kernel"
values = ["linux-image-6.1.0-47-amd64", "linux-image-6.1.0-57-amd64"]

[knobs.build]
method = "command"
command = ["abtui", "lab", "boot", "{host}", "{value}"]
"""

MODULE = HEAD + """\
[[knobs]]
name = "itr"
kind = "module"
key = "e1000e"
values = ["3", "10000"]

[knobs.build]
method = "modprobe"

[knobs.builds.3]
params = { InterruptThrottleRate = "3" }

[knobs.builds.10000]
params = { InterruptThrottleRate = "10000" }
reports = { kind = "ethtool-coalesce", key = "rx-usecs", value = "100" }
"""


def error_of(text: str) -> str:
    with pytest.raises(BadInput) as info:
        parse_profile(text, "t.toml")
    msg = str(info.value)
    assert "\n" not in msg and info.value.exit_code == EXIT_BAD_INPUT
    return msg


def test_release_is_derived_from_a_debian_package_or_an_image():
    assert derived_release("linux-image-6.1.0-57-amd64") == "6.1.0-57-amd64"
    assert derived_release("/boot/vmlinuz-6.1.0-47-amd64") == "6.1.0-47-amd64"
    assert derived_release("before") == ""
    assert Build(Method.KEXEC, release="6.1.0-57-amd64").kexec_image() == (
        "/boot/vmlinuz-6.1.0-57-amd64", "/boot/initrd.img-6.1.0-57-amd64")
    assert Build(Method.KEXEC, image="/srv/bzImage", initrd="").kexec_image() == ("/srv/bzImage",
                                                                                   "")


def test_a_kernel_knob_takes_its_shared_build_per_value():
    k = parse_profile(KERNEL, "t.toml").knob("kernel")
    assert k.kind is KnobKind.KERNEL
    b = k.builds["linux-image-6.1.0-57-amd64"]
    assert b.method is Method.COMMAND and b.release == "6.1.0-57-amd64"
    assert b.command == ("abtui", "lab", "boot", "{host}", "{value}")
    assert b.timeout == 300 and b.command_timeout == 120


def test_a_module_knob_merges_its_value_table_over_the_shared_one():
    k = parse_profile(MODULE, "t.toml").knob("itr")
    assert k.kind is KnobKind.MODULE and k.key == "e1000e"
    assert k.builds["3"] == Build(Method.MODPROBE, params=(("InterruptThrottleRate", "3"),),
                                  timeout=60)
    assert k.builds["10000"].reports == Reports("ethtool-coalesce", "rx-usecs", "100")


def test_placeholders_are_plain_text():
    assert placeholders("{host}:{{x}}") == ["host"]
    assert fill("pxe-{host}{{}}", {"host": "a; rm -rf /"}) == "pxe-a; rm -rf /{}"


@pytest.mark.parametrize(("text", "where", "said"), [
    (KERNEL.replace('"{value}"', '"{valeu}"'), "t.toml:15: knobs[0].build.command",
     "{valeu} is not a placeholder"),
    (KERNEL.replace('method = "command"', 'method = "modprobe"'),
     "t.toml:14: knobs[0].build.method", "not a kernel method"),
    (MODULE.replace('[knobs.builds.3]\n', '[knobs.builds.3]\nimage = "/boot/x"\n'),
     "t.toml:18: knobs[0].builds.3.image", "not used by method modprobe"),
    (MODULE.replace('key = "e1000e"', 'key = "e1000e;x"'), "t.toml:11: knobs[0].key",
     "not a module name"),
    (MODULE.replace('InterruptThrottleRate = "3"', 'InterruptThrottleRate = "3 4"'),
     "t.toml:18: knobs[0].builds.3.params.InterruptThrottleRate", "not a parameter value"),
    (MODULE.replace('[knobs.builds.3]', '[knobs.builds.4]'), "t.toml:17: knobs[0].builds.4",
     "not one of the knob's values"),
    (HEAD + '[[knobs]]\nname = "k"\nkind = "kernel"\nvalues = ["a"]\n',
     "knobs[0].build.method", "missing"),
    (HEAD + '[[knobs]]\nname = "k"\nkind = "kernel"\nvalues = ["a"]\n[knobs.builds.a]\n'
            'method = "grub-reboot"\n', "t.toml:12: knobs[0].builds.a.entry", "missing"),
    (HEAD + '[[knobs]]\nname = "k"\nkind = "kernel"\nvalues = ["a"]\n[knobs.builds.a]\n'
            'method = "kexec"\n', "knobs[0].builds.a.image", "kexec needs the image"),
    (HEAD + '[[knobs]]\nname = "k"\nkey = "net.x"\nvalues = ["a"]\n[knobs.build]\n'
            'method = "kexec"\n', "t.toml:12: knobs[0].build", "no builds"),
])
def test_a_wrong_build_entry_is_one_line_naming_the_field(text, where, said):
    msg = error_of(text)
    assert where in msg and said in msg, msg


def test_a_saved_profile_keeps_its_builds(tmp_path):
    p = parse_profile(MODULE, str(tmp_path / "m.toml"))
    out = save_profile(p, tmp_path / "new.toml")
    again = parse_profile(out.read_text(), str(out))
    assert again.knob("itr").builds == p.knob("itr").builds
