"""`abtui recover` without hosts: nothing pending, and --dry-run listing a dead writer's journal.

`python -m abtui recover` is run once as a user runs it; the other runs call the command's
main in this process (a Python each cost 0.3 s of `make check`'s CPU, eight of them)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

import pytest

from abtui import cli

ROOT = Path(__file__).resolve().parents[3]


@dataclass
class Done:
    returncode: int
    stdout: str
    stderr: str


@pytest.fixture
def recover(monkeypatch, capsys):  # type: ignore[no-untyped-def]
    """`abtui recover ARGS` with the state directory `state`: its exit code and output."""
    def run(state: Path, *args: str) -> Done:
        monkeypatch.setenv("XDG_STATE_HOME", str(state))
        capsys.readouterr()
        code = cli.main(["recover", *args])
        out = capsys.readouterr()
        return Done(code, out.out, out.err)

    return run


def test_nothing_pending_and_dry_run(tmp_path, recover):
    none = subprocess.run([sys.executable, "-m", "abtui", "recover"], cwd=ROOT,
                          env={**os.environ, "XDG_STATE_HOME": str(tmp_path)},
                          capture_output=True, text=True, timeout=60)
    assert (none.returncode, none.stdout.strip()) == (0, "nothing to recover")
    undo = tmp_path / "abtui" / "undo"
    undo.mkdir(parents=True)
    records = [{"op": "start", "pid": 999999997},
               {"op": "host", "alias": "h1", "ssh_config": None, "known_hosts": None},
               {"op": "original", "host": "h1", "kind": "sysctl", "key": "net.x",
                "device": None, "value": "1"},
               {"op": "tunnel", "host": "h1", "type": "vxlan", "ifname": "abv1sabcd"},
               {"op": "pgid", "host": "h1", "pgid": 4242, "what": "iperf3"}]
    (undo / "x.jsonl").write_text("".join(json.dumps(r) + "\n" for r in records))
    dry = recover(tmp_path, "--dry-run")
    assert dry.returncode == 0
    assert dry.stdout.splitlines() == ["h1: restore net.x = '1'", "h1: remove tunnel abv1sabcd",
                                       "h1: end process group 4242 (iperf3)"]
    assert (undo / "x.jsonl").exists()  # a dry run changes nothing


def _journal(undo: Path, name: str, hosts: dict[str, Path | None]) -> Path:
    """A dead writer's journal: one sysctl changed on each host."""
    records: list[dict[str, object]] = [{"op": "start", "pid": 999999996}]
    for alias, config in hosts.items():
        records += [{"op": "host", "alias": alias, "ssh_config": str(config) if config else None,
                     "known_hosts": None},
                    {"op": "original", "host": alias, "kind": "sysctl", "key": "net.x",
                     "device": None, "value": "1"},
                    {"op": "pgid", "host": alias, "pgid": 4242, "what": "iperf3"}]
    undo.mkdir(parents=True, exist_ok=True)
    path = undo / name
    path.write_text("".join(json.dumps(r) + "\n" for r in records))
    return path


def _gone_config(tmp_path: Path, *aliases: str) -> Path:
    """An ssh_config sending each alias to a closed port on loopback: refused at once, as a
    host that is gone."""
    config = tmp_path / "ssh_config"
    config.write_text("".join(f"Host {a}\n  HostName 127.0.0.1\n  Port 1\n" for a in aliases))
    return config


def test_hosts_that_are_gone_give_one_line_each_and_can_be_forgotten(tmp_path, recover):
    """A journal whose hosts no longer exist (a lab taken down): recover says, in one line
    per host, what it could not do and how to forget it, exit 1, and keeps the journal;
    --forget HOST drops that host's entries without contacting it; --forget-unreachable the
    rest; then nothing is left to recover (or to warn about)."""
    config = _gone_config(tmp_path, "gone-a", "gone-b")
    undo = tmp_path / "abtui" / "undo"
    journal = _journal(undo, "j.jsonl", {"gone-a": config, "gone-b": config})
    first = recover(tmp_path)
    assert first.returncode == 1, first.stdout + first.stderr
    lines = first.stdout.splitlines()
    assert len(lines) == 2, lines
    for line, host in zip(lines, ("gone-a", "gone-b"), strict=True):
        assert line.startswith(f"FAIL {host}: cannot reconnect (")
        assert "1 setting, 1 process group left" in line
        assert line.endswith(f"`abtui recover --forget {host}`)")
    assert journal.exists()
    bad = recover(tmp_path, "--forget", "nosuch")
    assert bad.returncode == 2
    assert bad.stderr.strip() == ("abtui: --forget nosuch: no pending change names host "
                                  "'nosuch' (pending: gone-a, gone-b)")
    one = recover(tmp_path, "--forget", "gone-a")
    assert one.returncode == 1
    assert one.stdout.splitlines()[0] == ("ok   gone-a: forgot 1 setting, 1 process group "
                                          "(the host was not contacted)")
    assert [ln.split(":")[0] for ln in one.stdout.splitlines()[1:]] == ["FAIL gone-b"]
    rest = recover(tmp_path, "--forget-unreachable")
    assert rest.returncode == 0, rest.stdout + rest.stderr
    assert rest.stdout.splitlines()[0].startswith("ok   gone-b: cannot reconnect (")
    assert rest.stdout.splitlines()[0].endswith("; forgot 1 setting, 1 process group")
    assert not journal.exists()
    assert recover(tmp_path).stdout.strip() == "nothing to recover"


def test_dry_run_shows_what_would_be_forgotten(tmp_path, recover):
    config = _gone_config(tmp_path, "gone-a")
    journal = _journal(tmp_path / "abtui" / "undo", "j.jsonl", {"gone-a": config, "h2": None})
    dry = recover(tmp_path, "--dry-run", "--forget", "gone-a")
    assert dry.returncode == 0
    assert dry.stdout.splitlines() == [
        "gone-a: forget 1 setting, 1 process group (the host is not contacted)",
        "h2: restore net.x = '1'", "h2: end process group 4242 (iperf3)"]
    assert journal.exists()
