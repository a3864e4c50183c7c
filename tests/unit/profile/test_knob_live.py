"""Which knobs restart the runs at a change and which act live: the default per kind, what
`live` and `restart` say, the refusals, a save's round trip, and `abtui check`'s listing."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from abtui.commands.check import runs_line
from abtui.core.errors import BadInput
from abtui.core.model import Knob
from abtui.profile import load_profile, parse_profile
from abtui.profile.save import save_profile
from tests.profiles import pair, profile_toml

ROOT = Path(__file__).resolve().parents[3]

HEAD = profile_toml(pair(1, sender="a-snd", receiver="a-rcv", sender_device="eth1",
                         receiver_device="eth1"), head='[profile]\nname = "t"\n\n') + "\n"

KNOBS = {  # kind -> a knob of it, as a profile writes it
    "sysctl": 'kind = "sysctl"\nkey = "net.ipv4.tcp_rmem"\nvalues = ["4096 131072 6291456", '
              '"4096 8192 16384"]',
    "mtu": 'kind = "mtu"\nvalues = [1500, 9000]',
    "ethtool-feature": 'kind = "ethtool-feature"\nkey = "tso"\nvalues = ["on", "off"]',
    "ethtool-coalesce": 'kind = "ethtool-coalesce"\nkey = "adaptive-rx"\nvalues = ["on", "off"]',
    "netem": 'kind = "netem"\nvalues = ["none", "delay 20ms"]',
    "tunnel": 'kind = "tunnel"\nvalues = ["none", "wireguard"]',
    "iperf3": 'kind = "iperf3"\nkey = "parallel"\nvalues = [1, 4]',
    "kernel": 'kind = "kernel"\nvalues = ["linux-image-6.1.0-47-amd64", '
              '"linux-image-6.1.0-57-amd64"]\n\n[knobs.build]\nmethod = "kexec"',
}


def knob(kind: str, extra: str = "") -> Knob:
    body = KNOBS[kind]
    head, sep, tail = body.partition("\n\n")  # extra keys before a sub-table
    text = f"{HEAD}[[knobs]]\nname = \"k\"\n{head}\n{extra}\n{sep}{tail}\n"
    return parse_profile(text, "t.toml").knob("k")


def error_of(kind: str, extra: str) -> str:
    body = KNOBS[kind]
    head, sep, tail = body.partition("\n\n")
    with pytest.raises(BadInput) as info:
        parse_profile(f"{HEAD}[[knobs]]\nname = \"k\"\n{head}\n{extra}\n{sep}{tail}\n", "t.toml")
    return str(info.value)


@pytest.mark.parametrize(("kind", "restarts"), [
    ("sysctl", True), ("mtu", True), ("ethtool-feature", False), ("ethtool-coalesce", False),
    ("netem", False), ("tunnel", True), ("iperf3", True), ("kernel", True)])
def test_each_kind_carries_its_default(kind: str, restarts: bool) -> None:
    """The safe default: a change restarts the runs unless the kind acts on open traffic."""
    k = knob(kind)
    assert (k.live, k.restart) == (None, None)
    assert k.restarts is restarts


def test_live_and_restart_say_what_a_change_does() -> None:
    assert not knob("sysctl", "live = true").restarts
    assert knob("sysctl", "live = false").restarts
    assert knob("sysctl", "restart = true").restarts
    assert not knob("sysctl", "restart = false").restarts  # as it always meant
    assert knob("ethtool-coalesce", "live = false").restarts
    assert knob("netem", "restart = true").restarts
    assert knob("mtu", "live = true\nrestart = false").restarts is False  # both, agreeing


def test_a_per_os_variant_of_another_kind_keeps_the_safe_default() -> None:
    """A knob is live by default only when its kind and every variant's act live."""
    aim = 'kind = "sysctl"\nkey = "dev.ix.2.enable_aim"\nvalues = [0, 1]\n\n' \
          '[knobs.os.linux]\nkind = "ethtool-coalesce"\nkey = "adaptive-rx"'
    both = 'kind = "ethtool-coalesce"\nkey = "adaptive-rx"\nvalues = ["on", "off"]\n\n' \
           '[knobs.os.freebsd]\nkind = "sysctl"\nkey = "dev.ix.2.enable_aim"'
    KNOBS["aim"], KNOBS["both"] = aim, both
    try:
        assert knob("aim").restarts and knob("both").restarts
        assert not knob("aim", "live = true").restarts
    finally:
        del KNOBS["aim"], KNOBS["both"]


@pytest.mark.parametrize("kind", ["tunnel", "iperf3", "kernel"])
def test_a_kind_that_always_restarts_cannot_be_live(kind: str) -> None:
    for said in ("live = true", "restart = false"):
        msg = error_of(kind, said)
        assert msg.startswith("t.toml:") and "always restarts the runs" in msg, msg
    assert knob(kind, "restart = true").restarts  # saying what it does is fine


def test_contradicting_live_and_restart_is_one_line_naming_the_knob() -> None:
    msg = error_of("sysctl", "live = true\nrestart = true")
    assert re.match(r"t\.toml:\d+: knobs\[0\]\.live: live = true contradicts restart = true",
                    msg), msg
    assert error_of("sysctl", 'live = "yes"').endswith(
        'knobs[0].live: got a string "yes"; expected true or false')


def test_saving_keeps_what_the_profile_said_and_adds_nothing(tmp_path: Path) -> None:
    text = f"{HEAD}[[knobs]]\nname = \"k\"\n{KNOBS['sysctl']}\nlive = true\n\n" \
           f"[[knobs]]\nname = \"m\"\n{KNOBS['mtu']}\n"
    path = tmp_path / "p.toml"
    path.write_text(text)
    prof = load_profile(path)
    out = save_profile(prof, tmp_path / "new.toml")
    saved = out.read_text()
    assert saved.count("live = true") == 1 and "restart" not in saved
    again = load_profile(out)
    assert not again.knob("k").restarts and again.knob("m").restarts


def test_check_lists_which_knobs_restart_and_which_act_live() -> None:
    assert runs_line(knob("sysctl")) == (
        "knob k: a change restarts the runs (the default for sysctl: say live = true if it "
        "acts on open connections)")
    assert runs_line(knob("sysctl", "live = true")) == (
        "knob k: acts live: a change is measured on the runs going on (the profile says "
        "live = true)")
    assert runs_line(knob("ethtool-coalesce")) == (
        "knob k: acts live: a change is measured on the runs going on (the default for "
        "ethtool-coalesce)")
    assert runs_line(knob("sysctl", "restart = true")).endswith("(the profile says restart = true)")
    assert runs_line(knob("tunnel")) == "knob k: a change restarts the runs (a tunnel knob " \
                                        "always does)"


async def test_check_says_it_for_every_knob_of_the_example() -> None:
    """`abtui check`'s knob pass says one such line per knob, hosts or not."""
    from abtui.commands.check import _check_knobs
    from abtui.hosts.connect import Hosts

    profile = load_profile(ROOT / "profiles" / "example.toml")
    lines: list[tuple[bool, str]] = []
    await _check_knobs(lambda ok, line: lines.append((ok, line)), profile, Hosts())
    said = {line.split(":")[0].removeprefix("knob "): line for ok, line in lines
            if ok and ("restarts the runs" in line or "acts live" in line)}
    assert set(said) == {k.name for k in profile.knobs}
    assert "acts live" in said["enable_aim"] and "live = true" in said["enable_aim"]


def test_the_docs_examples_of_both_kinds_load_with_what_they_say() -> None:
    """docs/profiles.md's per-OS examples: interrupt moderation live, the socket buffer
    restarting by its kind's default."""
    doc = (ROOT / "docs" / "profiles.md").read_text()
    blocks = {m.group(1): m.group(0) for m in re.finditer(
        r'```toml\n\[\[knobs\]\]\nname = "(enable_aim|rcvbuf)"\n.*?```', doc, re.S)}
    assert set(blocks) == {"enable_aim", "rcvbuf"}
    for name, block in blocks.items():
        text = HEAD + block.removeprefix("```toml\n").removesuffix("```")
        k = parse_profile(text, "doc.toml").knob(name)
        assert k.restarts is (name == "rcvbuf")
        if name == "rcvbuf":
            assert k.value_for_os("freebsd", k.values[1]) == "16384"
