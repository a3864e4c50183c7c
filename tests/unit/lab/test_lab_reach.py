"""`lab up` refuses a management subnet or an interface prefix another lab uses, before
anything is made; `lab status` logs in with the lab's keys and says why a host is down."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

from abtui.core.errors import BadInput
from abtui.lab.reach import clash, logins

OTHER = [{"ifname": "lo", "addr_info": [{"family": "inet", "local": "127.0.0.1",
                                           "prefixlen": 8}]},
         {"ifname": "he-mgmt", "addr_info": [{"family": "inet", "local": "198.19.244.1",
                                                "prefixlen": 24},
                                               {"family": "inet6", "local": "fe80::1",
                                                "prefixlen": 64}]}]


def test_a_subnet_on_another_interface_clashes() -> None:
    said = clash(json.dumps(OTHER), "mhe-mgmt", "198.19.244.1")
    assert said == ("the management subnet 198.19.244.0/24 is in use on he-mgmt "
                    "(198.19.244.1/24): another lab's?")
    assert clash(json.dumps(OTHER), "mhe-mgmt", "198.19.224.1") is None
    assert clash(json.dumps(OTHER), "he-mgmt", "198.19.244.1") is None  # its own bridge
    wide = [{"ifname": "eth9", "addr_info": [{"family": "inet", "local": "198.19.0.5",
                                              "prefixlen": 16}]}]
    assert "in use on eth9" in (clash(json.dumps(wide), "x-mgmt", "198.19.224.1") or "")


def test_a_prefix_whose_bridge_is_another_labs_clashes() -> None:
    said = clash(json.dumps(OTHER), "he-mgmt", "198.19.224.1")
    assert said is not None and "interface prefix of he-mgmt is in use by another lab" in said
    assert clash("not json", "he-mgmt", "198.19.224.1") is None


def test_lab_up_refuses_before_making_anything(monkeypatch: pytest.MonkeyPatch,
                                               tmp_path: Path) -> None:
    from abtui.lab import reach
    from abtui.lab.netns import Lab

    lab = Lab(name="mhe", octet=19, ifprefix="mhe", state_dir=tmp_path / "lab", mgmt=244)
    monkeypatch.setattr(reach, "root_addresses", lambda: json.dumps(OTHER))
    monkeypatch.setattr(Lab, "check_prerequisites", staticmethod(lambda: None))
    made: list[str] = []
    monkeypatch.setattr(Lab, "_make_bridge", lambda self: made.append("bridge"))
    with pytest.raises(BadInput, match=r"lab 'mhe': the management subnet 198\.19\.244\.0/24 "
                                       r"is in use on he-mgmt .*ABTUI_LAB=name,ifprefix,mgmt"):
        lab.up(pairs=1)
    assert made == [] and not (tmp_path / "lab").exists()


def test_logins_say_why_ssh_did_not_get_in(tmp_path: Path,
                                           monkeypatch: pytest.MonkeyPatch) -> None:
    bindir = tmp_path / "bin"
    bindir.mkdir()
    ssh = bindir / "ssh"
    ssh.write_text("#!/bin/sh\nfor a; do h=$a; done\n"  # the alias is before `true`
                   'for a; do [ "$a" = true ] && break; h=$a; done\n'
                   'case $h in good) exit 0 ;; slow) sleep 5 ;; esac\n'
                   'echo "root@$h: Permission denied (publickey)." >&2; exit 255\n')
    ssh.chmod(0o755)
    monkeypatch.setenv("PATH", f"{bindir}{os.pathsep}{os.environ['PATH']}")
    said = logins(tmp_path / "ssh_config", ["good", "bad", "slow"], timeout=2)
    assert said["good"] == ""
    assert said["bad"] == ("ssh with the lab's keys failed: root@bad: Permission denied "
                           "(publickey).")
    assert said["slow"] == "ssh did not log in within 2 s"
