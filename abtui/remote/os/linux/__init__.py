"""Linux hosts: the driver (`Linux`: the knobs' commands, `knobs.py`) and its parts, the build
commands (`builds.py`) and the tunnel commands (`tunnels.py`)."""

from abtui.remote.os.linux.knobs import Linux

__all__ = ["Linux"]
