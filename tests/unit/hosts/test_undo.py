"""The undo journal: fsync'ed records, replay of what is still to undo, damaged files."""

from __future__ import annotations

import os

from abtui.hosts.undo import HostRecord, UndoJournal, append_record, pending_recovery, read_journal
from abtui.hosts.undo_records import Restored


def test_journal_tracks_what_is_left_to_undo(tmp_path):
    j = UndoJournal(tmp_path)
    j.host(HostRecord("h1", "/cfg", "/kh", True))
    j.host(HostRecord("h1", "/cfg", "/kh", True))  # once only
    assert j.original("h1", "sysctl", "net.x", None, "1", "k")
    assert not j.original("h1", "sysctl", "net.x", None, "2", "k")  # first value wins
    j.original("h1", "ethtool-feature", "tso", "data0", "on", "t")
    j.tunnel_up("h1", {"type": "vxlan", "ifname": "abv1sabcd"})
    j.record_pgid("h1", 4242, "iperf3")
    j.record_pgid("h1", 4343, "ping")
    j.forget_pgid("h1", 4343)
    j.restored("h1", "ethtool-feature", "tso", "data0")
    j.close()
    p = read_journal(j.path)
    assert p.pid == os.getpid()
    assert p.hosts["h1"] == HostRecord("h1", "/cfg", "/kh", True)
    assert p.originals == {("h1", "sysctl", "net.x", None): "1"}
    assert list(p.tunnels) == [("h1", "abv1sabcd")]
    assert p.pgids == {("h1", 4242): "iperf3"}
    assert (os.stat(j.path).st_mode & 0o777) == 0o600
    # a live writer's journal (ours) is not offered for recovery
    assert pending_recovery(tmp_path) == []


def test_pending_skips_live_writers_and_drops_empty_journals(tmp_path):
    live = tmp_path / "live.jsonl"
    live.write_text('{"op":"start","pid":1}\n{"op":"original","host":"h","kind":"sysctl",'
                    '"key":"a.b","device":null,"value":"1"}\n')
    empty = tmp_path / "empty.jsonl"
    empty.write_text('{"op":"start","pid":999999999}\n')
    dead = tmp_path / "dead.jsonl"
    dead.write_text('{"op":"start","pid":999999998}\n'
                    '{"op":"original","host":"h","kind":"sysctl","key":"a.b","device":null,'
                    '"value":"1"}\nnot json at all\n[1,2]\n{"op":"original","host":')
    found = pending_recovery(tmp_path)
    assert [p.path for p in found] == [dead]  # pid 1 is alive; the empty one is removed
    assert not empty.exists()
    append_record(dead, Restored("h", "sysctl", "a.b", None))
    assert read_journal(dead).empty


def test_finish_removes_the_journal(tmp_path):
    j = UndoJournal(tmp_path)
    j.original("h", "sysctl", "a.b", None, "1")
    j.finish()
    assert not j.path.exists()
    assert pending_recovery(tmp_path) == []
    assert read_journal(tmp_path / "missing.jsonl").empty


def test_unchanged_and_forgotten_entries_are_not_left_to_undo(tmp_path):
    """`unchanged`: a refused write left the original in place; `forget`: a host that is
    gone (abtui recover --forget) has nothing left, whatever it had."""
    from abtui.hosts.undo import forget_host, left_on

    j = UndoJournal(tmp_path)
    j.original("h1", "sysctl", "net.core.rmem_max", None, "212992", "rmemmax")
    j.unchanged("h1", "sysctl", "net.core.rmem_max", None)
    assert read_journal(j.path).empty
    j.original("h1", "sysctl", "net.x", None, "1")
    j.original("h2", "sysctl", "net.x", None, "1")
    j.tunnel_up("h2", {"type": "vxlan", "ifname": "abv1r"})
    j.record_pgid("h2", 77, "ping")
    j.close()
    p = read_journal(j.path)
    assert p.involved == ["h1", "h2"]
    assert left_on([p, p], "h2") == "2 settings, 2 tunnels, 2 process groups"
    forget_host([p], "h2")
    assert p.involved == ["h1"] and left_on([p], "h2") == ""
    p = read_journal(j.path)
    assert p.involved == ["h1"] and left_on([p], "h1") == "1 setting"


def test_recover_ends_a_group_only_while_it_runs_the_program_it_started():
    """`abtui recover`'s test (abtui.remote.streams.group_runs_command) on this machine's
    ps: a group of that number running another program is someone else's."""
    import subprocess

    from abtui.remote.streams import group_runs_command

    proc = subprocess.Popen(["sleep", "30"], start_new_session=True)
    try:
        def runs(what: str) -> bool:
            return subprocess.run(["sh", "-c", group_runs_command(proc.pid, what)]).returncode == 0

        assert runs("/usr/bin/sleep 30") and runs("")
        assert not runs("iperf3 -s -p 5201")
    finally:
        proc.kill()
        proc.wait()
    assert not runs("")  # ended: nothing of that group is left
