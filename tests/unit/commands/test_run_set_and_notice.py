"""`abtui run --set` parsing and the recovery notice of the next start (no hosts needed)."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

from abtui.commands.run import parse_setting
from abtui.core.errors import BadInput
from abtui.hosts.journals import recovery_notice


def test_set_takes_knob_equals_value_with_spaces_and_equals_in_the_value() -> None:
    knobs = ["tcp_rmem", "tunnel"]
    assert parse_setting("tcp_rmem=4096 16384 65536", knobs) == ("tcp_rmem", "4096 16384 65536")
    assert parse_setting("tunnel=a=b", knobs) == ("tunnel", "a=b")
    with pytest.raises(BadInput, match=r"^--set tcp_rmem: write KNOB=VALUE$"):
        parse_setting("tcp_rmem", knobs)
    with pytest.raises(BadInput, match=r"^--set mtu=9000: the profile has no knob 'mtu' "
                                       r"\(it has: tcp_rmem, tunnel\)$"):
        parse_setting("mtu=9000", knobs)


def _journal(directory: Path, pid: int, *records: dict) -> None:
    directory.mkdir(parents=True, exist_ok=True)
    lines = [{"op": "start", "pid": pid, "t": 0}, *records]
    (directory / f"x-{pid}.jsonl").write_text("".join(json.dumps(r) + "\n" for r in lines))


def test_notice_names_the_hosts_a_dead_controller_left_changed(tmp_path: Path) -> None:
    assert recovery_notice(tmp_path / "none") is None
    dead = 2**22 + 12345  # above pid_max's default: no such process
    _journal(tmp_path / "u", dead,
             {"op": "original", "host": "r1", "kind": "sysctl", "key": "net.x", "device": None,
              "value": "1"},
             {"op": "pgid", "host": "s1", "pgid": 77, "what": "iperf3 client"})
    notice = recovery_notice(tmp_path / "u")
    assert notice is not None and "r1, s1" in notice and "`abtui recover`" in notice
    # a live controller's journal (this process) is not offered
    _journal(tmp_path / "live", os.getpid(),
             {"op": "pgid", "host": "s1", "pgid": 77, "what": "iperf3 client"})
    assert recovery_notice(tmp_path / "live") is None
