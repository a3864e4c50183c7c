"""The seed procedures' same-hosts forms shipped in profiles/ (docs/profiles.md, "Builds on
the same hosts"): each loads and checks, holds its builds on ONE pair, and the alternation
its comment gives parses into verdicts on build boots."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from abtui.core.builds import Method
from abtui.core.model import KnobKind, Scope
from abtui.measure.alternate.design import Alternation, parse_alternate
from abtui.measure.alternate.verdicts import verdicts_for
from abtui.profile import check_profile, load_profile

ROOT = Path(__file__).resolve().parents[3]
# profile -> (build knob, its kind, its method, what it alternates)
SAME_HOSTS = {
    "softirq-crypto-same-hosts": ("kernel", KnobKind.KERNEL, Method.KEXEC,
                                  "kernel=before,after"),
    "wireguard-gro-same-hosts": ("wg", KnobKind.MODULE, Method.INSMOD,
                                 "wg=plain,gro"),
    "ix-enable-aim-same-hosts": ("ix", KnobKind.MODULE, Method.KLD, "ix=stock,D30155"),
}


@pytest.mark.parametrize("name", sorted(SAME_HOSTS))
def test_a_same_hosts_procedure_alternates_its_builds_on_one_pair(name: str) -> None:
    path = ROOT / "profiles" / f"{name}.toml"
    code, line = check_profile(path)
    assert code == 0, line
    profile = load_profile(path)
    knob_name, kind, method, alternate = SAME_HOSTS[name]
    assert len(profile.pairs) == 1
    knob = profile.knob(knob_name)
    assert knob.kind is kind and set(knob.builds) == set(knob.values)
    assert {b.method for b in knob.builds.values()} == {method}
    assert f"--alternate {alternate}" in path.read_text()  # the comment says how to run it
    got, values = parse_alternate(alternate, profile)
    verdicts = verdicts_for(profile, Alternation(got, values, None, 20, seed=1))
    assert verdicts.builds and verdicts.stretches.pairs == (profile.pairs[0].label,)
    assert f"profiles/{name}.toml" in (ROOT / "docs" / "profiles.md").read_text()


def test_the_same_hosts_forms_keep_what_each_procedure_measures() -> None:
    crypto = load_profile(ROOT / "profiles" / "softirq-crypto-same-hosts.toml")
    assert crypto.knob("kernel").scope is Scope.SENDER  # only the guest boots
    assert [b.release for b in crypto.knob("kernel").builds.values()] == ["6.12.0-rc1",
                                                                          "6.12.0-rc1+"]
    assert crypto.tunnels == ("ipsec", "wireguard")
    assert crypto.plan.matrix == ("tunnel", "reverse")
    gro = load_profile(ROOT / "profiles" / "wireguard-gro-same-hosts.toml")
    assert gro.test.parallel == 2 and gro.test.reverse
    assert all(re.fullmatch(r"[0-9A-F]{23}", b.srcversion or "")
               for b in gro.knob("wg").builds.values())
    aim = load_profile(ROOT / "profiles" / "ix-enable-aim-same-hosts.toml")
    assert aim.plan.matrix == ("enable_aim",) and aim.knob("enable_aim").values == ("0", "1",
                                                                                    "2")
    assert aim.watches[0].sysctl == "dev.ix.2.queue*.interrupt_rate"
