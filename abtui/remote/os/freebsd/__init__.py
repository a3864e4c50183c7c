"""FreeBSD hosts: the driver (`FreeBSD`: the knobs' commands, `knobs.py`) and its parts, the
build commands (`builds.py`) and the tunnel commands (`tunnels.py`)."""

from abtui.remote.os.freebsd.knobs import FreeBSD

__all__ = ["FreeBSD"]
