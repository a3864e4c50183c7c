"""A persistent link to one host: one asyncssh connection, one long-lived control shell.

Short commands (sysctl reads and writes, ethtool, kill) go through the control shell, framed by
a random sentinel, so each costs about a millisecond instead of a new SSH channel (~120 ms).
Long commands (iperf3, ping, watches) get a channel of their own and stream stdout line by
line (abtui.remote.streams); each reports its process group first, so cancelling ends it and
its children for certain. A dropped connection is noticed by keepalives and re-opened with
backoff; state changes are reported to a callback. A destination written `user@host:port`
connects as that user to that port (abtui.core.destination), with the ssh_config `Host` block
of `host` still applied.
Host keys are checked against known_hosts (~/.ssh/config and ssh-agent apply, as asyncssh loads
them by default): an unknown key is refused unless the profile accepts new keys (then it is
recorded), a changed key always, naming the known_hosts line (abtui.remote.ssh_files).
"""

from __future__ import annotations

import asyncio
import contextlib
import functools
import re
import secrets
import shlex
import socket
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass
from typing import Any

from abtui.core.destination import Destination, parse_destination
from abtui.core.errors import LeaseHeld, LeaseRefused, RemoteError, lease_not_asked
from abtui.core.model import LinkState
from abtui.core.pids import pgid_problem
from abtui.core.text import visible
from abtui.remote.lease import FD as LEASE_FD
from abtui.remote.lease import (
    HEARTBEAT_S,
    LOCK_DIRS,
    TAKEOVER_WAIT_S,
    WAIT_S,
    LeaseOrder,
    LeaseReply,
    LeaseState,
    bad_line,
    gone,
    heartbeat_command,
    name_command,
    parse_reply,
    take_command,
    takeover_command,
)
from abtui.remote.os.dialect import FUNCTION
from abtui.remote.ssh_files import HostKeyChecks, configured_connect_timeout, configured_option
from abtui.remote.sshlib import asyncssh, load
from abtui.remote.streams import PGID_MARK, RemoteProcess, group_alive_command

KEEPALIVE_INTERVAL = 2.0
KEEPALIVE_COUNT_MAX = 3
DEFAULT_CONNECT_TIMEOUT = 10.0
RECONNECT_BACKOFF = (0.5, 1.0, 2.0, 4.0, 5.0)
# How long a command that may run again (`run(..., again=True)`: a knob's read, write or flip,
# a restore, a module reload) waits for a dropped link to come back before it fails: an 8-s
# drop is noticed by keepalives within KEEPALIVE_INTERVAL * KEEPALIVE_COUNT_MAX and re-made
# within a backoff step (5 s at most) of the link's return (docs/contracts.md)
LINK_WAIT_S = 30.0
# What tells one boot of a host from the next (Linux, then FreeBSD): a process group
# recorded before a reboot is not the one of that number after it.
BOOT_ID_COMMAND = ("cat /proc/sys/kernel/random/boot_id 2>/dev/null || "
                   "sysctl -n kern.boottime 2>/dev/null || true")

# The control shell's own process group (a line, empty where ps cannot say): never ended.
SHELL_GROUP_COMMAND = "ps -o pgid= -p $$ 2>/dev/null || echo"

# A folder of a bulk shell's own for its output files (ControlShell.bulk_loop): in /dev/shm
# where it can be made there.
MAKE_FOLDER = ('mktemp -d /dev/shm/abtui.XXXXXX 2>/dev/null || '
               'mktemp -d "${TMPDIR:-/tmp}/abtui.XXXXXX"')
# Bash 5 (its `read -N` reads a block in one read(2), and takes LC_ALL for that read alone),
# able to make the folder; its two files are created empty here. The loop removes the folder
# as soon as it has opened them; the EXIT trap (SIGHUP and SIGTERM exit through it) covers a
# shell that ends before that.
BULK_PROBE = ('case "${BASH_VERSION:-}" in [5-9].*|[1-9][0-9]*) '
              f'__abtui_t=$({MAKE_FOLDER}) && '
              ': >"$__abtui_t/o" && : >"$__abtui_t/e" && '
              'trap \'rm -rf -- "$__abtui_t"\' EXIT && trap \'exit 129\' HUP && '
              'trap \'exit 143\' TERM && echo bulk ;; esac')
BULK_HEADER = 8  # digits of a command's length before it (one `read -N 8`)

# A dialect's command (abtui.remote.os.dialect.as_function): a function defined and called at once.
_DEF_HEAD, _DEF_TAIL = f"{FUNCTION}() {{\n", f"\n}}; {FUNCTION}"
MAX_FUNCTIONS = 256  # dialect commands a bulk shell keeps defined (a flip's are a handful)

StateCallback = Callable[["HostLink", LinkState, str], None]
STATUS_DIGITS = 12  # room for the exit status in the framing's end mark (see ControlShell)
# The ciphers offered first: AEAD only, AES-GCM ahead of chacha20-poly1305 (asyncssh's first
# choice), then asyncssh's other defaults for servers without these. AES-GCM is one OpenSSL
# call a packet (AES-NI); asyncssh's chacha20-poly1305 builds three cipher objects and a
# Poly1305 tag in Python per packet: 7-9 us against 47 us a packet, most of the client's
# crypto on a knob flip (docs/performance.md). An ssh_config `Ciphers` line still decides.
CIPHERS = ("aes128-gcm@openssh.com", "aes256-gcm@openssh.com", "chacha20-poly1305@openssh.com")


BRIEF = 60  # characters of a command an error line quotes


def command_brief(command: str) -> str:
    """A command as one line of an error message: its first line that says something (not a
    dialect function's head), its runs of blanks as one space, cut at BRIEF characters, and
    nothing a terminal would act on (a timed-out watch quoted its whole awk script)."""
    lines = (ln.strip() for ln in command.splitlines())
    said = [ln for ln in lines if ln and not ln.endswith("{") and not ln.startswith("}")]
    text = visible(" ".join(said[0].split())) if said else ""
    return text[:BRIEF] + ("…" if len(text) > BRIEF or len(said) > 1 else "")


@dataclass(slots=True)
class CommandResult:
    exit_status: int
    stdout: str
    stderr: str

    @property
    def ok(self) -> bool:
        return self.exit_status == 0


@functools.cache
def _client_class() -> Callable[[HostLink], asyncssh.SSHClient]:
    """The asyncssh client class of a link (defined on first use: asyncssh is imported then,
    abtui.remote.sshlib)."""

    class _Client(asyncssh.SSHClient):
        def __init__(self, link: HostLink) -> None:
            self._link = link
            self._conn: asyncssh.SSHClientConnection | None = None

        def connection_made(self, conn: asyncssh.SSHClientConnection) -> None:
            self._conn = conn

        def connection_lost(self, exc: Exception | None) -> None:
            self._link._on_connection_lost(self._conn, exc)

        def validate_host_public_key(self, host: str, addr: str, port: int,
                                     key: asyncssh.SSHKey) -> bool:
            """Called only for a key known_hosts does not list: tell unknown from changed."""
            return self._link.host_keys.judge(host, addr, port, key)

    return _Client


def describe_connect_error(alias: str, exc: BaseException, hostkey: str = "") -> str:
    """One line that says what went wrong connecting to `alias` and what to do."""
    if isinstance(exc, RemoteError):  # it names the host already
        return str(exc)
    if isinstance(exc, asyncssh.HostKeyNotVerifiable):
        return hostkey or (
            f"host key of {alias} is not trusted ({exc.reason}): check it, then add it to "
            "known_hosts (e.g. `ssh-keyscan`), or set accept_new_host_keys in the profile")
    if isinstance(exc, asyncssh.PermissionDenied):
        return f"{alias} refused our keys ({exc.reason}): check User/IdentityFile or ssh-agent"
    if isinstance(exc, asyncssh.DisconnectError):
        return f"{alias} disconnected: {exc.reason}"
    if isinstance(exc, TimeoutError):
        return f"{alias} did not answer in time (unreachable?)"
    if isinstance(exc, OSError) and exc.filename:  # the ssh_config or a key file
        return f"{alias}: cannot read {exc.filename}: {exc.strerror or exc}"
    if isinstance(exc, OSError):
        return f"cannot reach {alias}: {exc.strerror or exc}"
    return f"{alias}: {exc}"


def corkable(sock: Any) -> Any | None:
    """`sock` when it is a TCP socket whose writes TCP_CORK can hold, else None."""
    return sock if getattr(sock, "type", None) == socket.SOCK_STREAM and \
        getattr(sock, "family", None) in (socket.AF_INET, socket.AF_INET6) and \
        hasattr(socket, "TCP_CORK") else None


@contextlib.contextmanager
def corked(socks: Iterable[Any],
           together: Callable[[list[Any]], list[Any]] | None = None) -> Iterator[list[Any]]:
    """What is written to these sockets inside is held by the kernel (TCP_CORK) and leaves at
    the end, each socket's as one segment, one socket right after the other: writes to
    several hosts that must arrive together are apart by a system call, not by the Python
    between them (each write is an encryption and a packet of asyncssh's). Yields the sockets
    it could cork; one it could not is written to as usual. `together`, when given, lifts the
    corks at once where it can (abtui.remote.uring.Uncorker.lift) and returns the sockets it
    could not, lifted here one by one."""
    held = []
    try:
        for sock in socks:
            try:
                sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_CORK, 1)
            except OSError:
                continue
            held.append(sock)
        yield held
    finally:
        left = held
        if together is not None and held:
            # a host left corked would never start: whatever fails there, all lifted below
            with contextlib.suppress(Exception):
                left = together(held)
        for sock in left:
            with contextlib.suppress(OSError):
                sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_CORK, 0)


class ControlShell:
    """A control shell and its framing: each command is followed by an end mark on stdout
    (with the exit status) and one on stderr; in a bulk shell (bash 5, `bulk_loop`) the
    reply is one write on stdout: the output, a mark, stderr, the end mark. The mark is
    drawn once per shell, so its patterns are compiled once (asyncssh compiles a string
    separator on every read: a mark drawn per command cost a regex compile per read,
    ~0.1 ms each, on the knob flip's path); a shell whose framing broke is dropped, so no
    late output from an earlier command is ever read under the same mark."""

    def __init__(self, process: asyncssh.SSHClientProcess[str],
                 conn: asyncssh.SSHClientConnection) -> None:
        self.process = process
        self.mark = f"__ABTUI_{secrets.token_hex(8)}__"
        self.out_end = re.compile(re.escape(f"\n{self.mark} ") + r"(-?\d+)\n")
        self.err_end = re.compile(re.escape(f"\n{self.mark}\n"))
        self.err_mark = f"\n{self.mark}\n"  # in a bulk reply: where stderr begins
        self.out_len = len(self.mark) + 3 + STATUS_DIGITS
        self.err_len = len(self.mark) + 2
        # what follows a command read by the shell itself: the end marks, status first
        self._ends = f"printf '\\n{self.mark} %d\\n' \"$?\"; printf '\\n{self.mark}\\n' >&2\n"
        self.bulk = False  # commands read whole by bash's `read -N` (bulk_loop)
        # a dialect command's text -> the name of the function it stays defined as
        self.functions: dict[str, str] = {}
        self._defining: tuple[str, str] | None = None
        # asyncssh sends an SSH_MSG_IGNORE packet before each data packet, in a write of its
        # own; corked, the two leave in one segment (one wake-up of the host's sshd per
        # command instead of two)
        self.sock = corkable(conn.get_extra_info("socket"))

    def send(self, command: str, opening: str, closing: str) -> None:
        """Write `command`, framed, to the shell's stdin (one TCP segment where it can)."""
        if self.bulk:  # the loop of `bulk_loop` frames it: the block's length, then the block
            block = f"{opening} {self._named(command)}\n{closing}"
            framed = f"{len(block.encode()):0{BULK_HEADER}d}{block}"
        else:
            framed = f"{opening} {command}\n{closing} </dev/null {LEASE_FD}>&-; {self._ends}"
        with corked([self.sock] if self.sock is not None else []) as held:
            if not held:  # no cork here (or it failed): never tried again
                self.sock = None
            self.process.stdin.write(framed)

    def send_bare(self, command: str) -> None:
        """Write `command` to a shell reading its stdin itself (before `start_bulk`), with
        the end marks but no redirection around it: what it opens stays open in the shell
        (the lease's descriptor). It must not read stdin."""
        assert not self.bulk
        self.process.stdin.write(f"{command}\n{self._ends}")

    def _named(self, command: str) -> str:
        """A dialect's command, sent again, as the call of the function its first sending
        defined: bash parses the ~650 characters of a knob flip's command once per shell, not
        per flip (0.05 ms of the host's CPU a command). Defined once its command ran with a
        status other than 2 (a definition bash could not parse is sent whole again)."""
        self._defining = None
        if not (command.startswith(_DEF_HEAD) and command.endswith(_DEF_TAIL)):
            return command
        name = self.functions.get(command)
        if name is not None:
            return name
        if len(self.functions) >= MAX_FUNCTIONS:
            return command
        name = f"abtui_f{len(self.functions)}"
        self._defining = (command, name)
        return f"{name}() {{\n{command[len(_DEF_HEAD):-len(_DEF_TAIL)]}\n}}; {name}"

    def bulk_loop(self) -> str:
        """The loop bash runs to read each command whole: bash reads a script from a pipe one
        byte a read(2) (so that a child could read what follows), ~0.3 ms of the host's CPU
        for a knob flip's command; `read -N` takes the block in one read, its length (in
        bytes, LC_ALL=C for that read only) in a fixed-width header before it.

        The reply is one write: bash's stdout is line-buffered, so a command printing on its
        own and then the marks were 5 to 7 writes on two pipes, each a wake-up of sshd and
        often an SSH packet of its own. The loop's stdout and stderr are files of the shell's
        folder (BULK_PROBE made it), opened once for appending, and read from where the last
        reply stopped through descriptors also opened once (no open or redirection per
        command); the loop reads the commands from descriptor 3 (the shell's stdin, moved),
        and they run with /dev/null as stdin; the reply -- output, mark, stderr, end mark
        with the status -- is one `printf %s` on descriptor 4 (the pipe stdout was), one
        write(2) for a string that ends with a newline. The folder is removed as soon as
        the files are open (they live on as long as the shell holds them), so a shell killed
        outright leaves nothing on the host. Past 64 KiB the loop moves to two fresh files
        the same way (a new folder, opened, removed); where none can be made it goes on
        with the old ones. A command that does not parse: bash's message in stderr, status
        2, the loop goes on. NUL bytes of an output are left out."""
        t = '"$__abtui_t"'
        def take(fd: int, var: str) -> str:  # the file from where the last reply stopped
            return (f"{var}=; while IFS= read -r -d '' -u {fd} __abtui_x; do "
                    f'{var}+=$__abtui_x; done; {var}+=$__abtui_x; ')
        def files(d: str) -> str:  # the loop's output files opened, their folder removed
            return f"exec 1>>{d}/o 2>>{d}/e 5<{d}/o 6<{d}/e; rm -rf -- {d}"
        return ("__abtui_fresh() { local d; d=$( { " + MAKE_FOLDER + "; } 2>/dev/null) || "
                f"return; {files(chr(34) + '$d' + chr(34))}; }}; "
                f"exec 3<&0 4>&1 0</dev/null; {files(t)}; "
                f"__abtui_z=0; while IFS= read -r -u 3 -N {BULK_HEADER} __abtui_n && "
                'LC_ALL=C IFS= read -r -u 3 -N "$__abtui_n" __abtui_c; do '
                f'eval "$__abtui_c" {LEASE_FD}>&-; __abtui_s=$?; '
                + take(5, "__abtui_o") + take(6, "__abtui_e") +
                f'printf %s "$__abtui_o\n{self.mark}\n$__abtui_e\n{self.mark} $__abtui_s\n" '
                ">&4; if (( (__abtui_z += ${#__abtui_o} + ${#__abtui_e}) > 65536 )); then "
                "__abtui_fresh && __abtui_z=0; fi; "
                "done\n")

    async def start_bulk(self) -> None:
        """Where the shell is bash 5 or later, switch it to `bulk_loop` (else it stays the
        shell reading stdin itself, as sh does)."""
        self.send(BULK_PROBE, "{", "}")
        probe = await self.result()
        if probe.stdout.strip() == "bulk":
            self.process.stdin.write(self.bulk_loop())
            self.bulk = True

    async def result(self) -> CommandResult:
        """The command's stdout, stderr and exit status, once both end marks are read (in a
        bulk shell's reply, both are on stdout)."""
        out = await self.process.stdout.readuntil(self.out_end, self.out_len)
        end = self.out_end.search(out, max(0, len(out) - self.out_len))
        assert end is not None  # readuntil returns what ends with the mark
        if self.bulk:  # one reply: output, mark, stderr, end mark
            stdout, _mark, stderr = out[: end.start()].partition(self.err_mark)
        else:
            err = await self.process.stderr.readuntil(self.err_end, self.err_len)
            stdout = out[: end.start()]
            stderr = err[: -(len(self.mark) + 2)]
        status = int(end.group(1))
        if self._defining is not None and status != 2:
            self.functions[self._defining[0]] = self._defining[1]
        self._defining = None
        return CommandResult(status, stdout.removesuffix("\n") if
                             stdout.endswith("\n") else stdout, stderr)

    def close(self) -> None:
        self.process.close()


class HostLink:
    """One host: connection, control shell, streamed processes, reconnects."""

    def __init__(self, alias: str, *, ssh_config: str | None = None,
                 known_hosts: str | None = None, sudo: bool = False,
                 connect_timeout: float | None = None, on_state: StateCallback | None = None,
                 reconnect: bool = True, accept_new_host_keys: bool = False,
                 lease: bool = False, lease_dirs: tuple[str, ...] = LOCK_DIRS) -> None:
        self.alias = alias  # as the profile wrote it: the host's name everywhere
        # take the host's lease (abtui.remote.lease) on every control shell: a link that
        # changes the host; where none can be taken, `lease_note` says why
        self.lease = lease
        self.lease_dirs = lease_dirs
        self.lease_path: str | None = None
        self.lease_note = ""
        self._lease_link = secrets.token_hex(4)  # this link's, kept over its reconnects
        # the hosts' one order of leasing (connect_all), for the first connect only
        self.lease_order: LeaseOrder | None = None
        self.lease_named = False  # this link named its file to `lease_order`
        self._heartbeat: asyncio.Task[None] | None = None  # refreshes the lease (HEARTBEAT_S)
        try:
            self.destination = parse_destination(alias)
            self._invalid = ""
        except ValueError as exc:  # said by connect(), as any other reason not to connect
            self.destination, self._invalid = Destination(alias, alias), str(exc)
        self.accept_new_host_keys = accept_new_host_keys
        self.uid: int | None = None
        self.boot_id: str | None = None  # this boot of the host, read on each connect
        self.shell_group: int | None = None  # the control shell's process group there
        self.ssh_config = ssh_config
        self.known_hosts = known_hosts
        # the host-key checks: what the last one found, and keys recorded
        self.host_keys = HostKeyChecks(alias, self.destination, ssh_config=ssh_config,
                                       known_hosts=known_hosts,
                                       accept_new_host_keys=accept_new_host_keys)
        self.sudo = sudo
        self._connect_timeout = connect_timeout  # None: read on first use (connect_timeout)
        self.on_state = on_state
        self.reconnect = reconnect
        self.state = LinkState.CLOSED
        self._conn: asyncssh.SSHClientConnection | None = None
        self._shell: ControlShell | None = None
        self._shell_lock = asyncio.Lock()
        self._running = ""  # the command the control shell runs (named to one kept waiting)
        self._closing = False
        self._reconnect_task: asyncio.Task[None] | None = None
        self._reopening: asyncio.Task[None] | None = None  # a new control shell under way
        self._connected = asyncio.Event()

    # ---- connection ---------------------------------------------------------------------
    @property
    def connect_timeout(self) -> float:
        """Given, else what the host's ssh_config block's ConnectTimeout says (a slow host,
        an emulated VM), else the default; read when first needed, as connecting does (the
        ssh_config is read by asyncssh, not imported before then)."""
        if self._connect_timeout is None:
            self._connect_timeout = configured_connect_timeout(
                self.ssh_config, self.destination.host) or DEFAULT_CONNECT_TIMEOUT
        return self._connect_timeout

    def _options(self) -> dict[str, Any]:
        opts: dict[str, Any] = {
            "keepalive_interval": KEEPALIVE_INTERVAL,
            "keepalive_count_max": KEEPALIVE_COUNT_MAX,
            "connect_timeout": self.connect_timeout,
            "client_factory": lambda: _client_class()(self),
        }
        if self.ssh_config:
            opts["config"] = [self.ssh_config]
        if CIPHERS and configured_option(self.ssh_config, self.destination.host,
                                         "Ciphers") is None:
            opts["encryption_algs"] = "^" + ",".join(CIPHERS)
        if self.known_hosts:
            opts["known_hosts"] = self.known_hosts
        return opts

    def _set_state(self, state: LinkState, message: str = "") -> None:
        if state is self.state:
            return
        self.state = state
        if self.on_state is not None:
            self.on_state(self, state, message)

    async def connect(self) -> None:
        """Open the connection and the control shell; raises RemoteError with one clear line."""
        self._closing = False
        self._set_state(LinkState.CONNECTING)
        try:
            await self._open()
        except (TimeoutError, OSError, asyncssh.Error) as exc:
            message = describe_connect_error(self.alias, exc, self.hostkey_problem)
            self._set_state(LinkState.FAILED, message)
            raise RemoteError(self.alias, message.removeprefix(f"{self.alias}: ")) from exc
        except RemoteError as exc:
            self._set_state(LinkState.FAILED, str(exc))
            raise
        self._set_state(LinkState.CONNECTED)

    @property
    def sock(self) -> Any | None:
        """Its connection's TCP socket, where `corked` can hold what is written to it (None
        when not connected or not corkable)."""
        return self._shell.sock if self._shell is not None else None

    @property
    def hostkey_problem(self) -> str:
        """What the last host-key check found (a one-line message; empty when none)."""
        return self.host_keys.problem

    @property
    def accepted_new_key(self) -> bool:
        """Whether this link recorded a host key it did not know (accept_new_host_keys)."""
        return self.host_keys.accepted_new_key

    def known_hosts_files(self) -> list[str]:
        return self.host_keys.known_hosts_files()

    def _shell_command(self) -> str:
        """The control shell: bash where present (its `read` takes procfs files whole)."""
        shell = "command -v bash >/dev/null 2>&1 && exec bash --noprofile --norc; exec sh"
        return f"{'sudo -n ' if self.sudo else ''}sh -c {shlex.quote(shell)}"

    async def _open(self) -> None:
        self.host_keys.problem = ""
        if self._invalid:
            raise RemoteError(self.alias, self._invalid)
        host, extra = self.destination.connect_args()
        await load()  # the first link imports asyncssh off the event loop
        conn = await asyncio.wait_for(asyncssh.connect(host, **extra, **self._options()),
                                      self.connect_timeout)
        try:
            if self.sudo:
                probe = await conn.run("sudo -n true", check=False,
                                       timeout=self.connect_timeout)
                if probe.exit_status != 0:
                    why = str(probe.stderr or probe.stdout or "").strip().splitlines()
                    raise RemoteError(self.alias, "sudo -n refused (it wants a password, or "
                                      "this user may not use sudo): "
                                      f"{why[-1] if why else probe.exit_status}")
            try:
                shell = await self._start_shell(conn)
            except asyncio.IncompleteReadError as exc:
                raise RemoteError(self.alias, "the control shell ended as it started") from exc
        except BaseException:
            conn.close()
            raise
        self._conn, self._shell = conn, shell
        ident = await self.run(f"id -u; {SHELL_GROUP_COMMAND}; {BOOT_ID_COMMAND}",
                               timeout=self.connect_timeout)
        lines = [line.strip() for line in ident.stdout.splitlines()]
        self.uid = int(lines[0]) if lines and lines[0].isdigit() else None
        group = lines[1] if len(lines) > 1 else ""
        self.shell_group = int(group) if group.isdigit() else None
        self.boot_id = lines[2] if len(lines) > 2 and lines[2] else None
        self._connected.set()
        if self.lease_path and (self._heartbeat is None or self._heartbeat.done()):
            self._heartbeat = asyncio.get_running_loop().create_task(self._beat())

    async def _beat(self) -> None:
        """Refresh the lease's time every HEARTBEAT_S while the link lives (skipped while
        the shell runs a command): a holder that stops (frozen, its machine gone) is seen
        silent by the next controller, which takes the lease over (abtui.remote.lease)."""
        while not self._closing:
            await asyncio.sleep(HEARTBEAT_S)
            path = self.lease_path
            if path is None or self._shell is None or self._shell_lock.locked():
                continue
            with contextlib.suppress(Exception):  # a dropped link: the reconnect says it
                await self.run(heartbeat_command(path), timeout=HEARTBEAT_S, isolate=False)

    async def _start_shell(self, conn: asyncssh.SSHClientConnection) -> ControlShell:
        """A new control shell on `conn`: the host's lease taken first (LeaseHeld when another
        controller holds it), then its bulk loop started."""
        shell = ControlShell(await conn.create_process(self._shell_command(),
                                                       encoding="utf-8", errors="replace"), conn)
        try:
            if self.lease:
                await self._take_lease(shell)
            async with asyncio.timeout(self.connect_timeout):
                await shell.start_bulk()
        except BaseException:
            shell.close()
            raise
        return shell

    async def _take_lease(self, shell: ControlShell) -> None:
        """Take the host's lease in `shell` (in its turn of `lease_order`, on a first connect);
        one held by a controller that is gone (this one before a reconnect, an ended process
        of this machine) or silent (stale) is taken over."""
        order, self.lease_order = self.lease_order, None
        key, refused = "", None
        try:
            if order is not None:
                async with asyncio.timeout(self.connect_timeout):
                    shell.send_bare(name_command(self.lease_dirs))
                    key = (await shell.result()).stdout.strip()
                self.lease_named = True
                before = await order.turn(key)  # the hosts before it: their own timeouts
                if before is not None:
                    refused = before
                    raise lease_not_asked(self.alias, before)
            async with asyncio.timeout(self.connect_timeout + TAKEOVER_WAIT_S + WAIT_S):
                shell.send_bare(take_command(dirs=self.lease_dirs, link=self._lease_link))
                reply = parse_reply((await shell.result()).stdout)
                if reply.state is LeaseState.HELD and reply.holder is not None and (
                        gone(reply.holder, reply.link, self._lease_link) or reply.stale):
                    shell.send_bare(takeover_command(
                        reply, dirs=self.lease_dirs, link=self._lease_link,
                        stale=not gone(reply.holder, reply.link, self._lease_link)))
                    reply = parse_reply((await shell.result()).stdout)
            if reply.state is LeaseState.HELD:  # (something else at its name: not another's)
                refused = f"{self.alias} (before it) is driven by {reply.holder_text()}"
            self._leased(reply)
        finally:
            if order is not None and self.lease_named:
                order.done(key, refused)

    def _leased(self, reply: LeaseReply) -> None:
        if reply.state is LeaseState.HELD:
            raise LeaseHeld(self.alias, reply.holder_text())
        if reply.state is LeaseState.BAD:
            raise LeaseRefused(self.alias, bad_line(reply))
        self.lease_path = reply.path or None
        self.lease_note = "" if reply.state is LeaseState.TAKEN else \
            f"no lease taken ({reply.why}): another abtui could drive this host at once"

    def _on_connection_lost(self, conn: asyncssh.SSHClientConnection | None,
                            exc: Exception | None) -> None:
        if conn is None or conn is not self._conn:
            return  # an attempt that failed (its caller reports why), or an old connection
        self._connected.clear()
        self._shell = None
        self._conn = None
        if self._closing:
            return
        self._set_state(LinkState.LOST, str(exc) if exc else "connection closed")
        if self.reconnect and (self._reconnect_task is None or self._reconnect_task.done()):
            self._reconnect_task = asyncio.get_running_loop().create_task(self._reconnect_loop())

    async def _reconnect_loop(self) -> None:
        attempt = 0
        while not self._closing:
            delay = RECONNECT_BACKOFF[min(attempt, len(RECONNECT_BACKOFF) - 1)]
            await asyncio.sleep(delay)
            if self._closing:
                return
            self._set_state(LinkState.RECONNECTING, f"attempt {attempt + 1}")
            try:
                await self._open()
            except (TimeoutError, OSError, asyncssh.Error, RemoteError) as exc:
                self._set_state(LinkState.LOST, describe_connect_error(
                    self.alias, exc, self.hostkey_problem))
                attempt += 1
                continue
            self._set_state(LinkState.CONNECTED, "reconnected")
            return

    async def wait_connected(self, timeout: float | None = None) -> bool:
        try:
            await asyncio.wait_for(self._connected.wait(), timeout)
        except TimeoutError:
            return False
        return True

    async def close(self) -> None:
        self._closing = True
        if self._heartbeat is not None:
            self._heartbeat.cancel()
            with contextlib.suppress(asyncio.CancelledError, Exception):
                await self._heartbeat
        if self._reconnect_task is not None:
            self._reconnect_task.cancel()
            with contextlib.suppress(asyncio.CancelledError, Exception):
                await self._reconnect_task
        if self._shell is not None:
            self._shell.process.stdin.write_eof()
            self._shell.close()
        if self._conn is not None:
            self._conn.close()
            with contextlib.suppress(Exception):
                await self._conn.wait_closed()
        self._conn = self._shell = None
        self._connected.clear()
        self._set_state(LinkState.CLOSED)

    # ---- short commands -----------------------------------------------------------------
    async def run(self, command: str, timeout: float = 10.0,
                  isolate: bool = True, *, again: bool = False) -> CommandResult:
        """Run a shell command in the control shell (stdin closed) and return its result.

        `command` must already be quoted by its builder (see abtui.remote.os). It runs in
        a subshell, so `exit` or `cd` cannot touch the control shell; `isolate=False` saves
        that fork (~1 ms) for commands that never exit, such as the dialects' functions.

        `again`: the command may run twice (it sets a value and reads it back): a lost link is
        not a refusal. A link being re-made is waited for (LINK_WAIT_S at most) before the
        command is sent, and a command the link's loss cut short, or that timed out (a drop
        that TCP outlives: its shell is made again), is sent again once, when the link is
        back, within the same bound.
        """
        if not again:
            return await self._run_once(command, timeout, isolate)
        deadline = asyncio.get_running_loop().time() + LINK_WAIT_S
        await self._back_by(deadline)
        conn = self._conn
        try:
            return await self._run_once(command, timeout, isolate)
        except RemoteError:
            stayed = self._conn is conn and self.state is LinkState.CONNECTED \
                and self._shell is not None
            if stayed or not self._may_come_back():
                raise  # the host's own failure, or a link nothing will bring back
        if not await self._back_by(max(deadline, asyncio.get_running_loop().time()
                                       + timeout)):
            raise RemoteError(self.alias, f"the link dropped and was not back within "
                              f"{LINK_WAIT_S:g} s: {command_brief(command)}")
        return await self._run_once(command, timeout, isolate)

    def _may_come_back(self) -> bool:
        """Will the link be re-made on its own? Not once closed, never connected, or without
        reconnects."""
        return not self._closing and self.reconnect and \
            self.state not in (LinkState.FAILED, LinkState.CLOSED)

    async def _back_by(self, deadline: float) -> bool:
        """Wait until the link is connected with a shell (a reconnect, a shell re-made
        after a command that timed out), at most until `deadline`; whether it is."""
        loop = asyncio.get_running_loop()
        while not (self.state is LinkState.CONNECTED and self._shell is not None):
            if not self._may_come_back() or loop.time() >= deadline:
                return False
            if self._shell is None and self._reopening is not None \
                    and not self._reopening.done():
                with contextlib.suppress(TimeoutError):
                    async with asyncio.timeout_at(deadline):
                        await asyncio.shield(self._reopening)
                continue
            if self.state is LinkState.CONNECTED:
                return False  # its shell could not be made again
            await asyncio.sleep(0.1)
        return True

    async def _run_once(self, command: str, timeout: float, isolate: bool) -> CommandResult:
        opening, closing = ("(", ")") if isolate else ("{", "}")
        # one deadline for the wait for the shell and the command: a command stuck in the
        # shell holds up the next ones only until their own timeouts
        deadline = asyncio.get_running_loop().time() + timeout
        lock = self._shell_lock
        if lock.locked():
            busy = self._running
            try:
                async with asyncio.timeout_at(deadline):
                    await lock.acquire()
            except TimeoutError as exc:
                raise RemoteError(self.alias, f"the control shell was still busy after "
                                  f"{timeout:g} s (with {busy[:60]!r}), so this did not run: "
                                  f"{command[:80]}") from exc
        else:
            await lock.acquire()
        try:
            self._running = command
            return await self._run_locked(command, opening, closing, timeout, deadline)
        finally:
            self._running = ""
            lock.release()

    async def _run_locked(self, command: str, opening: str, closing: str, timeout: float,
                          deadline: float) -> CommandResult:
        """`run`, holding the shell's lock, until `deadline` (the loop's clock)."""
        if self._shell is None and self._reopening is not None:
            # the last command broke the framing: this one waits for the new shell
            with contextlib.suppress(TimeoutError):
                async with asyncio.timeout_at(deadline):
                    await asyncio.shield(self._reopening)
        shell = self._shell
        if shell is None:
            raise RemoteError(self.alias, f"not connected ({self.state})")
        try:
            # one timeout for the whole command, no task per read: this is the knob
            # flip's path
            async with asyncio.timeout_at(deadline):
                shell.send(command, opening, closing)
                return await shell.result()
        except TimeoutError as exc:
            self._reset_shell()
            raise RemoteError(self.alias, f"command timed out after {timeout:g} s: "
                              f"{command_brief(command)}") from exc
        except asyncio.CancelledError:
            # the command goes on in this shell: its late output would be the next
            # command's stdout
            self._reset_shell()
            raise
        except (asyncssh.Error, OSError, asyncio.IncompleteReadError, BrokenPipeError) as exc:
            self._reset_shell()
            raise RemoteError(self.alias, f"link lost while running a command: {exc}") from exc

    def _reset_shell(self) -> None:
        """A command hung or broke the framing: drop the shell; the next connect makes one."""
        if self._shell is not None:
            self._shell.close()
            self._shell = None
        if self._conn is not None and not self._closing:
            self._reopening = asyncio.get_running_loop().create_task(self._reopen_shell())

    async def _reopen_shell(self) -> None:
        conn = self._conn
        if conn is None:
            return
        with contextlib.suppress(asyncssh.Error, OSError, TimeoutError,
                                 asyncio.IncompleteReadError, RemoteError):
            self._shell = await self._start_shell(conn)

    async def check(self, command: str, timeout: float = 10.0) -> str:
        """Run a command and return stdout; a non-zero exit raises RemoteError with stderr."""
        result = await self.run(command, timeout=timeout)
        if not result.ok:
            why = result.stderr.strip() or result.stdout.strip() or f"exit {result.exit_status}"
            raise RemoteError(self.alias, why.splitlines()[-1])
        return result.stdout

    # ---- long commands ------------------------------------------------------------------
    async def stream(self, command: str, *, stderr_lines: int = 50) -> RemoteProcess[HostLink]:
        """Start a long command on a channel of its own; lines stream as they are produced."""
        conn = self._conn
        if conn is None:
            raise RemoteError(self.alias, f"not connected ({self.state})")
        inner = f"sudo -n sh -c {shlex.quote(command)}" if self.sudo else \
            f"sh -c {shlex.quote(command)}"
        # The session's shell is a process-group leader (sshd calls setsid): report it first.
        wrapped = f"echo {PGID_MARK} $$; exec {inner}"
        try:
            proc = await conn.create_process(wrapped, encoding="utf-8", errors="replace")
        except (asyncssh.Error, OSError) as exc:
            raise RemoteError(self.alias, f"cannot start a command: {exc}") from exc
        rp = RemoteProcess(self, proc, command, stderr_lines)
        await rp._read_pgid()
        return rp

    async def kill_group(self, pgid: int, grace: float = 2.0) -> None:
        """End a process group we started: TERM, then KILL what is left after `grace`. A
        group abtui must never end (1 or below, the control shell's own) is refused
        (RemoteError), whoever asked."""
        why = pgid_problem(pgid, self.shell_group)
        if why:
            raise RemoteError(self.alias, f"not ended: {why}")
        kill = "sudo -n kill" if self.sudo and not self._shell else "kill"
        await self.run(f"{kill} -TERM -{int(pgid)} 2>/dev/null; true")
        deadline = asyncio.get_running_loop().time() + grace
        while asyncio.get_running_loop().time() < deadline:
            alive = await self.run(group_alive_command(pgid))
            if not alive.ok:
                return
            await asyncio.sleep(0.05)
        await self.run(f"{kill} -KILL -{int(pgid)} 2>/dev/null; true")




async def connect_all(links: list[HostLink]) -> dict[str, BaseException | None]:
    """Connect every link concurrently; returns each alias's error (None when connected).
    The links that lease take their leases in one global order (abtui.remote.lease.
    LeaseOrder): two controllers started together never both lose."""
    leasing = [link for link in links if link.lease]
    order = LeaseOrder(len(leasing))
    for link in leasing:
        link.lease_order, link.lease_named = order, False

    async def one(link: HostLink) -> None:
        try:
            await link.connect()
        finally:
            if link in leasing and not link.lease_named:
                order.leave()
            link.lease_order = None

    results = await asyncio.gather(*(one(link) for link in links), return_exceptions=True)
    return {link.alias: (r if isinstance(r, BaseException) else None)
            for link, r in zip(links, results, strict=True)}
