"""The dialects abtui speaks, by what `uname -s` says, and which one a host needs. Each lives
in a module of its own (abtui.remote.linux, abtui.remote.freebsd) on the shared base
(abtui.remote.dialect).
"""

from __future__ import annotations

from abtui.core.errors import BadInput
from abtui.remote.dialect import Dialect
from abtui.remote.freebsd import FreeBSD
from abtui.remote.linux import Linux

DIALECTS: dict[str, type[Dialect]] = {"Linux": Linux, "FreeBSD": FreeBSD}


def dialect_for(uname_s: str) -> Dialect:
    """The dialect for `uname -s`; raises BadInput for an OS abtui does not speak."""
    cls = DIALECTS.get(uname_s.strip())
    if cls is None:
        raise BadInput(f"unsupported OS {uname_s.strip()!r}: abtui speaks Linux and FreeBSD")
    return cls()
