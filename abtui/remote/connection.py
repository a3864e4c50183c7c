"""How a link connects: the asyncssh options every connection gets (keepalives, ciphers), its
client class (the connection's loss and the host-key judgement handed back to the link), and
one line that says why a connection failed and what to do.
"""

from __future__ import annotations

import functools
from collections.abc import Callable

from abtui.core.errors import RemoteError
from abtui.remote.sshlib import asyncssh

KEEPALIVE_INTERVAL = 2.0
KEEPALIVE_COUNT_MAX = 3
DEFAULT_CONNECT_TIMEOUT = 10.0
# The ciphers offered first: AEAD only, AES-GCM ahead of chacha20-poly1305 (asyncssh's first
# choice), then asyncssh's other defaults for servers without these. AES-GCM is one OpenSSL
# call a packet (AES-NI); asyncssh's chacha20-poly1305 builds three cipher objects and a
# Poly1305 tag in Python per packet: 7-9 us against 47 us a packet, most of the client's
# crypto on a knob flip (docs/performance.md). An ssh_config `Ciphers` line still decides.
CIPHERS = ("aes128-gcm@openssh.com", "aes256-gcm@openssh.com", "chacha20-poly1305@openssh.com")


LostCallback = Callable[["asyncssh.SSHClientConnection | None", "Exception | None"], None]
JudgeKey = Callable[[str, str, int, "asyncssh.SSHKey"], bool]


@functools.cache
def client_class() -> Callable[[LostCallback, JudgeKey], asyncssh.SSHClient]:
    """The asyncssh client class of a link (defined on first use: asyncssh is imported then,
    abtui.remote.sshlib): its connection's loss said to `on_lost`, a host key known_hosts
    does not list judged by `judge` (HostKeyChecks.judge: unknown told from changed)."""

    class _Client(asyncssh.SSHClient):
        def __init__(self, on_lost: LostCallback, judge: JudgeKey) -> None:
            self._on_lost = on_lost
            self._judge = judge
            self._conn: asyncssh.SSHClientConnection | None = None

        def connection_made(self, conn: asyncssh.SSHClientConnection) -> None:
            self._conn = conn

        def connection_lost(self, exc: Exception | None) -> None:
            self._on_lost(self._conn, exc)

        def validate_host_public_key(self, host: str, addr: str, port: int,
                                     key: asyncssh.SSHKey) -> bool:
            """Called only for a key known_hosts does not list: tell unknown from changed."""
            return self._judge(host, addr, port, key)

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
