"""Profiles: what loads, and the one line `FILE:LINE: FIELD: ...` for what does not."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from abtui.core.errors import EXIT_BAD_INPUT, BadInput
from abtui.core.model import KnobKind, Role, Scope
from abtui.lab.netns import Lab
from abtui.lab.profile import render_lab_profile
from abtui.profile import RESERVED_KEYS, check_profile, load_profile, parse_profile

PROFILES = Path(__file__).resolve().parents[3] / "profiles"

MINIMAL = """\
[profile]
name = "t"

[[pairs]]
label = "A"
sender = "a-snd"
receiver = "a-rcv"
target = "198.18.1.2"

[[pairs]]
label = "B"
sender = "b-snd"
receiver = "b-rcv"
target = "198.18.2.2"

[[knobs]]
name = "wmem"
key = "net.ipv4.tcp_wmem"
values = ["4096 16384 4194304", "4096 16384 65536"]
binding = "w"

[plan]
matrix = ["wmem"]
"""


def error_of(text: str) -> str:
    with pytest.raises(BadInput) as info:
        parse_profile(text, "t.toml")
    msg = str(info.value)
    assert "\n" not in msg and "\r" not in msg
    assert info.value.exit_code == EXIT_BAD_INPUT
    return msg


def test_minimal_profile_fills_defaults():
    p = parse_profile(MINIMAL, "dir/t.toml")
    assert [x.label for x in p.pairs] == ["A", "B"]
    k = p.knob("wmem")
    assert k.kind is KnobKind.SYSCTL and k.scope is Scope.BOTH and k.pairs == ()
    assert p.test.duration == 10.0 and p.test.port == 5201 and p.plan.shuffle is True
    assert p.tunnels == ("none",) and p.source_text == MINIMAL and p.source_path == "dir/t.toml"


def test_lab_template_output_loads(tmp_path):
    lab = Lab(state_dir=tmp_path)
    text = render_lab_profile(lab_name="lab", ssh_config=str(lab.ssh_config),
                              known_hosts=str(lab.known_hosts), hosts=lab.hosts(2), pairs=2,
                              congestion=["reno", "bbr"])
    p = parse_profile(text, lab.profile_path)
    assert [(x.label, x.sender, x.target) for x in p.pairs] == [
        ("A", "lab-a-snd", "198.18.1.2"), ("B", "lab-b-snd", "198.18.2.2")]
    assert {k.name: k.binding for k in p.knobs} == {"tcp_wmem": "w", "tcp_rmem": "r",
                                                   "tso": "t", "cc": "c", "tunnel": "u"}
    assert p.knob("cc").values == ("reno", "bbr") and p.test.duration == 0
    assert p.ssh_config == str(lab.ssh_config) and p.base_pair == "A"
    assert p.tunnels == ("none", "wireguard", "vxlan")


@pytest.mark.parametrize("path", sorted(PROFILES.glob("*.toml")), ids=lambda p: p.name)
def test_every_shipped_profile_loads(path):
    p = load_profile(path)
    assert p.pairs and p.name == path.stem
    code, line = check_profile(path)
    assert code == 0 and "ok" in line


def test_example_covers_every_field():
    p = load_profile(PROFILES / "example.toml")
    aim = p.knob("enable_aim")
    assert aim.for_os("FreeBSD") == (KnobKind.SYSCTL, "dev.ix.2.enable_aim")
    assert aim.for_os("linux") == (KnobKind.ETHTOOL_COALESCE, "adaptive-rx")
    assert [aim.value_for_os("linux", v) for v in aim.values] == ["off", "on", "on"]
    assert aim.value_for_os("freebsd", "2") == "2" and aim.initial == "1"
    assert p.pair("patched").overrides == {"parallel": 2}
    assert p.test.extra_args == ("-w", "4M") and p.test.ping_count == 0
    assert p.ssh_config == str(Path("~/.ssh/config").expanduser())
    assert p.watches[0].sysctl == "dev.ix.2.queue*.interrupt_rate"
    assert p.watches[0].role is Role.RECEIVER and p.watches[1].command == "cat /proc/softirqs"
    assert p.plan.matrix == ("enable_aim", "direction") and p.plan.seed == 42
    assert p.min_effect == 1.0


def test_procedure_profiles_say_what_issue_8_asks():
    aim = load_profile(PROFILES / "ix-enable-aim.toml")
    assert [x.label for x in aim.pairs] == ["stock", "patched", "linux-ref"]
    assert aim.knob("enable_aim").values == ("0", "1", "2")
    assert aim.test.ping_count == 10 and aim.test.duration == 10 and aim.test.interval == 2
    crypto = load_profile(PROFILES / "softirq-crypto.toml")
    assert crypto.tunnels == ("ipsec", "wireguard") and crypto.plan.directions == ("tx", "rx")
    assert crypto.plan.matrix == ("tunnel", "direction")
    gro = load_profile(PROFILES / "wireguard-gro.toml")
    assert gro.test.parallel == 2 and gro.test.reverse and len(gro.pairs) == 3


def test_relative_paths_are_taken_from_the_profile_folder(tmp_path):
    text = MINIMAL.replace('name = "t"', 'name = "t"\nssh_config = "ssh/config"')
    (tmp_path / "p.toml").write_text(text)
    assert load_profile(tmp_path / "p.toml").ssh_config == str(tmp_path / "ssh" / "config")


def test_syntax_error_at_the_end_names_the_last_line():
    assert error_of("[profile]\nname = [1,\n").startswith("t.toml:2: TOML syntax: ")
    assert parse_profile(MINIMAL.replace('name = "t"', "")).name == "profile"


def test_directions_add_the_direction_dimension():
    p = parse_profile(MINIMAL + 'directions = ["tx", "rx"]\n')
    assert p.plan.matrix == ("wmem", "direction")


# (replace this, with that) in MINIMAL -> expected line, and a piece of the message
BROKEN = [
    ('target = "198.18.2.2"', 'target = "198.18.2.2', 14, "TOML syntax:"),
    ('binding = "w"', 'binding = "w"\nsendr = "x"', 21, 'knobs[0].sendr: unknown key'),
    ('sender = "b-snd"', 'sendr = "b-snd"', 12, 'pairs[1].sendr: unknown key; did you mean '
                                                '"sender"?'),
    ('[plan]', '[plan]\nrepetitons = 2', 23, 'did you mean "repetitions"'),
    ('[plan]', '[plna]', 22, 'plna: unknown key; did you mean "plan"?'),
    ('[plan]', '[test]\nparallel = "4"\n[plan]', 23, 'test.parallel: got a string "4"; '
                                                     'expected an integer from 1 to 128'),
    ('[plan]', '[test]\nparallel = true\n[plan]', 23, "got a boolean true"),
    ('[plan]', '[test]\nduration = nan\n[plan]', 23, "test.duration: nan is out of range"),
    ('receiver = "b-rcv"\n', '', 10, "pairs[1].receiver: missing; expected this required key"),
    ('binding = "w"', 'binding = "w"\nscope = "all"', 21,
     'knobs[0].scope: "all" is not allowed; expected one of sender, receiver, both'),
    ('binding = "w"', 'binding = "w"\nkind = "proc"', 21, "knobs[0].kind:"),
    ('label = "B"', 'label = "A"', 11, 'pairs[1].label: "A" is used twice'),
    ('binding = "w"', 'binding = "q"', 20, 'knobs[0].binding: "q" is kept by the console'),
    ('binding = "w"', 'binding = "ww"', 20, "is not a single key"),
    ('key = "net.ipv4.tcp_wmem"', 'key = "net.ipv4.tcp_wmem; reboot"', 18,
     "knobs[0].key: \"net.ipv4.tcp_wmem; reboot\" is not a sysctl name"),
    ('values = ["4096', 'values = ["a\\nb", "4096', 19, "knobs[0].values: entry 0: "
                                                         "\"a\\nb\" holds a control character"),
    ('values = ["4096', 'values = [true, "4096', 19, "entry 0: got a boolean"),
    ('values = ["4096 16384 4194304", "4096 16384 65536"]', "values = []", 19, "empty array"),
    ('matrix = ["wmem"]', 'matrix = ["wmen"]', 23, 'plan.matrix: "wmen" is not a knob'),
    ('matrix = ["wmem"]', 'matrix = ["direction"]', 22, "plan.directions: missing"),
    ('sender = "a-snd"', 'sender = "-oProxyCommand=touch /tmp/x"', 6, "pairs[0].sender:"),
    ('target = "198.18.1.2"', 'target = "$(reboot)"', 8, "pairs[0].target:"),
    ('[plan]', '[[watches]]\nname = "w"\nrole = "sender"\ncommand = ["ls"]\n[plan]', 25,
     "watches[0].command: got an array"),
    ('[plan]', '[[watches]]\nname = "w"\nrole = "sender"\n[plan]', 22,
     "watches[0]: has both or neither of sysctl and command"),
    ('[plan]', '[[watches]]\nname = "w"\nrole = "sender"\nsysctl = "a`id`"\n[plan]', 25,
     "watches[0].sysctl:"),
    ('binding = "w"', 'binding = "w"\npairs = ["C"]', 21, 'no pair is labelled "C"'),
    ('binding = "w"', 'binding = "w"\nkind = "tunnel"', 18, "a tunnel knob has no key"),
    ('name = "t"', 'name = "t"\ntunnels = ["openvpn"]', 3, "profile.tunnels: entry 0:"),
    ('name = "t"', 'name = "t"\nbase_pair = "C"', 3, "profile.base_pair: no pair"),
    ('[plan]', '[test]\nreverse = true\nbidir = true\n[plan]', 24, "test.bidir: reverse and"),
    ('target = "198.18.2.2"\n', 'target = "198.18.2.2"\n[pairs.test]\nport = 0\n', 16,
     "pairs[1].test.port: 0 is out of range"),
    ('target = "198.18.2.2"\n', 'target = "198.18.2.2"\ntest = 5\n', 15,
     "pairs[1].test: got an integer; expected a table [test]"),
    ('[plan]', '[test]\nextra_args = ["--logfile=/etc/passwd"]\n[plan]', 23,
     "is set by abtui"),
    ('[profile]', 'plan = 3\n[profile]', 23, "TOML syntax"),
    ('name = "t"', 'name = "t"\nversion = 2', 3, "profile.version: 2 is out of range"),
    ('[plan]', '[report]\nmin_effect = "1"\n[plan]', 23,
     'report.min_effect: "1" is not a percentage'),
    ('[plan]', '[report]\nmin_effect = 0\n[plan]', 23, "report.min_effect: 0% is out of range"),
    ('[plan]', '[report]\nmin_effect = "1%%"\n[plan]', 23, "report.min_effect:"),
]


@pytest.mark.parametrize(("old", "new", "line", "piece"), BROKEN,
                         ids=[b[3][:40] for b in BROKEN])
def test_broken_profile_gives_one_line_with_file_line_and_field(old, new, line, piece):
    assert old in MINIMAL
    msg = error_of(MINIMAL.replace(old, new, 1))
    assert msg.startswith(f"t.toml:{line}: "), msg
    assert piece in msg, msg
    if "TOML syntax" not in msg:
        assert re.fullmatch(r"t\.toml:\d+: [^:]+: .+; .*(expected|did you mean).*", msg), msg


@pytest.mark.parametrize(("written", "percent"), [('"2%"', 2.0), ('"0.5 %"', 0.5), ("3", 3.0),
                                                  ("1.5", 1.5)])
def test_min_effect_in_report_alone(written, percent):
    p = parse_profile(MINIMAL + f"\n[report]\nmin_effect = {written}\n", "t.toml")
    assert p.min_effect == percent
    assert parse_profile(MINIMAL, "t.toml").min_effect == 1.0  # the default


def test_missing_pairs_and_wrong_section_types():
    assert error_of('[profile]\nname = "x"\n') == (
        "t.toml:1: pairs: missing; expected at least one [[pairs]] table")
    assert "pairs: got a string" in error_of('pairs = "x"\n')
    assert "profile: got an array" in error_of('profile = [1]\n')


@pytest.mark.parametrize("key", RESERVED_KEYS[:8])
def test_reserved_bindings_are_refused(key):
    assert "kept by the console" in error_of(MINIMAL.replace('binding = "w"',
                                                             f'binding = "{key}"'))


def test_os_variant_checks_its_own_values():
    text = MINIMAL.replace('binding = "w"', 'binding = "w"\n[knobs.os.linux]\n'
                           'kind = "ethtool-feature"\nkey = "gro"\n')
    msg = error_of(text)
    assert msg.startswith("t.toml:21: knobs[0].os.linux.values: entry 0:") and "on or off" in msg
    msg = error_of(MINIMAL.replace('binding = "w"', 'binding = "w"\n[knobs.os.plan9]\n'))
    assert msg.startswith("t.toml:21: knobs[0].os.plan9: unknown OS")


def test_unreadable_and_non_utf8_files(tmp_path):
    with pytest.raises(BadInput, match="cannot read the profile"):
        load_profile(tmp_path / "absent.toml")
    bad = tmp_path / "bad.toml"
    bad.write_bytes(b'[profile]\nname = "\xff"\n')
    with pytest.raises(BadInput, match=r"bad\.toml:2: TOML syntax: byte 0xff is not UTF-8"):
        load_profile(bad)
    code, line = check_profile(bad)
    assert code == EXIT_BAD_INPUT and line.endswith("expected UTF-8 text")


def test_hostile_key_is_shown_quoted_on_one_line():
    msg = error_of(MINIMAL.replace("[plan]", '[plan]\n"a\\nb\\u202e;$(id)" = 1'))
    assert msg.startswith('t.toml:23: plan."a\\nb\\u202e;$(id)": unknown key'), msg


def test_docs_describe_every_key_and_their_example_loads():
    from abtui.profile import schema

    doc = (PROFILES.parent / "docs" / "profiles.md").read_text()
    documented = set(re.findall(r"^\| `([a-z0-9_]+)` \|", doc, re.M))
    keys = {fld.key for fields in (schema.profile_fields(None), schema.TEST_FIELDS,
                                   schema.PAIR_FIELDS, schema.KNOB_FIELDS,
                                   schema.KNOB_OS_FIELDS, schema.WATCH_FIELDS,
                                   schema.PLAN_FIELDS) for fld in fields}
    assert keys <= documented, keys - documented
    example = re.findall(r"```toml\n(.*?)```", doc, re.S)[-1]
    assert parse_profile(example, "docs.toml").knob("gro").scope is Scope.RECEIVER


def test_iperf3_knob_values_become_test_option_values():
    from abtui.profile.knobs import iperf3_value

    text = MINIMAL.replace('binding = "w"', 'binding = "w"\n\n[[knobs]]\nname = "dir"\n'
                           'kind = "iperf3"\nkey = "reverse"\nvalues = ["off", "on"]\n\n'
                           '[[knobs]]\nname = "streams"\nkind = "iperf3"\nkey = "parallel"\n'
                           'values = [1, 8]\n')
    p = parse_profile(text)
    assert [iperf3_value("reverse", v) for v in p.knob("dir").values] == [False, True]
    assert [iperf3_value("parallel", v) for v in p.knob("streams").values] == [1, 8]
    assert iperf3_value("congestion", "bbr") == "bbr"
    assert "expected a stream count" in error_of(text.replace("values = [1, 8]",
                                                              "values = [1, 200]"))


def test_cli_exits_2_with_one_line_for_a_broken_profile(tmp_path, monkeypatch, capsys):
    """The CLI's AbtuiError path, driven by a command that loads a profile (as `check` will)."""
    import importlib.machinery
    import sys
    import types

    from abtui import cli

    mod = types.ModuleType("abtui.commands.profiletest")
    mod.__spec__ = importlib.machinery.ModuleSpec(mod.__name__, None)
    mod.add_arguments = lambda parser: parser.add_argument("profile")
    mod.run = lambda args: load_profile(args.profile) and 0
    monkeypatch.setitem(sys.modules, mod.__name__, mod)
    monkeypatch.setitem(cli.COMMANDS, "profiletest", ("profiletest", "load a profile"))
    bad = tmp_path / "bad.toml"
    bad.write_text(MINIMAL.replace('sender = "b-snd"', 'sendr = "b-snd"'))
    assert cli.main(["profiletest", str(bad)]) == EXIT_BAD_INPUT
    err = capsys.readouterr().err
    assert err == f'abtui: {bad}:12: pairs[1].sendr: unknown key; did you mean "sender"? ' \
                  "expected one of label, sender, receiver, target, sender_device, " \
                  "receiver_device, test\n"
    good = tmp_path / "good.toml"
    good.write_text(MINIMAL)
    assert cli.main(["profiletest", str(good)]) == 0


def test_path_of_an_unknown_users_home_is_one_line(tmp_path):
    from abtui.core.errors import BadInput
    from abtui.profile import parse_profile

    text = (tmp_path / "p.toml")
    body = ('[profile]\nname = "x"\nssh_config = "~nosuchuser_abtui/.ssh/config"\n\n'
            '[[pairs]]\nlabel = "A"\nsender = "s"\nreceiver = "r"\ntarget = "198.18.1.2"\n')
    with pytest.raises(BadInput, match=r":3: .*ssh_config.*unknown user"):
        parse_profile(body, text)


def test_the_iperf3_program_is_a_name_or_path_per_profile_and_pair():
    from abtui.remote.iperf_cmd import client_argv, options_for

    text = MINIMAL.replace('target = "198.18.2.2"\n',
                           'target = "198.18.2.2"\n[pairs.test]\n'
                           'iperf3 = "/opt/iperf3-3.18/bin/iperf3"\n')
    profile = parse_profile(text, "t.toml")
    assert profile.test.iperf3 == "iperf3"
    opts = options_for(profile.test, profile.pair("B"))
    assert opts.iperf3 == "/opt/iperf3-3.18/bin/iperf3"
    assert client_argv(opts, "198.18.2.2", 5201, 10, program=opts.iperf3)[0] == opts.iperf3
    msg = error_of(text.replace("/opt/iperf3-3.18/bin/iperf3", "iperf3; reboot"))
    assert msg.startswith("t.toml:16: pairs[1].test.iperf3:"), msg
    assert "a program name or an absolute path" in msg
