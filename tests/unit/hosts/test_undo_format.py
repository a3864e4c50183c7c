"""The undo journal's typed records keep the format earlier abtui wrote: a journal the
previous version left (tests/fixtures/undo/before-typed-records.jsonl, written by its
UndoJournal with the calls below) is read and recovered by this one, and this one writes
the same lines for the same calls, key for key and in the same order."""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any

from abtui.hosts.restore import describe
from abtui.hosts.undo import HostRecord, UndoJournal, append_record, read_journal
from abtui.hosts.undo_records import (
    RECORDS,
    BuildSaved,
    Forget,
    GroupStarted,
    Original,
    TunnelUp,
    problem_of,
)

ROOT = Path(__file__).resolve().parents[3]
OLD = ROOT / "tests" / "fixtures" / "undo" / "before-typed-records.jsonl"
# what `abtui recover --dry-run` says of it
DESCRIBED = ["snd: restore net.ipv4.tcp_wmem = '4096 16384 4194304'",
             "snd: remove tunnel abv1sabcd", "snd: end process group 4242 (iperf3 -s)",
             "snd: back on a (kernel)"]


def write_every_kind(j: UndoJournal) -> None:
    """One of each kind of line, through UndoJournal's own calls (the fixture's calls)."""
    with j.batch():
        j.host(HostRecord("snd", "/lab/ssh_config", "/lab/known_hosts", True))
        j.original("snd", "sysctl", "net.ipv4.tcp_congestion_control", None, "cubic", knob="cc")
    j.wrote("snd", "sysctl", "net.ipv4.tcp_congestion_control", None, "bbr")
    j.original("snd", "ethtool-feature", "tso", "eth1", "on", knob="tso")
    j.original("snd", "sysctl", "net.ipv4.tcp_wmem", None, "4096 16384 4194304", knob="wmem")
    j.wrote("snd", "sysctl", "net.ipv4.tcp_wmem", None, "4096 16384 8388608")
    j.host(HostRecord("rcv"))
    j.foreign("snd", "sysctl", "net.ipv4.tcp_congestion_control", None, "reno")
    j.restored("snd", "ethtool-feature", "tso", "eth1")
    j.restored("snd", "sysctl", "net.ipv4.tcp_congestion_control", None, left="reno")
    j.original("rcv", "sysctl", "net.ipv4.tcp_rmem", None, "4096 131072 6291456", knob="rmem")
    j.unchanged("rcv", "sysctl", "net.ipv4.tcp_rmem", None)
    j.tunnel_up("snd", {"type": "vxlan", "ifname": "abv1sabcd", "local": "198.18.1.1",
                        "remote": "198.18.1.2", "spi_out": None, "spi_in": None,
                        "os": "linux", "pair": "A"})
    j.tunnel_up("rcv", {"type": "vxlan", "ifname": "abv1rabcd", "local": "198.18.1.2",
                        "remote": "198.18.1.1", "spi_out": None, "spi_in": None,
                        "os": "linux", "pair": "A"})
    j.tunnel_down("rcv", "abv1rabcd")
    j.build("snd", "kernel", {"kind": "kernel", "key": "kernel", "value": "a", "device": None,
                              "build": {"method": "kexec", "release": "6.1.0-47-amd64"},
                              "iface": None})
    j.build("rcv", "kernel", {"kind": "kernel", "key": "kernel", "value": "a", "device": None,
                              "build": {"method": "kexec", "release": "6.1.0-47-amd64"},
                              "iface": {"name": "eth1", "mac": "52:54:00:00:00:01",
                                        "mtu": "1500", "up": True,
                                        "addresses": ["198.18.1.2/24"]}})
    j.build_restored("rcv", "kernel")
    j.record_pgid("snd", 4242, "iperf3 -s")
    j.record_pgid("snd", 4343, "ping")
    j.forget_pgid("snd", 4343)


def _items(text: str) -> list[list[tuple[str, Any]]]:
    """Each line's keys and values in order, the writer's pid and clock left out."""
    return [[(k, v) for k, v in json.loads(line).items() if k not in ("pid", "t")]
            for line in text.splitlines()]


def test_this_abtui_writes_the_lines_the_previous_one_wrote(tmp_path):
    j = UndoJournal(tmp_path)
    write_every_kind(j)
    j.close()
    append_record(j.path, Forget("gone"))
    new, old = j.path.read_text(), OLD.read_text()
    assert _items(new) == _items(old)
    assert {json.loads(line)["op"] for line in old.splitlines()} == set(RECORDS)
    assert re.sub(r'"(pid|t)":[0-9.]+', "", new) == re.sub(r'"(pid|t)":[0-9.]+', "", old)


def test_a_journal_the_previous_abtui_left_is_read_as_typed_records(tmp_path):
    old = OLD.read_text().splitlines()
    assert [problem_of(json.loads(line)) for line in old] == [""] * len(old)
    p = read_journal(OLD)
    assert p.pid == 999999990 and not p.skipped
    assert p.hosts == {"snd": HostRecord("snd", "/lab/ssh_config", "/lab/known_hosts", True),
                       "rcv": HostRecord("rcv")}
    assert p.originals == {("snd", "sysctl", "net.ipv4.tcp_wmem", None): "4096 16384 4194304"}
    assert p.written[("snd", "sysctl", "net.ipv4.tcp_wmem", None)] == ["4096 16384 8388608"]
    assert p.foreign == {("snd", "sysctl", "net.ipv4.tcp_congestion_control", None): "reno"}
    (tunnel,) = p.tunnels.values()
    assert isinstance(tunnel, TunnelUp) and (tunnel.host, tunnel.ifname) == ("snd", "abv1sabcd")
    assert tunnel.end() == {"type": "vxlan", "ifname": "abv1sabcd", "local": "198.18.1.1",
                            "remote": "198.18.1.2", "spi_out": None, "spi_in": None,
                            "os": "linux", "pair": "A"}
    (build,) = p.builds.values()
    assert isinstance(build, BuildSaved) and build.build["release"] == "6.1.0-47-amd64"
    assert p.pgids == {("snd", 4242): "iperf3 -s"}
    assert p.started == {("snd", 4242): 1796653768.5}
    assert describe(p) == DESCRIBED


def test_abtui_recover_lists_a_journal_the_previous_abtui_left(tmp_path):
    undo = tmp_path / "abtui" / "undo"
    undo.mkdir(parents=True)
    shutil.copy(OLD, undo / "20261207T120000-999999990.jsonl")
    dry = subprocess.run([sys.executable, "-m", "abtui", "recover", "--dry-run"], cwd=ROOT,
                         env={**os.environ, "XDG_STATE_HOME": str(tmp_path)},
                         capture_output=True, text=True, timeout=60)
    assert (dry.returncode, dry.stderr) == (0, "")
    assert dry.stdout.splitlines() == DESCRIBED


def test_lines_of_older_journals_still_read_their_defaults():
    """Journals from before `knob`, a process group's clock and a tunnel's `os` (a Linux
    end): the keys left out take their defaults, and a line read and written again is the
    same line."""
    original = {"op": "original", "host": "h", "kind": "sysctl", "key": "net.x",
                "device": None, "value": "1"}
    assert problem_of(original) == ""
    assert Original.from_data(original) == Original("h", "sysctl", "net.x", None, value="1")
    group = {"op": "pgid", "host": "h", "pgid": 4242}
    assert problem_of(group) == "" and GroupStarted.from_data(group).t is None
    tunnel = {"op": "tunnel", "host": "h", "type": "vxlan", "ifname": "abv1sabcd",
              "vni": 42}
    assert problem_of(tunnel) == ""
    read = TunnelUp.from_data(tunnel)
    assert read.os is None and dict(read.extra) == {"vni": 42}
    assert read.to_data()["vni"] == 42
