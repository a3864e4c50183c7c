"""Every command's `--help` ends with a worked example and its exit codes (issue 49)."""

from __future__ import annotations

import pytest

from abtui import cli
from abtui.commands.helptext import EPILOGS

LAB_ACTIONS = ("up", "down", "status", "boot")
EVERY = [[name] for name in cli.COMMANDS] + [["lab", action] for action in LAB_ACTIONS]


@pytest.mark.parametrize("command", EVERY, ids=" ".join)
def test_help_shows_an_example_and_the_exit_codes(command: list[str], capsys) -> None:
    assert cli.main([*command, "--help"]) == 0
    out = capsys.readouterr().out
    example = out.split("example:\n", 1)[1]
    first = example.splitlines()[0].strip()
    assert first.startswith(f"abtui {command[0]}"), first  # an example of this command
    codes = out.split("exit codes:\n", 1)[1]
    assert "  0  " in codes and "  2  bad input" in codes
    assert all(len(line) <= 80 for line in out.splitlines()), out


def test_every_command_has_an_epilog() -> None:
    assert set(cli.COMMANDS) | {f"lab {a}" for a in LAB_ACTIONS} == set(EPILOGS)


def test_gate_is_a_command_of_its_own(capsys) -> None:
    assert cli.main(["gate", "--help"]) == 0
    out = capsys.readouterr().out
    assert "usage: abtui gate [-h] [--threshold PCT]" in out and "OLD NEW" in out
    assert cli.main(["gate", "a", "b", "--threshold", "300%"]) == 2
    assert "--threshold 300%: expected a percentage" in capsys.readouterr().err
