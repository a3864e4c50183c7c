"""Which driver a host needs, picked once when abtui connects (from what `uname -s` says), and
the tunnel commands of the OS a journalled tunnel end names (`abtui recover` removes an end
with the commands of the OS that made it). Each driver lives in its OS's package
(abtui.remote.os.linux, abtui.remote.os.freebsd) on the shared base (abtui.remote.os.dialect).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from abtui.core.errors import BadInput
from abtui.remote.os.dialect import Dialect
from abtui.remote.os.freebsd import FreeBSD
from abtui.remote.os.linux import Linux
from abtui.remote.os.tunnels import TunnelCommands

# what a connected host is asked: its answer picks the driver (dialect_for)
OS_COMMAND = "uname -s"
DIALECTS: dict[str, type[Dialect]] = {"Linux": Linux, "FreeBSD": FreeBSD}
TUNNEL_OSES = tuple(cls.name for cls in DIALECTS.values() if cls.tunnels is not None)


def dialect_for(uname_s: str) -> Dialect:
    """The dialect for `uname -s`; raises BadInput for an OS abtui does not speak."""
    cls = DIALECTS.get(uname_s.strip())
    if cls is None:
        raise BadInput(f"unsupported OS {uname_s.strip()!r}: abtui speaks Linux and FreeBSD")
    return cls()


def tunnels_for(os_name: object) -> TunnelCommands:
    """The tunnel commands of the OS a dialect's name names (None or "": Linux, as journals
    of abtui before FreeBSD tunnels are); BadInput for an OS abtui makes no tunnels on."""
    name = str(os_name or "linux").lower()
    for cls in DIALECTS.values():
        if cls.name == name and cls.tunnels is not None:
            return cls.tunnels
    raise BadInput(f"abtui makes tunnels on {' and '.join(TUNNEL_OSES)} hosts, not {name}")


def tunnels_of(record: Mapping[str, Any]) -> TunnelCommands:
    """The tunnel commands of the OS that made a journalled end (its record's `os`)."""
    return tunnels_for(record.get("os"))
