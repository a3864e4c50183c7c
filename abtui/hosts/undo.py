"""A crash-safe undo journal: what abtui changed on hosts, so it can be set back.

One append-only JSON-lines file per controller process under
`user_state_dir("abtui")/undo/`, each line fsync'ed before the change it describes is made
(the lines of one flip's hosts together, `UndoJournal.batch`):
the hosts (alias and ssh options), the original value of every setting touched and each value
abtui writes there (`wrote`, once per value: so `abtui recover` can tell a value that is no
longer abtui's, someone else's since, and leave it), a setting found changed by someone else
(`foreign`), the build (kernel or module) each host ran before its first switch, tunnels
brought up, remote process groups started (with when, so a later abtui ends only those very
processes: abtui.hosts.leftovers). A clean exit deletes the file; after a crash,
`abtui recover` (or the next start, via `pending_recovery()`) replays what is left.

Each line is a typed record of `abtui.hosts.undo_records` (`"op"` its kind), written and read
back through it: the format every earlier abtui wrote.
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

from abtui.core.errors import WriteFailed
from abtui.core.files import why
from abtui.core.pids import pid_alive
from abtui.hosts.journal_dir import undo_dir
from abtui.hosts.undo_records import (
    RECORDS,
    BuildRestored,
    BuildSaved,
    Foreign,
    Forget,
    GroupGone,
    GroupStarted,
    HostRecord,
    Original,
    Restored,
    Start,
    TunnelDown,
    TunnelUp,
    Unchanged,
    UndoRecord,
    Wrote,
    problem_of,
    setting,
)

__all__ = ["HostRecord", "Pending", "Skipped", "UndoJournal", "append_record", "forget_host",
           "left_on", "pending_recovery", "read_journal", "undo_dir"]


@dataclass(frozen=True, slots=True)
class Skipped:
    """A journal entry this abtui could not use: its host (None: it names none), the one
    line that says where and why, and whether the journal is kept for it (a kind this abtui
    does not know, which a newer one may undo)."""

    host: str | None
    line: str
    keep: bool


@dataclass(slots=True)
class Pending:
    """What a journal says is still to be undone."""

    path: Path
    pid: int | None
    hosts: dict[str, HostRecord] = field(default_factory=dict)
    # (host, kind, key, device) -> original value
    originals: dict[tuple[str, str, str, str | None], str] = field(default_factory=dict)
    # (host, ifname) -> the tunnel's record
    tunnels: dict[tuple[str, str], TunnelUp] = field(default_factory=dict)
    # (host, pgid) -> what was started
    pgids: dict[tuple[str, int], str] = field(default_factory=dict)
    # (host, pgid) -> when it was started (time.time() of the controller; None: not recorded)
    started: dict[tuple[str, int], float] = field(default_factory=dict)
    # (host, kind, key, device) -> every value abtui wrote there (empty: not recorded)
    written: dict[tuple[str, str, str, str | None], list[str]] = field(default_factory=dict)
    # (host, kind, key, device) -> the value someone else set, found by a live session
    foreign: dict[tuple[str, str, str, str | None], str] = field(default_factory=dict)
    # (host, knob) -> the build it ran before abtui first switched it (abtui.hosts.builds)
    builds: dict[tuple[str, str], BuildSaved] = field(default_factory=dict)
    # entries this abtui cannot use, one line each (`read_journal`)
    skipped: list[Skipped] = field(default_factory=list)

    @property
    def empty(self) -> bool:
        """Nothing left to undo: the journal may go. An entry of a kind this abtui does not
        know keeps it (a newer abtui may undo it; `--forget` its host drops it)."""
        return not (self.originals or self.tunnels or self.pgids or self.builds or
                    any(k.keep for k in self.skipped))

    def skip(self, host: str | None, line: str, keep: bool) -> None:
        self.skipped.append(Skipped(host, line, keep and host is not None))

    @property
    def involved(self) -> list[str]:
        """The hosts with something left to undo, sorted."""
        return sorted({str(k[0]) for k in (*self.originals, *self.tunnels, *self.pgids,
                                           *self.builds)} |
                      {k.host for k in self.skipped if k.keep and k.host is not None})

    def forget(self, host: str) -> None:
        """Drop every entry of `host` here (forget_host writes it to the file)."""
        self.builds = {k: v for k, v in self.builds.items() if k[0] != host}
        self.originals = {k: v for k, v in self.originals.items() if k[0] != host}
        self.tunnels = {k: v for k, v in self.tunnels.items() if k[0] != host}
        self.pgids = {k: v for k, v in self.pgids.items() if k[0] != host}
        self.started = {k: v for k, v in self.started.items() if k[0] != host}
        self.skipped = [k for k in self.skipped if k.host != host]

    def take(self, record: UndoRecord) -> None:
        """What one line of the journal does to what is pending: its kind's `on_<op>`."""
        getattr(self, f"on_{record.OP}")(record)

    def on_start(self, r: Start) -> None:
        self.pid = r.pid

    def on_host(self, r: HostRecord) -> None:
        self.hosts[r.alias] = r

    def on_original(self, r: Original) -> None:
        self.originals.setdefault(setting(r), r.value)

    def on_restored(self, r: Restored | Unchanged) -> None:
        self.originals.pop(setting(r), None)

    on_unchanged = on_restored

    def on_wrote(self, r: Wrote) -> None:
        values = self.written.setdefault(setting(r), [])
        if r.value not in values:
            values.append(r.value)

    def on_foreign(self, r: Foreign) -> None:
        self.foreign[setting(r)] = r.value

    def on_tunnel(self, r: TunnelUp) -> None:
        self.tunnels[(r.host, r.ifname)] = r

    def on_tunnel_down(self, r: TunnelDown) -> None:
        self.tunnels.pop((r.host, r.ifname), None)

    def on_pgid(self, r: GroupStarted) -> None:
        self.pgids[(r.host, r.pgid)] = r.what
        if r.t is not None:
            self.started[(r.host, r.pgid)] = float(r.t)

    def on_pgid_gone(self, r: GroupGone) -> None:
        self.pgids.pop((r.host, r.pgid), None)
        self.started.pop((r.host, r.pgid), None)

    def on_build(self, r: BuildSaved) -> None:
        self.builds.setdefault((r.host, r.knob), r)

    def on_build_restored(self, r: BuildRestored) -> None:
        self.builds.pop((r.host, r.knob), None)

    def on_forget(self, r: Forget) -> None:
        self.forget(r.host)


class UndoJournal:
    """The writing side; one per controller process. Every record is fsync'ed: on its own,
    or with the others of a `batch`.

    A record of what is about to change (a host, an original, a tunnel) that cannot be
    written raises WriteFailed, before the change: nothing is ever changed that the journal
    does not hold. From then on the journal is broken and every such record raises, so no
    later change is made either; records of what was set back or has ended are let go (the
    set-back goes on)."""

    def __init__(self, directory: Path | None = None) -> None:
        self.directory = directory or undo_dir()
        self.path = self.directory / f"{time.strftime('%Y%m%dT%H%M%S')}-{os.getpid()}.jsonl"
        self.broken: str | None = None  # why records can no longer be written
        try:
            self.directory.mkdir(parents=True, exist_ok=True)
            os.chmod(self.directory, 0o700)
            fd = os.open(self.path, os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o600)
        except OSError as exc:
            raise WriteFailed(self._why(exc)) from None
        self._fh = os.fdopen(fd, "ab")
        self._hosts: set[str] = set()
        self._originals: set[tuple[str, str, str, str | None]] = set()
        self._wrote: set[tuple[str, str, str, str | None, str]] = set()
        self._batching = 0
        self._unsynced = False  # lines a batch wrote that are not fsync'ed yet
        self._write(Start(os.getpid(), time.time()))

    def _why(self, exc: OSError) -> str:
        return (f"{self.path}: cannot write the undo journal ({why(exc)}); nothing more is "
                "changed on hosts")

    def _broke(self, exc: OSError) -> WriteFailed:
        self.broken = self.broken or self._why(exc)
        return WriteFailed(self.broken)

    def _usable(self) -> None:
        """WriteFailed once the journal is broken: a record written before (and kept in
        memory) may never have reached the disk."""
        if self.broken is not None:
            raise WriteFailed(self.broken)

    def _write(self, record: UndoRecord, *, before_change: bool = True) -> None:
        """One record; `before_change`: it must be on disk before what it describes happens
        (WriteFailed if it cannot be), else it is let go when it cannot be written."""
        if self.broken is not None:
            if before_change:
                raise WriteFailed(self.broken)
            return
        try:
            if self._batching:
                self._fh.write(_line(record))
                self._unsynced = True
            else:
                _write_line(self._fh, record)
        except OSError as exc:
            failed = self._broke(exc)
            if before_change:
                raise failed from None

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
                try:
                    _sync(self._fh)
                except OSError as exc:
                    raise self._broke(exc) from None

    def host(self, rec: HostRecord) -> None:
        """How to reach a host again (written once per host, before anything is changed)."""
        self._usable()
        if rec.alias in self._hosts:
            return
        self._write(rec)
        self._hosts.add(rec.alias)

    def original(self, host: str, kind: str, key: str, device: str | None, value: str,
                 knob: str = "") -> bool:
        """Record a setting's value before abtui first changes it; False if already recorded."""
        self._usable()
        ident = (host, kind, key, device)
        if ident in self._originals:
            return False
        self._write(Original(host, kind, key, device, value=value, knob=knob))
        self._originals.add(ident)
        return True

    def wrote(self, host: str, kind: str, key: str, device: str | None, value: str) -> bool:
        """Record a value abtui is about to write to a setting (once per value: a flip back
        and forth costs nothing after the first of each), before it is written: so
        `abtui recover` can tell a value that is no longer abtui's. False if already
        recorded."""
        self._usable()
        ident = (host, kind, key, device, " ".join(value.split()))
        if ident in self._wrote:
            return False
        self._write(Wrote(host, kind, key, device, value=value))
        self._wrote.add(ident)
        return True

    def foreign(self, host: str, kind: str, key: str, device: str | None, value: str) -> None:
        """A setting abtui set was found changed by someone else to `value`: no longer
        abtui's, never overwritten, left as found by the exit and by `abtui recover`."""
        self._write(Foreign(host, kind, key, device, value=value), before_change=False)

    def restored(self, host: str, kind: str, key: str, device: str | None,
                 left: str | None = None) -> None:
        """Set back; or (`left`: the value found) left as it is, since it was no longer the
        value abtui wrote: nothing for `abtui recover` either way."""
        self._originals.discard((host, kind, key, device))
        self._write(Restored(host, kind, key, device, left=left), before_change=False)

    def unchanged(self, host: str, kind: str, key: str, device: str | None) -> None:
        """A recorded setting was never changed after all (its write was refused): nothing
        to set back, so neither the exit nor `abtui recover` tries."""
        self._originals.discard((host, kind, key, device))
        self._write(Unchanged(host, kind, key, device), before_change=False)

    def build(self, host: str, knob: str, record: dict[str, Any]) -> None:
        """The build `host` ran before abtui first switched `knob` there, and how to come
        back to it (abtui.hosts.builds.record)."""
        self._write(BuildSaved.from_data({"host": host, "knob": knob, **record}))

    def build_restored(self, host: str, knob: str) -> None:
        """`host` is back on that build."""
        self._write(BuildRestored(host, knob))

    def tunnel_up(self, host: str, record: dict[str, Any]) -> None:
        self._write(TunnelUp.from_data({"host": host, **record}))

    def tunnel_down(self, host: str, ifname: str) -> None:
        self._write(TunnelDown(host, ifname), before_change=False)

    def record_pgid(self, host: str, pgid: int, what: str = "") -> None:
        """A remote process group abtui started (the engine calls this for iperf3/ping, once
        it runs: this session ends it whether or not the record could be written)."""
        self._write(GroupStarted(host, int(pgid), what, time.time()), before_change=False)

    def forget_pgid(self, host: str, pgid: int) -> None:
        """That process group has ended (or was ended): nothing to kill any more."""
        self._write(GroupGone(host, int(pgid)), before_change=False)

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


def append_record(path: Path, record: UndoRecord) -> None:
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
            append_record(p.path, Forget(host))
            p.forget(host)


def _line(record: UndoRecord) -> bytes:
    return (json.dumps(record.to_data(), separators=(",", ":")) + "\n").encode()


def _write_line(fh: Any, record: UndoRecord) -> None:
    fh.write(_line(record))
    _sync(fh)


def _sync(fh: Any) -> None:
    """What was written, on disk."""
    fh.flush()
    os.fsync(fh.fileno())


def read_journal(path: Path) -> Pending:
    """What a journal still asks to undo. Never raises on a damaged file: each entry is
    checked on its own (`undo_records.problem_of`), and one this abtui cannot use (an
    unknown kind, from a newer abtui; a field of the wrong type; a process group it must
    never end) is skipped
    and said in `Pending.skipped`, the others kept. A last line a crash cut short is
    dropped without a word."""
    pending = Pending(path=path, pid=None)
    try:
        text = path.read_text(encoding="utf-8", errors="replace")
    except OSError:
        return pending
    lines = text.split("\n")
    for number, line in enumerate(lines, 1):
        if not line.strip():
            continue
        try:
            rec = json.loads(line)
        except ValueError:
            if number < len(lines):  # a whole line that is not JSON (the last: cut short)
                pending.skip(None, f"{path.name} line {number}: not a JSON entry: skipped",
                             keep=False)
            continue
        why = problem_of(rec)
        if why:
            host = rec.get("host") if isinstance(rec, dict) else None
            pending.skip(host if isinstance(host, str) else None,
                         f"{path.name} line {number}: {why}",
                         keep=isinstance(rec, dict) and rec.get("op") not in RECORDS)
            continue
        pending.take(RECORDS[rec["op"]].from_data(rec))
    return pending


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
