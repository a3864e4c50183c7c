"""Saving the live setup: a new file loads back equal; an existing file keeps its comments."""

from __future__ import annotations

import dataclasses
import shutil
import tomllib
from pathlib import Path

import pytest

from abtui.core.errors import BadInput
from abtui.core.model import Knob, KnobKind, Pair, Profile, Role, Watch
from abtui.core.model import TestOptions as Options
from abtui.profile import load_profile, save_profile

PROFILES = Path(__file__).resolve().parents[3] / "profiles"


def bare(p: Profile) -> Profile:
    return dataclasses.replace(p, source_path=None, source_text=None)


@pytest.mark.parametrize("name", sorted(p.name for p in PROFILES.glob("*.toml")))
def test_round_trip_through_a_new_file(tmp_path, name):
    original = load_profile(PROFILES / name)
    out = tmp_path / name
    save_profile(original, out)
    text = out.read_text()
    assert text.startswith("# abtui profile")
    assert bare(load_profile(out)) == bare(original)


def test_unchanged_profile_is_saved_byte_for_byte(tmp_path):
    for src in PROFILES.glob("*.toml"):
        dst = tmp_path / src.name
        shutil.copy(src, dst)
        save_profile(load_profile(dst), dst)
        assert dst.read_text() == src.read_text(), src.name


def test_live_changes_keep_comments_and_untouched_lines(tmp_path):
    path = tmp_path / "ix.toml"
    shutil.copy(PROFILES / "ix-enable-aim.toml", path)
    before = path.read_text()
    p = load_profile(path)
    p.test.parallel = 4
    new_pair = Pair("patched2", "p2-snd", "p2-rcv", "198.18.4.2", overrides={"reverse": True})
    p.pairs = [x for x in p.pairs if x.label != "linux-ref"] + [new_pair]
    p.watches = [w for w in p.watches if w.name != "interrupts"]
    save_profile(p, path, knob_values={"enable_aim": "2"})
    after = path.read_text()
    assert "# Interrupt moderation on a 10G NIC" in after
    assert 'sender = "stock-snd"           # FreeBSD, stock kernel' in after
    assert "duration = 10        # iperf3 -t 10" in after
    assert "repetitions = 5      # five runs per value" in after
    assert "linux-snd" not in after and "patched2" in after
    loaded = load_profile(path)
    assert loaded.test.parallel == 4 and loaded.knob("enable_aim").initial == "2"
    assert loaded.pair("patched2").overrides == {"reverse": True}
    assert [w.name for w in loaded.watches] == ["interrupt_rate"]
    # the lines that went are exactly those of the removed pair and watch
    gone = [ln for ln in before.splitlines() if ln not in after.splitlines()]
    assert gone == ['label = "linux-ref"', 'sender = "linux-snd"           # Linux, as a '
                    'reference point', 'receiver = "linux-rcv"', 'target = "198.18.3.2"',
                    'sender_device = "eth0"', 'receiver_device = "eth0"', 'name = "interrupts"',
                    'command = "grep eth0 /proc/interrupts"', 'pairs = ["linux-ref"]']


def test_new_knob_with_os_variant_and_kind_change_round_trips(tmp_path):
    path = tmp_path / "lab.toml"
    shutil.copy(PROFILES / "wireguard-gro.toml", path)
    p = load_profile(path)
    p.knobs.append(Knob("aim", KnobKind.SYSCTL, ("0", "1"), key="dev.ix.0.enable_aim",
                        binding="i", os_kinds={"linux": KnobKind.ETHTOOL_COALESCE},
                        os_keys={"linux": "adaptive-rx"},
                        os_values={"linux": {"0": "off", "1": "on"}}))
    p.watches.append(Watch("ints", role=Role.RECEIVER,
                           command="cat /proc/interrupts"))
    save_profile(p, path)
    again = load_profile(path)
    assert again.knob("aim") == p.knob("aim") and again.watches[0].command == p.watches[0].command
    p2 = dataclasses.replace(again, knobs=[k for k in again.knobs if k.name != "aim"])
    save_profile(p2, path)
    assert "aim" not in path.read_text()


def test_refuses_a_live_value_the_knob_does_not_have(tmp_path):
    path = tmp_path / "p.toml"
    shutil.copy(PROFILES / "ix-enable-aim.toml", path)
    with pytest.raises(BadInput, match="value \"7\" is not one of its values"):
        save_profile(load_profile(path), path, knob_values={"enable_aim": "7"})


def test_an_invalid_profile_never_replaces_the_file(tmp_path):
    path = tmp_path / "p.toml"
    shutil.copy(PROFILES / "softirq-crypto.toml", path)
    before = path.read_text()
    p = load_profile(path)
    p.base_pair = "nobody"
    with pytest.raises(BadInput, match="base_pair: no pair is labelled"):
        save_profile(p, path)
    assert path.read_text() == before
    assert [x.name for x in tmp_path.iterdir()] == ["p.toml"]  # no temp file left


def test_minimal_new_profile_omits_defaults(tmp_path):
    p = Profile(name="tiny", pairs=[Pair("A", "h1", "h2", "198.18.1.2")],
                test=Options(duration=0))
    path = save_profile(p, tmp_path / "tiny.toml")
    text = path.read_text()
    assert "duration = 0" in text and "port" not in text and "name" not in text
    assert bare(load_profile(path)) == dataclasses.replace(p, tunnels=("none",))


def test_a_new_file_keeps_what_the_model_does_not_hold(tmp_path):
    """[report] (layout, min_effect, reference) and [lab] survive a save to a new file: the
    report and `abtui run --lab` read them from the profile copy."""
    text = (PROFILES / "ix-enable-aim.toml").read_text() + (
        '\n[lab]\nkernel = "6.1.0-57"\n')
    src = tmp_path / "src.toml"
    src.write_text(text.replace('layout = "sweep"', 'layout = "sweep"\nmin_effect = "3%"'))
    original = load_profile(src)
    out = save_profile(original, tmp_path / "new.toml")
    saved = tomllib.loads(out.read_text())
    # min_effect as a plain number of percent, which the loader reads as written "3%"
    assert saved["report"] == {"layout": "sweep", "min_effect": 3.0,
                               "reference": ["linux-ref"]}
    assert saved["lab"] == {"kernel": "6.1.0-57"}
    assert bare(load_profile(out)) == bare(original)
