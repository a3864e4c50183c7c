"""Lab naming and profile rendering: no root needed."""

from __future__ import annotations

import tomllib

import pytest

from abtui.lab.netns import Lab
from abtui.lab.profile import TCP_RMEM_VALUES, TCP_WMEM_VALUES, render_lab_profile


def test_hosts_names_and_addresses(tmp_path):
    lab = Lab(state_dir=tmp_path)
    hosts = lab.hosts(2)
    assert [h.alias for h in hosts] == ["lab-a-snd", "lab-a-rcv", "lab-b-snd", "lab-b-rcv"]
    assert [h.mgmt_address for h in hosts] == ["198.18.255.11", "198.18.255.12",
                                               "198.18.255.21", "198.18.255.22"]
    assert hosts[1].data_address == "198.18.1.2" and hosts[2].data_address == "198.18.2.1"
    names = [h.root_link for h in hosts] + [lab.layout.bridge]
    assert len(set(names)) == len(names)  # no root link collides with another or the bridge
    assert all(len(n) <= 15 for n in names)


@pytest.mark.parametrize("kwargs", [{"octet": 10}, {"name": "a b"}, {"ifprefix": "toolongpfx"},
                                    {"mgmt": 12}])
def test_rejects_addresses_outside_the_benchmark_block(kwargs, tmp_path):
    with pytest.raises(ValueError):
        Lab(state_dir=tmp_path, **kwargs)


def test_a_lab_is_composed_of_parts_sharing_one_layout(tmp_path, monkeypatch):
    """The layout, the SSH access and the VM pairs are objects of their own, each given the
    layout; `Lab.default()` takes its names from ABTUI_LAB, and the names callers read are the
    layout's."""
    from abtui.lab.layout import LabLayout
    from abtui.lab.ssh_access import LabSsh
    from abtui.lab.vm.pairs import LabVmPairs

    monkeypatch.setenv("ABTUI_LAB", "zlab,zla,233")
    lab = Lab.default()
    assert isinstance(lab.layout, LabLayout) and not isinstance(lab, LabLayout)
    assert isinstance(lab.ssh, LabSsh) and isinstance(lab.vms, LabVmPairs)
    assert not isinstance(lab.ssh, LabLayout) and not isinstance(lab.vms, LabSsh)
    assert lab.ssh.layout is lab.layout is lab.vms.layout and lab.vms.ssh is lab.ssh
    assert (lab.name, lab.octet, lab.ifprefix, lab.mgmt) == ("zlab", 19, "zla", 233)
    assert lab.hosts(1)[0].mgmt_address == "198.19.233.11" and lab.ssh_config == \
        lab.layout.state_dir / "ssh_config"
    assert Lab(state_dir=tmp_path, name="x").state_dir == tmp_path  # the constructor as before


def test_pairs_bounds(tmp_path):
    with pytest.raises(ValueError):
        Lab(state_dir=tmp_path).hosts(0)
    assert len(Lab(state_dir=tmp_path).hosts(8)) == 16


def test_rendered_profile_is_valid_toml_with_required_knobs(tmp_path):
    lab = Lab(state_dir=tmp_path)
    text = render_lab_profile(lab_name="lab", ssh_config='/tmp/a "quoted" path',
                              known_hosts="/tmp/kh", hosts=lab.hosts(3), pairs=3,
                              congestion=["reno", "bbr"])
    doc = tomllib.loads(text)
    assert doc["profile"]["ssh_config"] == '/tmp/a "quoted" path'
    assert [p["label"] for p in doc["pairs"]] == ["A", "B", "C"]
    assert doc["pairs"][2]["target"] == "198.18.3.2"
    knobs = {k["name"]: k for k in doc["knobs"]}
    assert set(knobs) >= {"tcp_wmem", "tcp_rmem", "tso", "cc", "tunnel"}
    assert tuple(knobs["tcp_wmem"]["values"]) == TCP_WMEM_VALUES
    assert tuple(knobs["tcp_rmem"]["values"]) == TCP_RMEM_VALUES
    assert knobs["tcp_rmem"]["scope"] == "receiver"
    assert knobs["cc"]["values"] == ["reno", "bbr"]
    assert knobs["tso"]["kind"] == "ethtool-feature"
    assert "none" in knobs["tunnel"]["values"]


def test_a_malformed_abtui_lab_is_bad_input(monkeypatch) -> None:  # type: ignore[no-untyped-def]
    """ABTUI_LAB names three things; a bare name is one line naming the variable, exit 2."""
    from abtui.cli import main

    monkeypatch.setenv("ABTUI_LAB", "mylab")
    assert main(["lab", "status"]) == 2
