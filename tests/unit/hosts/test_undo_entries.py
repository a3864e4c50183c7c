"""Each undo-journal entry checked on its own (abtui.hosts.undo_records): one this abtui
cannot use is said in one line and skipped, the others kept; process groups 1 or below (and
the controller's own) are refused wherever a group is read: the journal, the host's reply,
the kill itself."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path
from typing import Any

import pytest

from abtui.core.errors import RemoteError
from abtui.core.pids import pgid_problem
from abtui.hosts.restore import describe, recover_all
from abtui.hosts.undo import forget_host, read_journal
from abtui.hosts.undo_records import RECORDS, problem_of
from abtui.remote.link import HostLink
from abtui.remote.streams import PGID_MARK, RemoteProcess

ORIGINAL = {"op": "original", "host": "h1", "kind": "sysctl", "key": "net.x", "device": None,
            "value": "1", "knob": "x"}
BUILD = {"op": "build", "host": "h1", "knob": "kernel", "kind": "kernel", "key": "kernel",
         "value": "6.1.0-47-amd64", "device": None, "iface": None,
         "build": {"method": "kexec", "release": "6.1.0-47-amd64"}}


def _write(path: Path, *records: object) -> Path:
    path.write_text("".join((r if isinstance(r, str) else json.dumps(r)) + "\n"
                            for r in records))
    return path


def test_an_unknown_kind_first_does_not_hide_the_valid_entry_after(tmp_path):
    """A newer abtui's entry (a kind this one does not know) before a valid one: the valid
    one is read, the other said in one line naming the file, line and kind, and the journal
    is kept for it (a newer abtui may undo it)."""
    path = _write(tmp_path / "j.jsonl", {"op": "start", "pid": 999999990},
                  {"op": "wormhole", "host": "h1", "to": "elsewhere"}, ORIGINAL)
    p = read_journal(path)
    assert p.originals == {("h1", "sysctl", "net.x", None): "1"}
    (skipped,) = p.skipped
    assert skipped.line == ("j.jsonl line 2: unknown kind of entry 'wormhole' (written by a "
                            "newer abtui?): skipped")
    assert skipped.host == "h1" and skipped.keep
    assert "\n" not in skipped.line
    p.originals.clear()
    assert not p.empty and p.involved == ["h1"]  # kept for the entry it cannot use
    forget_host([p], "h1")
    assert read_journal(path).empty  # `--forget h1` drops it too


@pytest.mark.parametrize(("record", "why"), [
    ({**ORIGINAL, "value": 5}, "original entry's 'value' is int 5, not text"),
    ({**ORIGINAL, "kind": "warp-drive"}, "unknown kind of setting 'warp-drive'"),
    ({**ORIGINAL, "device": ["eth0"]}, "'device' is list"),
    ({**ORIGINAL, "host": None}, "'host' is NoneType"),
    ({k: v for k, v in ORIGINAL.items() if k != "key"}, "original entry without 'key'"),
    ({"op": "pgid", "host": "h1", "pgid": "4242"}, "'pgid' is str '4242'"),
    ({"op": "pgid", "host": "h1", "pgid": True}, "'pgid' is bool"),
    ({"op": "pgid", "host": "h1", "pgid": 4242.0}, "'pgid' is float"),
    ({"op": "pgid", "host": "h1", "pgid": 1}, "process group 1 is never ended"),
    ({"op": "pgid", "host": "h1", "pgid": 0}, "process group 0 is never ended"),
    ({"op": "pgid", "host": "h1", "pgid": -4242}, "process group -4242 is never ended"),
    ({"op": "tunnel", "host": "h1", "ifname": "abv1", "type": "quantum"},
     "a tunnel this abtui cannot remove"),
    ({"op": "start", "pid": "12"}, "'pid' is str"),
    ({"op": "build", "host": "h1", "knob": "kernel", "kernel": "6.1.0-57"},
     "build entry without 'kind'"),
    ({**BUILD, "build": "6.1.0-57"}, "'build' is str"),
    ({"op": "host", "alias": "h1", "sudo": "yes"}, "'sudo' is str"),
    ({"op": "\x1b]0;owned\x07"}, "unknown kind of entry '\\x1b]0;owned\\x07'"),
    ([1, 2], "not an entry"),
])
def test_an_entry_of_the_wrong_shape_is_one_line_and_skipped(tmp_path, record, why):
    path = _write(tmp_path / "j.jsonl", {"op": "start", "pid": 999999990}, record, ORIGINAL)
    p = read_journal(path)
    assert p.originals == {("h1", "sysctl", "net.x", None): "1"}
    assert p.pgids == {} and p.tunnels == {}
    (skipped,) = p.skipped
    assert skipped.line.startswith("j.jsonl line 2: ") and skipped.line.endswith("skipped")
    assert why in skipped.line, skipped.line
    assert "\x1b" not in skipped.line and "\n" not in skipped.line
    assert not skipped.keep or not isinstance(record, dict) or record.get("op") not in RECORDS


def test_a_cut_last_line_is_dropped_quietly_a_damaged_one_inside_is_said(tmp_path):
    path = _write(tmp_path / "j.jsonl", {"op": "start", "pid": 999999990}, "not json",
                  ORIGINAL, '{"op":"original","host":')
    path.write_text(path.read_text().removesuffix("\n"))  # a crash cut the last line
    p = read_journal(path)
    assert [k.line for k in p.skipped] == ["j.jsonl line 2: not a JSON entry: skipped"]
    assert p.originals


def test_every_entry_the_journal_writes_reads_back_usable():
    """What UndoJournal writes passes its own check (a new kind is one record class)."""
    written: list[dict[str, Any]] = [
        {"op": "start", "pid": 42, "t": 1.5},
        {"op": "host", "alias": "h", "ssh_config": None, "known_hosts": "/k", "sudo": False},
        ORIGINAL, {**ORIGINAL, "op": "restored", "left": "2"}, {**ORIGINAL, "op": "unchanged"},
        {"op": "tunnel", "host": "h", "type": "vxlan", "ifname": "abv1sabcd", "local": "1.2.3.4",
         "remote": "1.2.3.5", "spi_out": None, "spi_in": None, "os": "linux", "pair": "A"},
        {"op": "tunnel_down", "host": "h", "ifname": "abv1sabcd"},
        {**ORIGINAL, "op": "wrote"}, {**ORIGINAL, "op": "foreign"},
        {"op": "pgid", "host": "h", "pgid": 4242, "what": "iperf3", "t": 1.5},
        {"op": "pgid_gone", "host": "h", "pgid": 4242}, {"op": "forget", "host": "h"},
        BUILD, {"op": "build_restored", "host": "h1", "knob": "kernel"}]
    assert {r["op"] for r in written} == set(RECORDS)
    assert [problem_of(r) for r in written] == [""] * len(written)


def test_recover_says_the_skipped_entries_and_exits_1(tmp_path):
    """Nothing else pending: each skipped line said as a FAIL, not done, so exit 1; a dry
    run lists it."""
    path = _write(tmp_path / "j.jsonl", {"op": "start", "pid": 999999990},
                  {"op": "pgid", "host": "h1", "pgid": 1, "what": "iperf3"})
    p = read_journal(path)
    assert describe(p) == [p.skipped[0].line]
    said: list[tuple[bool, str]] = []
    ok = asyncio.run(recover_all([p], lambda done, line: said.append((done, line))))
    assert not ok
    assert said == [(False, "j.jsonl line 2: pgid entry: process group 1 is never ended (it "
                            "would end every process, or the caller's own): skipped")]
    assert not path.exists()  # nothing in it could ever be done: not kept


@pytest.mark.parametrize("pgid", [1, 0, -1, -4242])
def test_the_kill_itself_refuses_a_group_of_1_or_below(pgid):
    link = HostLink("h1")
    with pytest.raises(RemoteError, match=f"not ended: process group {pgid} is never ended"):
        asyncio.run(link.kill_group(pgid))


def test_the_kill_refuses_the_control_shells_own_group():
    link = HostLink("h1")
    link.shell_group = 4242
    with pytest.raises(RemoteError, match="4242 is the controller's own on that host"):
        asyncio.run(link.kill_group(4242))
    assert pgid_problem(4243, 4242) == "" and pgid_problem(2) == ""


class _Session:
    def __init__(self, line: str) -> None:
        self.line = line

    async def readline(self) -> str:
        return self.line


@pytest.mark.parametrize(("reply", "pgid"), [(f"{PGID_MARK} 4242\n", 4242),
                                             (f"{PGID_MARK} 1\n", None),
                                             (f"{PGID_MARK} 0\n", None),
                                             (f"{PGID_MARK} -7\n", None)])
def test_a_hosts_reply_of_group_1_or_below_is_no_group(reply, pgid):
    async def read() -> int | None:
        rp = RemoteProcess.__new__(RemoteProcess)
        rp._session = _Session(reply)  # type: ignore[assignment]
        rp.pgid = None
        await rp._read_pgid()
        return rp.pgid

    assert asyncio.run(read()) == pgid
