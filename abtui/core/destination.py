"""An SSH destination as a profile writes it: an ssh_config alias, or `[user@]host[:port]`.

The user and port written here are given to asyncssh as its own `username` and `port`, and
the host part is what ssh_config is matched against, so a `Host` block still applies
(HostName, IdentityFile, ProxyJump...) and, as with ssh(1), what is written wins over the
config's User and Port. The string as written stays the host's name everywhere else (events,
the session, the undo journal). One parser: the profile check and the links use it.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any

USER = re.compile(r"[A-Za-z0-9_][A-Za-z0-9_.-]{0,31}")
HOST = re.compile(r"[A-Za-z0-9_][A-Za-z0-9_.%-]{0,252}")
PORT = re.compile(r"[0-9]{1,5}")
IPV6 = re.compile(r"[0-9A-Fa-f:.]+(%[A-Za-z0-9_.-]+)?")
EXPECTED = "an ssh_config alias or [user@]host[:port] (IPv6 as [addr]:port)"


@dataclass(frozen=True, slots=True)
class Destination:
    """`user@host:port` taken apart; user and port None when not written."""

    text: str
    host: str
    user: str | None = None
    port: int | None = None

    def connect_args(self) -> tuple[str, dict[str, Any]]:
        """asyncssh.connect's host and the username/port to add (only those written)."""
        extra: dict[str, Any] = {}
        if self.user is not None:
            extra["username"] = self.user
        if self.port is not None:
            extra["port"] = self.port
        return self.host, extra


def parse_destination(text: str) -> Destination:
    """`[user@]host[:port]`; ValueError with what was wrong and what is expected.

    A host of several colons without brackets is an IPv6 address (no port)."""
    if not isinstance(text, str) or not text:
        raise ValueError(f"an empty destination; expected {EXPECTED}")
    user, at, rest = text.rpartition("@")
    if at and not USER.fullmatch(user):
        raise ValueError(f"user {user!r} in {text!r} is not valid; expected {EXPECTED}")
    port_text = ""
    if rest.startswith("["):
        host, close, tail = rest[1:].partition("]")
        if not close or (tail and not tail.startswith(":")) or not IPV6.fullmatch(host):
            raise ValueError(f"{text!r} is not valid; expected {EXPECTED}")
        port_text = tail[1:] if tail else ""
        if tail and not port_text:
            raise ValueError(f"no port after ':' in {text!r}; expected {EXPECTED}")
    elif rest.count(":") == 1:
        host, _, port_text = rest.partition(":")
        if not port_text:
            raise ValueError(f"no port after ':' in {text!r}; expected {EXPECTED}")
    else:
        host = rest
    if ":" not in host and not HOST.fullmatch(host):
        raise ValueError(f"host {host!r} in {text!r} is not valid; expected {EXPECTED}")
    if ":" in host and not IPV6.fullmatch(host):
        raise ValueError(f"{text!r} is not valid; expected {EXPECTED}")
    port = None
    if port_text:
        if not PORT.fullmatch(port_text) or not 1 <= int(port_text) <= 65535:
            raise ValueError(f"port {port_text!r} in {text!r} is not valid; expected a "
                             "number from 1 to 65535")
        port = int(port_text)
    return Destination(text, host, user if at else None, port)
