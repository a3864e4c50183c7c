"""asyncssh, imported when a link first uses it, not when abtui starts.

Importing asyncssh (and the `cryptography` it loads) costs a quarter of a second of CPU and
more on a busy machine; the console imports the engine, and so this layer, before its first
frame, which needs no SSH. Modules of this layer write `from abtui.remote.sshlib import
asyncssh` and use it as the module; `await load()` imports it in a worker thread before the
first connection, so the console's screen stays responsive meanwhile.
"""

from __future__ import annotations

import asyncio
import importlib
import sys
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    import asyncssh as asyncssh
else:
    class _OnFirstUse:
        """The asyncssh module, imported on the first attribute read."""

        def __getattr__(self, name: str) -> Any:
            return getattr(importlib.import_module("asyncssh"), name)

    asyncssh = _OnFirstUse()


async def load() -> None:
    """asyncssh imported, in a worker thread when it is not yet (the event loop goes on)."""
    if "asyncssh" not in sys.modules:
        await asyncio.to_thread(importlib.import_module, "asyncssh")
