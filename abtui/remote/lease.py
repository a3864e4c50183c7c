"""A host's lease: one controller drives a host at a time.

The control shell (abtui.remote.control_shell.ControlShell) takes an exclusive lock on a file of the
host's own and keeps the locked descriptor open as long as it lives, so the lease lasts as
long as the link: a dropped link, a killed controller or a dead machine ends the shell and
with it the lock, with nothing to clean up.

Where: the first of `/run`, `/var/run` that is a folder (whatever the login user: the same
file for every controller), named for the host's name and, on Linux, its network namespace
(the lab's hosts share one file system). Only root may create files there, so the lease needs
root (a root login, or `sudo = true`); a login that cannot create it takes no lease and says
so. Nothing another local user put anywhere is followed, blocked on or trusted: the folder
must belong to root (or the shell's own user) and be writable by no one else; the file is
created with O_EXCL (noclobber, never through a link), mode 0600; whatever is at that name must
be a regular file of the shell's own user, mode 0600, checked before it is opened (so a FIFO
is never opened) and, where /proc tells, again on the open descriptor (opened read-write:
never a truncation, never a blocking open). Anything else there is refused in one line naming
the file, what it is and its owner (LeaseState.BAD): the host is not driven.

The file holds the holder's name and start (user, machine, PID, start; a hash of its boot and
PID namespace, to tell a local PID apart; which of its links; its control shell's PID),
readable only by its owner. A holder refreshes the file's time every HEARTBEAT_S while its
link lives (HostLink's heartbeat); a lease whose heartbeat is STALE_S old is stale: its holder
is frozen (SIGSTOP) or its machine gone although its TCP session lingers, and the next
controller ends its shell (only while the file still names it, that shell holds the file and
runs no command) and takes the lease over. A lock another holds is waited for WAIT_S (its
holder's line is written by then: a message never names one that gave up).

The lock is flock(2)'s, taken on the open descriptor: util-linux `flock -w 1 7` on Linux,
`lockf -s -t 1 7` on FreeBSD (14.1 and later lock a descriptor). Commands the shell runs get
the descriptor closed (the framing's `7>&-`), so a daemon one starts never inherits the lease.
A holder that is this very link (a reconnect whose old shell the host has not noticed gone) or
a process of this machine that has ended is gone: its shell is ended and the lease taken over.

The hosts of one command are leased in one global order (the lease files' names, the same for
every controller whatever its aliases: LeaseOrder), one after another once every link is open;
a host held by another stops the hosts after it from being asked, so two controllers started
together never both lose: the one that takes the first host takes them all.
"""

from __future__ import annotations

import asyncio
import contextlib
import functools
import getpass
import hashlib
import os
import shlex
import socket
import stat
import time
from dataclasses import dataclass
from enum import StrEnum
from pathlib import Path

from abtui.core.pids import pid_alive
from abtui.core.text import visible

FD = 7  # the lease's descriptor in the control shell (one digit: POSIX sh's redirections)
LOCK_DIRS = ("/run", "/var/run")  # the first that is a folder; only root creates files there
WAIT_S = 1  # a lock another holds is waited for this long (bounded: one short retry)
TAKEOVER_WAIT_S = 5  # for a gone holder's shell to end once it was killed
HEARTBEAT_S = 5  # a holder refreshes its file's time this often
STALE_S = 20  # a lease not refreshed for this long is taken over by the next controller
LINE_WIDTH = 200  # the holder line, padded: written over the old one without a truncation
# Lock the open descriptor, waiting `{wait}` seconds, per tool: the first one the host has.
LOCK_TOOLS = (("flock", "flock -w {wait} " + str(FD)),
              ("lockf", "lockf -s -t {wait} " + str(FD)))
MARK = "abtui-lease"  # the first word of the file's line, and of each reply line


class LeaseState(StrEnum):
    TAKEN = "taken"
    HELD = "held"  # by another controller: `holder` says who
    NONE = "none"  # no lease could be taken (no lock tool, not root): `why`
    BAD = "bad"  # something else is at the lease's name (a link, a FIFO, another's file): `why`


@dataclass(frozen=True, slots=True)
class Controller:
    """Who holds a lease: a user on a machine, an abtui process and when it started."""

    user: str
    machine: str
    pid: int
    start: int  # seconds since the epoch
    # where its PID means something: a hash of this boot of the machine and its PID
    # namespace (a hostname alone is shared by containers and copied machines); "" unknown
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
    """This machine's boot and PID namespace, as one opaque word ("" where /proc cannot say):
    two controllers whose PIDs can be compared have the same; the file tells no reader the
    boot id or the namespace."""
    try:
        boot = Path("/proc/sys/kernel/random/boot_id").read_text().strip()
        space = os.readlink("/proc/self/ns/pid")
    except OSError:
        return ""
    digits = "".join(c for c in space if c.isdigit())
    if not (boot and digits):
        return ""
    return hashlib.sha256(f"{boot}:{digits}".encode()).hexdigest()[:16]


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
    age: int | None = None  # seconds since the holder's last heartbeat (None: unknown)

    @property
    def stale(self) -> bool:
        """The holder has not refreshed the lease for STALE_S: frozen, or its machine gone."""
        return self.age is not None and self.age >= STALE_S

    def holder_text(self) -> str:
        """Who holds the lease, in words; the file is the host's text, so every control
        character in it is spelled out."""
        if self.holder is not None:
            who = visible(f"abtui of {self.holder.describe()}")
        else:
            who = f"an abtui ({visible(self.raw)})" if self.raw else \
                "an abtui that did not say who"
        if self.age is not None and self.age >= 2 * HEARTBEAT_S:
            who += (f" (silent for {self.age} s: its lease is taken over once {STALE_S} s "
                    "old)")
        return who


def _file_expr(dirs: tuple[str, ...]) -> str:
    """The shell words that set `d` to the lease's folder (the first of `dirs` that is a
    folder, whoever logs in) and `f` to its file."""
    return (f"d=; for c in {' '.join(shlex.quote(d) for d in dirs)}; do "
            "if [ -d \"$c\" ]; then d=$c; break; fi; done; "
            # the host's name, read without a fork where Linux offers it
            "n=; if [ -r /proc/sys/kernel/hostname ]; then read -r n </proc/sys/kernel/hostname; "
            "fi; [ -n \"$n\" ] || n=$(uname -n 2>/dev/null); "
            "case $n in ''|*[!A-Za-z0-9._-]*) n=host ;; esac; "
            # its network namespace (`net:[4026531840]`): the lab's hosts share one /run
            "s=; if [ -e /proc/self/ns/net ]; then s=$(readlink /proc/self/ns/net 2>/dev/null); "
            "fi; s=${s#net:?}; s=${s%?}; case $s in *[!0-9]*) s= ;; esac; "
            f"f=\"$d/{MARK}.$n${{s:+.$s}}\"")


def name_command(dirs: tuple[str, ...] = LOCK_DIRS) -> str:
    """The lease file's path, printed: the key of the hosts' one global order."""
    return f"{_file_expr(dirs)}; printf '%s\\n' \"$f\""


def _lock(wait: int) -> str:
    """The lock command: the first tool the host has (its own status: 0 locked, 1 or 75
    held by another; 9: neither tool is there)."""
    parts = [f"if command -v {name} >/dev/null 2>&1; then {cmd.format(wait=wait)}; "
             for name, cmd in LOCK_TOOLS]
    return "el".join(parts) + "else return 9; fi"


def _checks(dirs: tuple[str, ...]) -> str:
    """Set `__abtui_no` (no lease can be taken: why) or `__abtui_bad` (something else is at
    the name: what, whose) from the folder and whatever is at `f`, creating the file (0600,
    O_EXCL: never through a link) where nothing is. Nothing is opened."""
    bad = "__abtui_bad"
    return (
        f"__abtui_no=; {bad}=; __abtui_u=$(id -u 2>/dev/null); "
        f"if [ -z \"$d\" ]; then __abtui_no=\"none of {' '.join(dirs)} is a folder\"; else "
        "set -f; set -- $(ls -ldn \"$d/\" 2>/dev/null); set +f; "
        "if [ -z \"$__abtui_u\" ] || [ -z \"$3\" ]; then "
        "__abtui_no=\"cannot tell who owns $d and who this login is (ls, id)\"; fi; "
        "case $1 in ?????w*|????????w*) "
        "__abtui_no=\"the folder $d can be written by others (mode $1)\" ;; esac; "
        "if [ \"$3\" != 0 ] && [ \"$3\" != \"$__abtui_u\" ]; then "
        "__abtui_no=\"the folder $d belongs to uid $3\"; fi; fi; "
        "if [ -z \"$__abtui_no\" ]; then "
        "if [ ! -e \"$f\" ] && [ ! -L \"$f\" ]; then (umask 077; set -C; : >\"$f\") 2>/dev/null; "
        "fi; "
        "if [ ! -e \"$f\" ] && [ ! -L \"$f\" ]; then "
        "__abtui_no=\"cannot create $f (only root can: log in as root, or sudo = true)\"; "
        "elif [ -L \"$f\" ] || [ ! -f \"$f\" ]; then "
        "if [ -L \"$f\" ]; then __abtui_k='a symbolic link'; elif [ -p \"$f\" ]; then "
        "__abtui_k='a FIFO'; elif [ -d \"$f\" ]; then __abtui_k='a folder'; elif [ -S \"$f\" ]; "
        "then __abtui_k='a socket'; else __abtui_k='not a regular file'; fi; "
        "set -f; set -- $(ls -ld \"$f\" 2>/dev/null); set +f; "
        f"{bad}=\"$__abtui_k owned by ${{3:-?}}\"; "
        "else set -f; set -- $(ls -ln \"$f\" 2>/dev/null); set +f; "
        "case $1 in -rw-------*) __abtui_m=ok ;; *) __abtui_m= ;; esac; "
        "if [ \"$3\" = 0 ] && [ \"$__abtui_u\" != 0 ] && [ -n \"$__abtui_m\" ]; then "
        "__abtui_no=\"$f is root's (log in as root, or sudo = true)\"; "
        "elif [ \"$3\" != \"$__abtui_u\" ] || [ -z \"$__abtui_m\" ]; then "
        "__abtui_o=$3; set -f; set -- $(ls -l \"$f\" 2>/dev/null); set +f; "
        f"{bad}=\"a file owned by ${{3:-uid $__abtui_o}} (mode $1), not this login's "
        "(uid $__abtui_u) with mode 0600\"; fi; fi; fi")


def _open_and_lock(wait: int, dirs: tuple[str, ...]) -> str:
    """Check the folder and the file, open the file on the lease's descriptor (read-write:
    no truncation, no blocking), check the descriptor is that file, lock it; reply `taken`
    with the holder line written through the descriptor, else `held AGE` with the file's
    line, `bad` with what is there, or `none` with why."""
    mine = f"{MARK} $__abtui_lease shell=$$"
    return (
        f"{_checks(dirs)}; "
        f"if [ -n \"$__abtui_no\" ]; then echo \"{MARK} none $__abtui_no\"; "
        f"elif [ -n \"$__abtui_bad\" ]; then echo \"{MARK} bad $f is $__abtui_bad\"; "
        f"else exec {FD}<>\"$f\"; "
        # where /proc tells: the descriptor is a regular file, that very file, no link
        f"if [ -e /proc/$$/fd/{FD} ] && ! {{ [ -f /proc/$$/fd/{FD} ] && [ ! -L \"$f\" ] && "
        f"[ /proc/$$/fd/{FD} -ef \"$f\" ]; }}; then exec {FD}>&-; "
        f"echo \"{MARK} bad $f changed while it was opened\"; "
        f"else __abtui_lock() {{ {_lock(wait)}; }}; __abtui_lock; __abtui_r=$?; "
        f"if [ \"$__abtui_r\" = 0 ]; then printf '%-{LINE_WIDTH}s\\n' \"{mine}\" >&{FD}; "
        f"echo \"{MARK} taken $f\"; "
        f"elif [ \"$__abtui_r\" = 1 ] || [ \"$__abtui_r\" = 75 ]; then exec {FD}>&-; "
        "__abtui_t=$(stat -c %Y \"$f\" 2>/dev/null || stat -f %m \"$f\" 2>/dev/null); "
        "__abtui_a=-; case $__abtui_t in ''|*[!0-9]*) ;; *) "
        "__abtui_a=$(( $(date +%s) - __abtui_t )) ;; esac; "
        f"echo \"{MARK} held $__abtui_a $f\"; head -n 1 \"$f\" 2>/dev/null; "
        f"elif [ \"$__abtui_r\" = 9 ]; then exec {FD}>&-; "
        f"echo \"{MARK} none neither flock nor lockf is installed\"; "
        f"else exec {FD}>&-; echo \"{MARK} none the lock tool failed (exit $__abtui_r; "
        f"FreeBSD's lockf locks a descriptor from 14.1 on)\"; fi; fi; fi")


def _holder_words(me: Controller | None, link: str) -> str:
    """The holder's words in the file, less the shell's PID (the host's `$$` adds it)."""
    return f"__abtui_lease={shlex.quote((me or this_controller()).line() + f' link={link}')}"


def take_command(me: Controller | None = None, dirs: tuple[str, ...] = LOCK_DIRS,
                 link: str = "") -> str:
    """Take the lease (waiting WAIT_S for one another holds), or say who holds it. Sent to
    the control shell bare (no redirection around it: the descriptor must stay open in the
    shell itself). `link` tells this controller's links apart."""
    return (f"{_holder_words(me, link)}; {_file_expr(dirs)}; "
            + _open_and_lock(WAIT_S, dirs))


def takeover_command(reply: LeaseReply, me: Controller | None = None,
                     dirs: tuple[str, ...] = LOCK_DIRS, link: str = "",
                     stale: bool = False) -> str:
    """End a gone (or, `stale`, a silent) holder's shell and take the lease, waiting for the
    lock to be let go. The shell is ended only while the file still names it and, where
    /proc tells, it holds the file on its descriptor; a stale one only while the file's time
    is still STALE_S old and, where pgrep tells, the shell runs no command."""
    shell = reply.shell or 0
    named = f"{MARK} {reply.raw}"
    silent = ("__abtui_t=$(stat -c %Y \"$f\" 2>/dev/null || stat -f %m \"$f\" 2>/dev/null); "
              "case $__abtui_t in ''|*[!0-9]*) false ;; *) "
              f"[ $(( $(date +%s) - __abtui_t )) -ge {STALE_S} ] ;; esac && "
              f"! pgrep -P {shell} >/dev/null 2>&1 && ") if stale else ""
    return (f"{_holder_words(me, link)}; {_file_expr(dirs)}; "
            "__abtui_h=; if [ -f \"$f\" ] && [ ! -L \"$f\" ]; then "
            "__abtui_h=$(head -n 1 \"$f\" 2>/dev/null); fi; "
            "__abtui_h=${__abtui_h%\"${__abtui_h##*[! ]}\"}; "
            f"if [ {shell} -gt 1 ] && [ {shell} != $$ ] && "
            f"[ \"$__abtui_h\" = {shlex.quote(named)} ] && {silent}"
            # where /proc tells, the process must hold the lease file on its descriptor
            f"{{ [ ! -e /proc/self/fd ] || "
            f"[ \"$(readlink /proc/{shell}/fd/{FD} 2>/dev/null)\" -ef \"$f\" ]; }}; then "
            f"kill -KILL {shell} 2>/dev/null; fi; " + _open_and_lock(TAKEOVER_WAIT_S, dirs))


def heartbeat_command(path: str) -> str:
    """Refresh the lease file's time (never creating one): the holder still answers."""
    return f"touch -c -- {shlex.quote(path)}"


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
        age_text, _, path = text.partition(" ")
        line = lines[head + 1] if head + 1 < len(lines) else ""
        holder, shell = parse_holder(line)
        raw = line.removeprefix(f"{MARK} ")
        return LeaseReply(LeaseState.HELD, path=path, holder=holder, shell=shell, raw=raw,
                          link=_fields(line.split()).get("link", ""),
                          age=int(age_text) if age_text.isdigit() else None)
    if state == LeaseState.BAD:
        return LeaseReply(LeaseState.BAD, path=text.split(" ", 1)[0], why=visible(text))
    return LeaseReply(LeaseState.NONE, why=visible(text) or "no reason given")


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


def bad_line(reply: LeaseReply) -> str:
    """The one line a host whose lease's name holds something else is refused with."""
    return (f"refused: {reply.why}, not abtui's lease file (remove it, as root, if it is "
            "not meant to be there)")


class LeaseOrder:
    """The hosts of one command leased one after another, in one global order: the order of
    their lease files' paths (the same for every controller, whatever its aliases). Each link
    names its file (`turn`), waits until every link has named its own or failed, then for
    the links before it; one held by another controller stops the links after it, which say
    so instead of taking a lease that controller needs next."""

    def __init__(self, links: int) -> None:
        self._expected = links
        self._named: dict[str, asyncio.Event] = {}
        self._refused: dict[str, str] = {}  # key -> why the hosts after it were not asked
        self._all = asyncio.Event()
        if links <= 0:
            self._all.set()

    def _count(self) -> None:
        if len(self._named) >= self._expected:
            self._all.set()

    def leave(self) -> None:
        """A link that will never name its file (its connection failed)."""
        self._expected -= 1
        self._count()

    async def turn(self, key: str) -> str | None:
        """Wait for this key's turn; the reason it must not be taken (a host before it was
        refused), or None."""
        self._named.setdefault(key, asyncio.Event())
        self._count()
        await self._all.wait()
        for other in sorted(self._named):
            if other >= key:
                break
            await self._named[other].wait()
            if other in self._refused:
                return self._refused[other]
        return None

    def done(self, key: str, refused: str | None) -> None:
        """This key's lease was taken (None) or refused (`refused`: why, for those after)."""
        if refused is not None:
            self._refused[key] = refused
        self._named.setdefault(key, asyncio.Event()).set()


def lease_files(hostname: str, dirs: tuple[str, ...] = LOCK_DIRS) -> list[Path]:
    """The lease files a host of this name left on this machine (one per network namespace
    it had; regular files of this user only): for the lab, whose hosts are gone with their
    namespaces, to remove on its way down."""
    found = []
    for d in dirs:
        for f in Path(d).glob(f"{MARK}.{hostname}.*"):
            if not f.name.removeprefix(f"{MARK}.{hostname}.").isdigit():
                continue
            with contextlib.suppress(OSError):
                st = f.lstat()
                if stat.S_ISREG(st.st_mode) and st.st_uid == os.geteuid():
                    found.append(f)
    return found
