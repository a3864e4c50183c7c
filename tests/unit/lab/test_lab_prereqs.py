"""Not root, or a program missing: one line saying what and how to get it; exit 2."""

from __future__ import annotations

import pytest

from abtui import cli
from abtui.core.errors import MissingPrerequisite
from abtui.lab import netns as lab


def test_not_root_says_so(monkeypatch, capsys):
    monkeypatch.setattr(lab.os, "geteuid", lambda: 1000)
    with pytest.raises(MissingPrerequisite, match="needs root"):
        lab.Lab.check_prerequisites()
    assert cli.main(["lab", "up"]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "root" in err and "Traceback" not in err


def test_missing_program_names_its_package(monkeypatch, capsys):
    monkeypatch.setattr(lab.os, "geteuid", lambda: 0)
    monkeypatch.setattr(lab, "_which", lambda p: None if p == "iperf3" else f"/usr/bin/{p}")
    assert cli.main(["lab", "up"]) == 2
    err = capsys.readouterr().err
    assert "`iperf3` is missing" in err and "apt-get install --no-install-recommends iperf3" in err


def test_unknown_subcommand_and_bad_arguments_exit_2(capsys):
    assert cli.main(["lab", "sideways"]) == 2
    assert cli.main(["nonsense"]) == 2
