"""A persistent link to one host: one asyncssh connection, one long-lived control shell.

Short commands (sysctl reads and writes, ethtool, kill) go through the control shell, framed by
a random sentinel, so each costs about a millisecond instead of a new SSH channel (~120 ms).
Long commands (iperf3, ping, watches) get a channel of their own and stream stdout line by
line (abtui.remote.streams); each reports its process group first, so cancelling ends it and
its children for certain. A dropped connection is noticed by keepalives (abtui.remote.keepalive:
no timer re-armed per packet) and re-opened with backoff; state changes are reported to a
callback. A destination written `user@host:port` connects as that user to that port
(abtui.core.destination), with the ssh_config `Host` block of `host` still applied.
Host keys are checked against known_hosts (~/.ssh/config and ssh-agent apply, as asyncssh loads
them by default): an unknown key is refused unless the profile accepts new keys (then it is
recorded), a changed key always, naming the known_hosts line (abtui.remote.ssh_files).
"""

from __future__ import annotations

import asyncio
import contextlib
import secrets
import shlex
from collections.abc import Callable
from typing import Any, cast

from abtui.core.destination import Destination, parse_destination
from abtui.core.errors import RemoteError
from abtui.core.model import LinkState
from abtui.core.pids import pgid_problem
from abtui.remote.connection import (
    CIPHERS,
    DEFAULT_CONNECT_TIMEOUT,
    KEEPALIVE_COUNT_MAX,
    KEEPALIVE_INTERVAL,
    client_class,
    describe_connect_error,
)
from abtui.remote.control_shell import CommandResult, ControlShell, command_brief
from abtui.remote.keepalive import Keepalive
from abtui.remote.lease import HEARTBEAT_S, LOCK_DIRS, LeaseOrder, LeaseState, heartbeat_command
from abtui.remote.link_lease import take_lease
from abtui.remote.ssh_files import HostKeyChecks, configured_connect_timeout, configured_option
from abtui.remote.sshlib import asyncssh, load
from abtui.remote.streams import (
    PGID_MARK,
    RemoteProcess,
    group_alive_command,
    own_group,
    session_class,
)

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

StateCallback = Callable[["HostLink", LinkState, str], None]


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
        self._keepalive: Keepalive | None = None  # the connection's dead-link detection

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
            "client_factory": lambda: client_class()(self._on_connection_lost,
                                                     self.host_keys.judge),
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
        self._keepalive = Keepalive(conn, KEEPALIVE_INTERVAL, KEEPALIVE_COUNT_MAX)
        self._keepalive.start()  # (where it cannot, asyncssh's own keepalive stays on)
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
        """Take the host's lease in `shell` (abtui.remote.link_lease), in its turn of
        `lease_order` on a first connect."""
        order, self.lease_order = self.lease_order, None

        def named() -> None:
            self.lease_named = True

        reply = await take_lease(shell, alias=self.alias, dirs=self.lease_dirs,
                                 link_id=self._lease_link, timeout=self.connect_timeout,
                                 order=order, named=named)
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
        self._stop_keepalive()
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

    def _stop_keepalive(self) -> None:
        if self._keepalive is not None:
            self._keepalive.stop()
            self._keepalive = None

    async def close(self) -> None:
        self._closing = True
        self._stop_keepalive()
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
        """Start a long command on a channel of its own; lines stream as they are produced.
        The command runs in the process group the stream reports, whatever the SSH server
        (streams.own_group: dropbear leaves it in its connection's group), so ending that
        group ends the command, whoever started it."""
        conn = self._conn
        if conn is None:
            raise RemoteError(self.alias, f"not connected ({self.state})")
        grouped = shlex.quote(own_group(command))
        inner = f"sudo -n sh -c {grouped}" if self.sudo else f"sh -c {grouped}"
        # The session's shell is a process-group leader (sshd calls setsid): report it first.
        wrapped = f"echo {PGID_MARK} $$; exec {inner}"
        session = session_class()(stderr_lines)
        try:
            chan, _ = await conn.create_session(lambda: cast("asyncssh.SSHClientSession[str]",
                                                             session), wrapped,
                                                encoding="utf-8", errors="replace")
        except (asyncssh.Error, OSError) as exc:
            raise RemoteError(self.alias, f"cannot start a command: {exc}") from exc
        rp = RemoteProcess(self, chan, session, command)
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
