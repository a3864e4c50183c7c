"""`abtui recover` and a host another live abtui drives: reachable, only busy. It is said so
with when to run recover again, never offered `--forget` (its entries are still true), and
`--forget-unreachable` does not forget it."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path

import pytest

from abtui.core.errors import LeaseHeld
from abtui.hosts import restore
from abtui.hosts.undo import read_journal
from abtui.remote.link import HostLink
from tests.reliability import Reliability

HOLDER = "abtui of ann@box, PID 4711, since 02:10"


def _journal(path: Path) -> Path:
    records = [{"op": "start", "pid": 999999995},
               {"op": "host", "alias": "busy", "ssh_config": None, "known_hosts": None},
               {"op": "original", "host": "busy", "kind": "sysctl", "key": "net.x",
                "device": None, "value": "1"}]
    path.write_text("".join(json.dumps(r) + "\n" for r in records))
    return path


@pytest.mark.reliability(
    "46g", "`abtui recover` on a host only busy with another live abtui (its lease held)",
    "one line saying it is busy and to run recover again once that run has ended, never "
    "`--forget`; `--forget-unreachable` keeps its entries; exit 1")
@pytest.mark.parametrize("forget_unreachable", [False, True])
def test_a_busy_host_is_not_offered_forget(tmp_path: Path, monkeypatch,
                                            forget_unreachable: bool,
                                            reliability: Reliability) -> None:
    async def held(self: HostLink) -> None:
        raise LeaseHeld(self.alias, HOLDER)

    monkeypatch.setattr(HostLink, "connect", held)
    journal = _journal(tmp_path / "j.jsonl")
    lines: list[tuple[bool, str]] = []
    ok = asyncio.run(restore.recover_all([read_journal(journal)],
                                         lambda ok, line: lines.append((ok, line)),
                                         forget_unreachable=forget_unreachable))
    assert not ok
    [(done, line)] = lines
    assert not done and line.startswith(f"busy: busy: driven by {HOLDER}; 1 setting left")
    assert "--forget" not in line and "run `abtui recover` again once" in line
    assert read_journal(journal).originals  # kept, whole
    reliability.row(entries_kept=len(read_journal(journal).originals), line=f"`{line}`")
