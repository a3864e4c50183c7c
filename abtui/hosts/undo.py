"""A crash-safe undo journal: what abtui changed on hosts, so it can be set back.

One append-only JSON-lines file per controller process under
`user_state_dir("abtui")/undo/`, each line fsync'ed before the change it describes is made
(the lines of one flip's hosts together, `UndoJournal.batch`):
the hosts (alias and ssh options), the original value of every setting touched, the build
(kernel or module) each host ran before its first switch, tunnels brought up, remote process
groups started. A clean exit deletes the file; after a crash,
`abtui recover` (or the next start, via `pending_recovery()`) replays what is left.
"""

from __future__ import annotations

import contextlib
import json
import os
import time
from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from platformdirs import user_state_dir

from abtui.core.pids import pid_alive


def undo_dir() -> Path:
    return Path(user_state_dir("abtui")) / "undo"


@dataclass(slots=True)
class HostRecord:
    alias: str
    ssh_config: str | None = None
    known_hosts: str | None = None
    sudo: bool = False


@dataclass(slots=True)
class Pending:
    """What a journal says is still to be undone."""

    path: Path
    pid: int | None
    hosts: dict[str, HostRecord] = field(default_factory=dict)
    # (host, kind, key, device) -> original value
    originals: dict[tuple[str, str, str, str | None], str] = field(default_factory=dict)
    # (host, ifname) -> the tunnel's record
    tunnels: dict[tuple[str, str], dict[str, Any]] = field(default_factory=dict)
    # (host, pgid) -> what was started
    pgids: dict[tuple[str, int], str] = field(default_factory=dict)
    # (host, knob) -> the build it ran before abtui first switched it (abtui.hosts.builds)
    builds: dict[tuple[str, str], dict[str, Any]] = field(default_factory=dict)

    @property
    def empty(self) -> bool:
        return not (self.originals or self.tunnels or self.pgids or self.builds)

    @property
    def involved(self) -> list[str]:
        """The hosts with something left to undo, sorted."""
        return sorted({str(k[0]) for k in (*self.originals, *self.tunnels, *self.pgids,
                                           *self.builds)})

    def forget(self, host: str) -> None:
        """Drop every entry of `host` here (forget_host writes it to the file)."""
        self.builds = {k: v for k, v in self.builds.items() if k[0] != host}
        self.originals = {k: v for k, v in self.originals.items() if k[0] != host}
        self.tunnels = {k: v for k, v in self.tunnels.items() if k[0] != host}
        self.pgids = {k: v for k, v in self.pgids.items() if k[0] != host}


class UndoJournal:
    """The writing side; one per controller process. Every record is fsync'ed: on its own,
    or with the others of a `batch`."""

    def __init__(self, directory: Path | None = None) -> None:
        self.directory = directory or undo_dir()
        self.directory.mkdir(parents=True, exist_ok=True)
        os.chmod(self.directory, 0o700)
        self.path = self.directory / f"{time.strftime('%Y%m%dT%H%M%S')}-{os.getpid()}.jsonl"
        fd = os.open(self.path, os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o600)
        self._fh = os.fdopen(fd, "ab")
        self._hosts: set[str] = set()
        self._originals: set[tuple[str, str, str, str | None]] = set()
        self._batching = 0
        self._unsynced = False  # lines a batch wrote that are not fsync'ed yet
        self._write({"op": "start", "pid": os.getpid(), "t": time.time()})

    def _write(self, record: dict[str, Any]) -> None:
        if self._batching:
            self._fh.write(_line(record))
            self._unsynced = True
        else:
            _write_line(self._fh, record)

    @contextlib.contextmanager
    def batch(self) -> Iterator[None]:
        """The records written inside reach the disk together, with one fsync on the way out
        (also when it is left by an exception), before the changes they describe are made:
        a flip's first touch of a setting on 4 hosts is 1 fsync, not 8 (a host's record and
        its original's, each); a batch that wrote nothing costs none."""
        self._batching += 1
        try:
            yield
        finally:
            self._batching -= 1
            if not self._batching and self._unsynced:
                self._unsynced = False
                _sync(self._fh)

    def host(self, rec: HostRecord) -> None:
        """How to reach a host again (written once per host, before anything is changed)."""
        if rec.alias in self._hosts:
            return
        self._hosts.add(rec.alias)
        self._write({"op": "host", "alias": rec.alias, "ssh_config": rec.ssh_config,
                     "known_hosts": rec.known_hosts, "sudo": rec.sudo})

    def original(self, host: str, kind: str, key: str, device: str | None, value: str,
                 knob: str = "") -> bool:
        """Record a setting's value before abtui first changes it; False if already recorded."""
        ident = (host, kind, key, device)
        if ident in self._originals:
            return False
        self._originals.add(ident)
        self._write({"op": "original", "host": host, "kind": kind, "key": key,
                     "device": device, "value": value, "knob": knob})
        return True

    def restored(self, host: str, kind: str, key: str, device: str | None) -> None:
        self._originals.discard((host, kind, key, device))
        self._write({"op": "restored", "host": host, "kind": kind, "key": key,
                     "device": device})

    def unchanged(self, host: str, kind: str, key: str, device: str | None) -> None:
        """A recorded setting was never changed after all (its write was refused): nothing
        to set back, so neither the exit nor `abtui recover` tries."""
        self._originals.discard((host, kind, key, device))
        self._write({"op": "unchanged", "host": host, "kind": kind, "key": key,
                     "device": device})

    def build(self, host: str, knob: str, record: dict[str, Any]) -> None:
        """The build `host` ran before abtui first switched `knob` there, and how to come
        back to it (abtui.hosts.builds.record)."""
        self._write({"op": "build", "host": host, "knob": knob, **record})

    def build_restored(self, host: str, knob: str) -> None:
        """`host` is back on that build."""
        self._write({"op": "build_restored", "host": host, "knob": knob})

    def tunnel_up(self, host: str, record: dict[str, Any]) -> None:
        self._write({"op": "tunnel", "host": host, **record})

    def tunnel_down(self, host: str, ifname: str) -> None:
        self._write({"op": "tunnel_down", "host": host, "ifname": ifname})

    def record_pgid(self, host: str, pgid: int, what: str = "") -> None:
        """A remote process group abtui started (the engine calls this for iperf3/ping)."""
        self._write({"op": "pgid", "host": host, "pgid": int(pgid), "what": what})

    def forget_pgid(self, host: str, pgid: int) -> None:
        """That process group has ended (or was ended): nothing to kill any more."""
        self._write({"op": "pgid_gone", "host": host, "pgid": int(pgid)})

    def finish(self) -> None:
        """Everything was set back: the journal is no longer needed."""
        with contextlib.suppress(OSError):
            self._fh.close()
        with contextlib.suppress(OSError):
            self.path.unlink()

    def close(self) -> None:
        """Stop writing but keep the file (something is left to recover)."""
        with contextlib.suppress(OSError):
            self._fh.close()


def append_record(path: Path, record: dict[str, Any]) -> None:
    """Append one record to a journal (recover notes what it set back), fsync'ed. A line a
    crash cut short is ended first, so the new record stays readable."""
    with path.open("a+b") as fh:
        fh.seek(0, os.SEEK_END)
        if fh.tell():
            fh.seek(-1, os.SEEK_END)
            if fh.read(1) != b"\n":
                fh.write(b"\n")
        _write_line(fh, record)


def left_on(pending: Iterable[Pending], host: str) -> str:
    """What the journals still hold for `host`, counted: "2 settings, 1 tunnel" ("": none)."""
    counts = {"build": 0, "setting": 0, "tunnel": 0, "process group": 0}
    for p in pending:
        counts["build"] += sum(k[0] == host for k in p.builds)
        counts["setting"] += sum(k[0] == host for k in p.originals)
        counts["tunnel"] += sum(k[0] == host for k in p.tunnels)
        counts["process group"] += sum(k[0] == host for k in p.pgids)
    return ", ".join(f"{n} {what}{'s' if n != 1 else ''}" for what, n in counts.items() if n)


def forget_host(pending: Iterable[Pending], host: str) -> None:
    """Drop every entry of `host` from dead writers' journals, setting nothing back: for a
    host that is gone for good (`abtui recover --forget`)."""
    for p in pending:
        if host in p.involved:
            append_record(p.path, {"op": "forget", "host": host})
            p.forget(host)


def _line(record: dict[str, Any]) -> bytes:
    return (json.dumps(record, separators=(",", ":")) + "\n").encode()


def _write_line(fh: Any, record: dict[str, Any]) -> None:
    fh.write(_line(record))
    _sync(fh)


def _sync(fh: Any) -> None:
    """What was written, on disk."""
    fh.flush()
    os.fsync(fh.fileno())


def read_journal(path: Path) -> Pending:
    """What a journal still asks to undo. Never raises on a damaged file: bad lines are skipped
    (a crash can cut the last line short)."""
    pending = Pending(path=path, pid=None)
    try:
        text = path.read_text(encoding="utf-8", errors="replace")
    except OSError:
        return pending
    for line in text.splitlines():
        try:
            rec = json.loads(line)
        except ValueError:
            continue
        if isinstance(rec, dict):
            with contextlib.suppress(KeyError, TypeError, ValueError):
                _apply(pending, rec)
    return pending


def _apply(p: Pending, rec: dict[str, Any]) -> None:
    op = rec.get("op")
    if op == "start":
        p.pid = int(rec["pid"])
    elif op == "host":
        p.hosts[str(rec["alias"])] = HostRecord(str(rec["alias"]), rec.get("ssh_config"),
                                                rec.get("known_hosts"), bool(rec.get("sudo")))
    elif op == "original":
        ident = (str(rec["host"]), str(rec["kind"]), str(rec["key"]), rec.get("device"))
        p.originals.setdefault(ident, str(rec["value"]))
    elif op in ("restored", "unchanged"):
        p.originals.pop((str(rec["host"]), str(rec["kind"]), str(rec["key"]),
                         rec.get("device")), None)
    elif op == "build":
        p.builds.setdefault((str(rec["host"]), str(rec["knob"])), rec)
    elif op == "build_restored":
        p.builds.pop((str(rec["host"]), str(rec["knob"])), None)
    elif op == "tunnel":
        p.tunnels[(str(rec["host"]), str(rec["ifname"]))] = rec
    elif op == "tunnel_down":
        p.tunnels.pop((str(rec["host"]), str(rec["ifname"])), None)
    elif op == "pgid":
        p.pgids[(str(rec["host"]), int(rec["pgid"]))] = str(rec.get("what", ""))
    elif op == "pgid_gone":
        p.pgids.pop((str(rec["host"]), int(rec["pgid"])), None)
    elif op == "forget":
        p.forget(str(rec["host"]))


def _alive(pid: int | None) -> bool:
    """Is the journal's writer still running (this process included)?"""
    return pid is not None and pid_alive(pid)


def pending_recovery(directory: Path | None = None) -> list[Pending]:
    """Journals left by abtui processes that are gone, with something still to undo.

    The UI/engine calls this on start to offer recovery; `abtui recover` acts on them."""
    d = directory or undo_dir()
    out = []
    for path in sorted(d.glob("*.jsonl")) if d.is_dir() else []:
        p = read_journal(path)
        if _alive(p.pid):
            continue
        if p.empty:
            with contextlib.suppress(OSError):
                path.unlink()
            continue
        out.append(p)
    return out


def recovery_notice(directory: Path | None = None) -> str | None:
    """One line offering `abtui recover` when an earlier abtui left changes on hosts."""
    try:
        pending = pending_recovery(directory)
    except OSError:
        return None
    if not pending:
        return None
    hosts = sorted({h for p in pending for h in p.involved})
    return (f"an earlier abtui (killed, or its hosts unreachable) left changes on "
            f"{', '.join(hosts) or 'hosts'}: run `abtui recover` to set them back")
