"""A host's lease: one controller drives a host at a time.

The control shell (abtui.remote.link.ControlShell) takes an exclusive lock on a file of the
host's own (`/run/lock`, else `/var/run`, else `/tmp`; named for the host's name and, on
Linux, its network namespace: the lab's hosts share one file system) and keeps the locked
descriptor open as long as it lives, so the lease lasts exactly as long as the link: a
dropped link, a killed controller or a dead machine ends the shell (once the host's sshd
notices the connection gone: at once for a closed one, after its ClientAlive probes for a
silent one) and with it the lock, with nothing to clean up. The file names the holder
(user, machine, PID, start, which of its links, and the host's shell that holds it), for
the one line a second controller refuses with; another link of the same process is refused
like any other controller.

The lock is flock(2)'s, taken on the open descriptor: util-linux `flock -n 7` on Linux,
`lockf -s -t 0 7` on FreeBSD (14.1 and later lock a descriptor). Commands the shell runs
get the descriptor closed (the framing's `7>&-`), so a daemon one starts never inherits the
lease. A holder that is this very link (a reconnect whose old shell the host has not
noticed gone) or a process of this machine that has ended is gone: its shell is ended (only
while the file still names it and, where /proc tells, it holds the file open) and the lease
taken over.
"""

from __future__ import annotations

import contextlib
import functools
import getpass
import os
import shlex
import socket
import time
from dataclasses import dataclass
from enum import StrEnum
from pathlib import Path

from abtui.core.pids import pid_alive
from abtui.core.text import visible

FD = 7  # the lease's descriptor in the control shell (one digit: POSIX sh's redirections)
LOCK_DIRS = ("/run/lock", "/var/run", "/tmp")
# Lock the open descriptor without waiting (`{wait}`: seconds to wait instead), per tool: the
# first one the host has is used.
LOCK_TOOLS = (("flock", f"flock -n {FD}", "flock -w {wait} " + str(FD)),
              ("lockf", f"lockf -s -t 0 {FD}", "lockf -s -t {wait} " + str(FD)))
TAKEOVER_WAIT_S = 5  # for a gone holder's shell to end once it was killed
MARK = "abtui-lease"  # the first word of the file's line, and of each reply line


class LeaseState(StrEnum):
    TAKEN = "taken"
    HELD = "held"  # by another controller: `holder` says who
    NONE = "none"  # no lease could be taken (no lock tool, no writable folder): `why`


@dataclass(frozen=True, slots=True)
class Controller:
    """Who holds a lease: a user on a machine, an abtui process and when it started."""

    user: str
    machine: str
    pid: int
    start: int  # seconds since the epoch
    # where its PID means something: this boot of the machine and its PID namespace (a
    # hostname alone is shared by containers and copied machines); "" where unknown
    where: str = ""

    def line(self) -> str:
        return (f"user={self.user} machine={self.machine} pid={self.pid} start={self.start}"
                f"{f' where={self.where}' if self.where else ''}")

    def describe(self) -> str:
        when = time.strftime("%Y-%m-%d %H:%M:%S", time.localtime(self.start))
        return f"{self.user}@{self.machine}, pid {self.pid}, started {when}"

    def same(self, other: Controller) -> bool:
        return self == other


@functools.cache
def this_controller() -> Controller:
    """This process, once: the same identity on every link and reconnect."""
    try:
        user = getpass.getuser()
    except (KeyError, OSError):
        user = str(os.getuid())
    return Controller(_word(user), _word(socket.gethostname()), os.getpid(),
                      process_start(os.getpid()) or int(time.time()), pid_space())


def pid_space() -> str:
    """This machine's boot and PID namespace, as one word ("" where /proc cannot say): two
    controllers whose PIDs can be compared have the same."""
    try:
        boot = Path("/proc/sys/kernel/random/boot_id").read_text().strip()
        space = os.readlink("/proc/self/ns/pid")
    except OSError:
        return ""
    digits = "".join(c for c in space if c.isdigit())
    return _word(f"{boot}:{digits}") if boot and digits else ""


def _word(text: str) -> str:
    """A name as one word of the lease line (no spaces, no `=`, printable)."""
    return "".join(c if c.isprintable() and c not in " =\t" else "_" for c in text) or "?"


def process_start(pid: int) -> int | None:
    """When local process `pid` started (seconds since the epoch, from /proc), None where
    that cannot be read: a PID reused by another process has another start."""
    try:
        with open(f"/proc/{pid}/stat") as fh:
            ticks = int(fh.read().rsplit(")", 1)[1].split()[19])
        with open("/proc/stat") as fh:
            boot = next(int(ln.split()[1]) for ln in fh if ln.startswith("btime "))
    except (OSError, ValueError, IndexError, StopIteration):
        return None
    return boot + ticks // os.sysconf("SC_CLK_TCK")


def gone(holder: Controller, link: str = "", my_link: str = "",
         me: Controller | None = None) -> bool:
    """Is the holder's link gone for certain? It is this very link (`my_link`: its old
    shell, which the host has not seen go), or a process of this machine that has ended (or
    whose PID another process now has: the same boot and PID namespace). Another link of
    this process is not gone."""
    me = me or this_controller()
    if holder.same(me):
        return bool(link) and link == my_link
    if not me.where or holder.where != me.where:
        return False  # another machine's (or PID namespace's) process: only its host can tell
    if not pid_alive(holder.pid):
        return True
    started = process_start(holder.pid)
    return started is not None and abs(started - holder.start) > 1


@dataclass(frozen=True, slots=True)
class LeaseReply:
    state: LeaseState
    path: str = ""
    holder: Controller | None = None
    link: str = ""  # which of the holder's links (a reconnect takes its own link's back)
    shell: int | None = None  # the host's PID of the holder's control shell
    raw: str = ""  # the file's line as read (a holder line that does not parse)
    why: str = ""

    def holder_text(self) -> str:
        """Who holds the lease, in words; the file is the host's text (anyone may write it),
        so every control character in it is spelled out."""
        if self.holder is not None:
            return visible(f"abtui of {self.holder.describe()}")
        return f"an abtui ({visible(self.raw)})" if self.raw else "an abtui that did not say who"


def _file_expr(dirs: tuple[str, ...]) -> str:
    """The shell words that set `f` to the lease file and `d` to its folder."""
    return (f"d=; for c in {' '.join(shlex.quote(d) for d in dirs)}; do "
            "if [ -d \"$c\" ] && [ -w \"$c\" ]; then d=$c; break; fi; done; "
            # the host's name, read without a fork where Linux offers it
            "n=; if [ -r /proc/sys/kernel/hostname ]; then read -r n </proc/sys/kernel/hostname; "
            "fi; [ -n \"$n\" ] || n=$(uname -n 2>/dev/null); "
            "case $n in ''|*[!A-Za-z0-9._-]*) n=host ;; esac; "
            # its network namespace (`net:[4026531840]`): the lab's hosts share one /run
            "s=; if [ -e /proc/self/ns/net ]; then s=$(readlink /proc/self/ns/net 2>/dev/null); "
            "fi; s=${s#net:?}; s=${s%?}; case $s in *[!0-9]*) s= ;; esac; "
            f"f=\"$d/{MARK}.$n${{s:+.$s}}\"")


def _lock(wait: int | None = None) -> str:
    """The lock command: the first tool the host has (its own status: 0 locked, 1 or 75
    held by another; 9: neither tool is there)."""
    parts = [f"if command -v {name} >/dev/null 2>&1; then "
             f"{now if wait is None else waiting.format(wait=wait)}; "
             for name, now, waiting in LOCK_TOOLS]
    return "el".join(parts) + "else return 9; fi"


def _open_and_lock(wait: int | None, dirs: tuple[str, ...]) -> str:
    """Open the file on the lease's descriptor (made writable by anyone the first time: any
    user's controller may take it next) and lock it; reply `taken` with the holder line
    written, else `held` with the file's line, or `none` with why."""
    mine = f"{MARK} $__abtui_lease shell=$$"
    return (
        f"if [ -z \"$d\" ]; then echo \"{MARK} none no writable folder of {' '.join(dirs)}\"; "
        f"elif ! {{ [ -w \"$f\" ] || (umask 0; : >>\"$f\") 2>/dev/null; }}; then "
        f"echo \"{MARK} none cannot write $f\"; "
        f"else exec {FD}>>\"$f\"; __abtui_lock() {{ {_lock(wait)}; }}; __abtui_lock; "
        "__abtui_r=$?; "
        f"if [ \"$__abtui_r\" = 0 ]; then printf '%s\\n' \"{mine}\" >\"$f\"; "
        f"echo \"{MARK} taken $f\"; "
        f"elif [ \"$__abtui_r\" = 1 ] || [ \"$__abtui_r\" = 75 ]; then exec {FD}>&-; "
        f"echo \"{MARK} held $f\"; head -n 1 \"$f\" 2>/dev/null; "
        f"elif [ \"$__abtui_r\" = 9 ]; then exec {FD}>&-; "
        f"echo \"{MARK} none neither flock nor lockf is installed\"; "
        f"else exec {FD}>&-; echo \"{MARK} none the lock tool failed (exit $__abtui_r; "
        f"FreeBSD's lockf locks a descriptor from 14.1 on)\"; fi; fi")


def _holder_words(me: Controller | None, link: str) -> str:
    """The holder's words in the file, less the shell's PID (the host's `$$` adds it)."""
    return f"__abtui_lease={shlex.quote((me or this_controller()).line() + f' link={link}')}"


def take_command(me: Controller | None = None, dirs: tuple[str, ...] = LOCK_DIRS,
                 link: str = "") -> str:
    """Take the lease now, or say who holds it. Sent to the control shell bare (no
    redirection around it: the descriptor must stay open in the shell itself). `link`
    tells this controller's links apart."""
    return (f"{_holder_words(me, link)}; {_file_expr(dirs)}; "
            + _open_and_lock(None, dirs))


def takeover_command(reply: LeaseReply, me: Controller | None = None,
                     dirs: tuple[str, ...] = LOCK_DIRS, link: str = "") -> str:
    """End a gone holder's shell (only while the file still names it) and take the lease,
    waiting for the lock to be let go."""
    shell = reply.shell or 0
    named = f"{MARK} {reply.raw}"
    return (f"{_holder_words(me, link)}; {_file_expr(dirs)}; "
            f"if [ {shell} -gt 1 ] && [ {shell} != $$ ] && "
            f"[ \"$(head -n 1 \"$f\" 2>/dev/null)\" = {shlex.quote(named)} ] && "
            # where /proc tells, the process must hold the lease file on its descriptor: the
            # file is anyone's to write, the process to end must be a holder's shell
            f"{{ [ ! -e /proc/self/fd ] || "
            f"[ \"$(readlink /proc/{shell}/fd/{FD} 2>/dev/null)\" -ef \"$f\" ]; }}; then "
            f"kill -KILL {shell} 2>/dev/null; fi; " + _open_and_lock(TAKEOVER_WAIT_S, dirs))


def parse_reply(stdout: str) -> LeaseReply:
    """What the take (or takeover) command said."""
    lines = [ln.strip() for ln in stdout.splitlines() if ln.strip()]
    head = next((i for i, ln in enumerate(lines) if ln.startswith(f"{MARK} ")), None)
    if head is None:
        return LeaseReply(LeaseState.NONE, why=f"unexpected reply {stdout[-80:]!r}")
    _mark, state, *rest = [*lines[head].split(" ", 2), ""]
    text = rest[0]
    if state == LeaseState.TAKEN:
        return LeaseReply(LeaseState.TAKEN, path=text)
    if state == LeaseState.HELD:
        line = lines[head + 1] if head + 1 < len(lines) else ""
        holder, shell = parse_holder(line)
        raw = line.removeprefix(f"{MARK} ")
        return LeaseReply(LeaseState.HELD, path=text, holder=holder, shell=shell, raw=raw,
                          link=_fields(line.split()).get("link", ""))
    return LeaseReply(LeaseState.NONE, why=text or "no reason given")


def parse_holder(line: str) -> tuple[Controller | None, int | None]:
    """The controller and its shell's PID a lease file's line names (None: not a line of
    ours)."""
    words = line.split()
    if not words or words[0] != MARK:
        return None, None
    fields = _fields(words)
    shell = None
    with contextlib.suppress(KeyError, ValueError):
        shell = int(fields["shell"])
    try:
        return Controller(fields["user"], fields["machine"], int(fields["pid"]),
                          int(fields["start"]), fields.get("where", "")), shell
    except (KeyError, ValueError):
        return None, shell


def _fields(words: list[str]) -> dict[str, str]:
    return dict(w.split("=", 1) for w in words[1:] if "=" in w)


def lease_files(hostname: str, dirs: tuple[str, ...] = LOCK_DIRS) -> list[Path]:
    """The lease files a host of this name left on this machine (one per network namespace
    it had): for the lab, whose hosts are gone with their namespaces, to remove on its way
    down."""
    return [f for d in dirs for f in Path(d).glob(f"{MARK}.{hostname}.*")
            if f.name.removeprefix(f"{MARK}.{hostname}.").isdigit()]
