"""A persistent link to one host: one asyncssh connection, one long-lived control shell.

Short commands (sysctl reads and writes, ethtool, kill) go through the control shell, framed by
a random sentinel, so each costs about a millisecond instead of a new SSH channel (~120 ms).
Long commands (iperf3, ping, watches) get a channel of their own and stream stdout line by
line; each reports its process group first, so cancelling ends it and its children for certain.
A dropped connection is noticed by keepalives and re-opened with backoff; state changes are
reported to a callback. A destination written `user@host:port` connects as that user to that
port (abtui.core.destination), with the ssh_config `Host` block of `host` still applied.
Host keys are checked against known_hosts (~/.ssh/config and ssh-agent apply, as asyncssh loads
them by default): an unknown key is refused unless the profile accepts new keys (then it is
recorded), a changed key always, naming the known_hosts line.
"""

from __future__ import annotations

import asyncio
import contextlib
import secrets
import shlex
from collections import deque
from collections.abc import AsyncIterator, Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import asyncssh

from abtui.core.destination import Destination, parse_destination
from abtui.core.errors import RemoteError
from abtui.core.model import LinkState

KEEPALIVE_INTERVAL = 2.0
KEEPALIVE_COUNT_MAX = 3
DEFAULT_CONNECT_TIMEOUT = 10.0
RECONNECT_BACKOFF = (0.5, 1.0, 2.0, 4.0, 5.0)
PGID_MARK = "__ABTUI_PGID__"

StateCallback = Callable[["HostLink", LinkState, str], None]


@dataclass(slots=True)
class CommandResult:
    exit_status: int
    stdout: str
    stderr: str

    @property
    def ok(self) -> bool:
        return self.exit_status == 0


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
        return self._link._judge_host_key(host, addr, port, key)


def _known_hosts_entry(files: list[str], host: str, addr: str,
                       port: int) -> tuple[str, int] | None:
    """The first known_hosts file and line that lists `host` (under any key), or None."""
    for path in files:
        try:
            lines = Path(path).expanduser().read_text(errors="replace").splitlines()
        except OSError:
            continue
        for number, line in enumerate(lines, 1):
            if not line.strip() or line.lstrip().startswith("#"):
                continue
            try:
                entry = asyncssh.import_known_hosts(line + "\n")
            except (ValueError, asyncssh.Error):
                continue
            if any(entry.match(host, addr, port if port != 22 else None)[:2]):
                return str(Path(path).expanduser()), number
    return None


def describe_connect_error(alias: str, exc: BaseException, hostkey: str = "") -> str:
    """One line that says what went wrong connecting to `alias` and what to do."""
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


def configured_connect_timeout(ssh_config: str | None, host: str) -> float | None:
    """The ConnectTimeout of the host's block in the ssh_config (read by asyncssh's own config
    reader), None where it sets none or the file cannot be read (connecting says why)."""
    if not ssh_config:
        return None
    try:
        import getpass

        from asyncssh.config import SSHClientConfig

        config = SSHClientConfig.load(None, [ssh_config], False, False, False,
                                      getpass.getuser(), (), host, ())
        value = config.get("ConnectTimeout", None)
        return float(value) if isinstance(value, int | float | str) and value else None
    except Exception:  # asyncssh's reader: any trouble means the default
        return None


class HostLink:
    """One host: connection, control shell, streamed processes, reconnects."""

    def __init__(self, alias: str, *, ssh_config: str | None = None,
                 known_hosts: str | None = None, sudo: bool = False,
                 connect_timeout: float | None = None, on_state: StateCallback | None = None,
                 reconnect: bool = True, accept_new_host_keys: bool = False) -> None:
        self.alias = alias  # as the profile wrote it: the host's name everywhere
        try:
            self.destination = parse_destination(alias)
            self._invalid = ""
        except ValueError as exc:  # said by connect(), as any other reason not to connect
            self.destination, self._invalid = Destination(alias, alias), str(exc)
        self.accept_new_host_keys = accept_new_host_keys
        # what the last host-key check found (a one-line message), and keys we recorded
        self.hostkey_problem = ""
        self.accepted_new_key = False
        self.uid: int | None = None
        self.ssh_config = ssh_config
        self.known_hosts = known_hosts
        self.sudo = sudo
        # a slow host (an emulated VM) gets what its ssh_config's ConnectTimeout says
        self.connect_timeout = connect_timeout or configured_connect_timeout(
            ssh_config, self.destination.host) or DEFAULT_CONNECT_TIMEOUT
        self.on_state = on_state
        self.reconnect = reconnect
        self.state = LinkState.CLOSED
        self._conn: asyncssh.SSHClientConnection | None = None
        self._shell: asyncssh.SSHClientProcess[str] | None = None
        self._shell_lock = asyncio.Lock()
        self._closing = False
        self._reconnect_task: asyncio.Task[None] | None = None
        self._reopening: asyncio.Task[None] | None = None  # a new control shell under way
        self._connected = asyncio.Event()

    # ---- connection ---------------------------------------------------------------------
    def _options(self) -> dict[str, Any]:
        opts: dict[str, Any] = {
            "keepalive_interval": KEEPALIVE_INTERVAL,
            "keepalive_count_max": KEEPALIVE_COUNT_MAX,
            "connect_timeout": self.connect_timeout,
            "client_factory": lambda: _Client(self),
        }
        if self.ssh_config:
            opts["config"] = [self.ssh_config]
        if self.known_hosts:
            opts["known_hosts"] = self.known_hosts
        return opts

    def known_hosts_files(self) -> list[str]:
        """The known_hosts files this link checks (explicit, else from ssh_config, else ~)."""
        if self.known_hosts:
            return [self.known_hosts]
        host, extra = self.destination.connect_args()
        try:
            opts = asyncssh.SSHClientConnectionOptions(
                config=[self.ssh_config] if self.ssh_config else (), host=host, **extra)
            files = opts.known_hosts
        except (OSError, ValueError, asyncssh.Error):
            files = ()
        if isinstance(files, str):
            return [files]
        if isinstance(files, list | tuple) and files:
            return [str(f) for f in files if isinstance(f, str | Path)]
        return [str(Path("~/.ssh/known_hosts").expanduser())]

    def _judge_host_key(self, host: str, addr: str, port: int, key: asyncssh.SSHKey) -> bool:
        """Refuse a changed key always; accept (and record) an unknown one only if allowed."""
        files = self.known_hosts_files()
        entry = _known_hosts_entry(files, host, addr, port)
        name = host if port == 22 else f"[{host}]:{port}"  # as known_hosts lists it
        if entry is not None:
            self.hostkey_problem = (
                f"host key of {self.alias} has CHANGED: {entry[0]} line {entry[1]} holds "
                f"another key for {name}. If the host was reinstalled, remove that line "
                f"(ssh-keygen -R {shlex.quote(name)} -f {entry[0]}) and connect again; "
                "otherwise someone may be intercepting the connection. Refused.")
            return False
        if not self.accept_new_host_keys:
            self.hostkey_problem = (
                f"host key of {self.alias} is unknown (not in {', '.join(files)}): verify it, "
                f"add it (ssh-keyscan), or set accept_new_host_keys = true in the profile")
            return False
        target = Path(next((f for f in files if f != "/dev/null"),
                           "~/.ssh/known_hosts")).expanduser()
        target.parent.mkdir(parents=True, exist_ok=True)
        with target.open("a") as fh:
            fh.write(f"{name} {key.export_public_key().decode().strip()}\n")
        self.accepted_new_key = True
        return True
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

    def _shell_command(self) -> str:
        """The control shell: bash where present (its `read` takes procfs files whole)."""
        shell = "command -v bash >/dev/null 2>&1 && exec bash --noprofile --norc; exec sh"
        return f"{'sudo -n ' if self.sudo else ''}sh -c {shlex.quote(shell)}"

    async def _open(self) -> None:
        self.hostkey_problem = ""
        if self._invalid:
            raise RemoteError(self.alias, self._invalid)
        host, extra = self.destination.connect_args()
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
            shell = await conn.create_process(self._shell_command(), encoding="utf-8",
                                              errors="replace")
        except BaseException:
            conn.close()
            raise
        self._conn, self._shell = conn, shell
        uid = await self.run("id -u", timeout=self.connect_timeout)
        self.uid = int(uid.stdout.strip()) if uid.ok and uid.stdout.strip().isdigit() else None
        self._connected.set()

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
        if self._reconnect_task is not None:
            self._reconnect_task.cancel()
            with contextlib.suppress(asyncio.CancelledError, Exception):
                await self._reconnect_task
        if self._shell is not None:
            self._shell.stdin.write_eof()
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
                  isolate: bool = True) -> CommandResult:
        """Run a shell command in the control shell (stdin closed) and return its result.

        `command` must already be quoted by its builder (see abtui.remote.dialects). It runs in
        a subshell, so `exit` or `cd` cannot touch the control shell; `isolate=False` saves
        that fork (~1 ms) for commands that never exit, such as the dialects' functions.
        """
        opening, closing = ("(", ")") if isolate else ("{", "}")
        async with self._shell_lock:
            if self._shell is None and self._reopening is not None:
                # the last command broke the framing: this one waits for the new shell
                with contextlib.suppress(TimeoutError):
                    await asyncio.wait_for(asyncio.shield(self._reopening), timeout)
            shell = self._shell
            if shell is None:
                raise RemoteError(self.alias, f"not connected ({self.state})")
            mark = f"__ABTUI_{secrets.token_hex(8)}__"
            framed = (f"{opening} {command}\n{closing} </dev/null; "
                      f"printf '\\n{mark} %d\\n' \"$?\"; printf '\\n{mark}\\n' >&2\n")
            try:
                shell.stdin.write(framed)
                both = asyncio.gather(shell.stdout.readuntil(f"\n{mark} "),
                                      shell.stderr.readuntil(f"\n{mark}\n"))
                # on a timeout or a dropped link, the error is ours to report, not the loop's
                both.add_done_callback(lambda f: f.cancelled() or f.exception())
                out, err = await asyncio.wait_for(both, timeout)
                status_line = await asyncio.wait_for(shell.stdout.readline(), timeout)
            except TimeoutError as exc:
                self._reset_shell()
                raise RemoteError(self.alias, f"command timed out after {timeout:g} s: "
                                  f"{command[:80]}") from exc
            except asyncio.CancelledError:
                # the command goes on in this shell: its late output would be the next
                # command's stdout
                self._reset_shell()
                raise
            except (asyncssh.Error, OSError, asyncio.IncompleteReadError, BrokenPipeError) as exc:
                self._reset_shell()
                raise RemoteError(self.alias, f"link lost while running a command: {exc}") from exc
        stdout = out[: -len(f"\n{mark} ")]
        stderr = err[: -len(f"\n{mark}\n")]
        try:
            status = int(status_line.strip())
        except ValueError:
            status = 255
        return CommandResult(status, stdout.removesuffix("\n") if stdout.endswith("\n")
                             else stdout, stderr)

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
        with contextlib.suppress(asyncssh.Error, OSError):
            self._shell = await conn.create_process(self._shell_command(),
                                                    encoding="utf-8", errors="replace")

    async def check(self, command: str, timeout: float = 10.0) -> str:
        """Run a command and return stdout; a non-zero exit raises RemoteError with stderr."""
        result = await self.run(command, timeout=timeout)
        if not result.ok:
            why = result.stderr.strip() or result.stdout.strip() or f"exit {result.exit_status}"
            raise RemoteError(self.alias, why.splitlines()[-1])
        return result.stdout

    # ---- long commands ------------------------------------------------------------------
    async def stream(self, command: str, *, stderr_lines: int = 50) -> RemoteProcess:
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
        """End a process group we started: TERM, then KILL what is left after `grace`."""
        kill = "sudo -n kill" if self.sudo and not self._shell else "kill"
        await self.run(f"{kill} -TERM -{int(pgid)} 2>/dev/null; true")
        deadline = asyncio.get_running_loop().time() + grace
        while asyncio.get_running_loop().time() < deadline:
            alive = await self.run(group_alive_command(pgid))
            if not alive.ok:
                return
            await asyncio.sleep(0.05)
        await self.run(f"{kill} -KILL -{int(pgid)} 2>/dev/null; true")


def group_alive_command(pgid: int) -> str:
    """A shell test that succeeds while process group `pgid` has a member that is not a
    zombie. `kill -0` counts zombies: children orphaned by the kill wait for init to reap
    them (a second and more on some hosts), which made every stop wait out its grace."""
    g = int(pgid)
    return (f"if out=$(ps -A -o pgid= -o stat= 2>/dev/null) && [ -n \"$out\" ]; then "
            f"printf '%s\\n' \"$out\" | awk '$1=={g} && $2 !~ /^Z/ {{f=1}} END {{exit !f}}'; "
            f"else kill -0 -{g} 2>/dev/null; fi")


class RemoteProcess:
    """A streamed remote command: its stdout lines, its process group, and how to end it."""

    def __init__(self, link: HostLink, proc: asyncssh.SSHClientProcess[str], command: str,
                 stderr_lines: int) -> None:
        self.link = link
        self.command = command
        self.pgid: int | None = None
        self._proc = proc
        self._stderr: deque[str] = deque(maxlen=stderr_lines)
        self._stderr_task = asyncio.get_running_loop().create_task(self._drain_stderr())

    async def _read_pgid(self) -> None:
        line = await self._proc.stdout.readline()
        if line.startswith(PGID_MARK):
            with contextlib.suppress(ValueError, IndexError):
                self.pgid = int(line.split()[1])

    async def _drain_stderr(self) -> None:
        with contextlib.suppress(asyncssh.Error, OSError):
            async for line in self._proc.stderr:
                self._stderr.append(line.rstrip("\n"))

    @property
    def stderr(self) -> str:
        return "\n".join(self._stderr)

    async def lines(self) -> AsyncIterator[str]:
        """stdout, line by line, until the process ends or the link drops."""
        try:
            async for line in self._proc.stdout:
                yield line.rstrip("\n")
        except (asyncssh.Error, OSError):
            return

    def write(self, data: str) -> None:
        self._proc.stdin.write(data)

    async def wait(self, timeout: float | None = None) -> int | None:
        """The exit status (None when ended by a signal or the link dropped)."""
        try:
            result = await asyncio.wait_for(self._proc.wait(check=False), timeout)
        except (asyncssh.Error, OSError):
            return None
        finally:
            with contextlib.suppress(Exception):
                await asyncio.wait_for(self._stderr_task, 1.0)
        return result.exit_status if result.exit_status is not None and \
            result.exit_status >= 0 else None

    async def terminate(self, grace: float = 2.0) -> None:
        """End the remote process and all its children, for certain."""
        if self.pgid is not None and self.link.state is LinkState.CONNECTED:
            with contextlib.suppress(RemoteError):
                await self.link.kill_group(self.pgid, grace)
        self._proc.close()
        with contextlib.suppress(Exception):
            await asyncio.wait_for(self._proc.wait_closed(), grace)
        self._stderr_task.cancel()


async def connect_all(links: list[HostLink]) -> dict[str, BaseException | None]:
    """Connect every link concurrently; returns each alias's error (None when connected)."""
    results = await asyncio.gather(*(link.connect() for link in links), return_exceptions=True)
    return {link.alias: (r if isinstance(r, BaseException) else None)
            for link, r in zip(links, results, strict=True)}
