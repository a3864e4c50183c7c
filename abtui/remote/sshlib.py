"""asyncssh, imported when a link first uses it, not when abtui starts.

Importing asyncssh (and the `cryptography` it loads) costs a quarter of a second of CPU and
more on a busy machine; the console imports the engine, and so this layer, before its first
frame, which needs no SSH. Modules of this layer write `from abtui.remote.sshlib import
asyncssh` and use it as the module; `await load()` imports it in a worker thread before the
first connection, so the console's screen stays responsive meanwhile.

Every link waits for that one import: asyncssh is in `sys.modules` from the moment its import
starts, and a second link that took that for "imported" read an attribute of the half-built
module, and so waited on the import's module lock on the event loop until the worker thread
was done (4 links connected at once: the loop stopped 0.2-0.7 s for a few ms of CPU).
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import contextlib
import importlib
import sys
import threading
import warnings
from collections.abc import Iterator
from typing import TYPE_CHECKING, Any

# asyncssh's modules whose warnings are theirs to fix, not the user's to read: its DSA support
# reads cryptography's deprecated DSA classes at import (and when keys are loaded, an
# ssh-agent's among them), ten CryptographyDeprecationWarning lines on every command
_QUIET_MODULES = r"asyncssh(\.|$)"


def quiet() -> None:
    """Library warnings raised from asyncssh's own modules kept off the user's terminal: a
    filter scoped to those modules and to cryptography's deprecation warnings, installed
    before asyncssh is imported (idempotent: filterwarnings replaces an equal filter).
    Importing cryptography.utils here costs nothing asyncssh's import does not pay."""
    from cryptography.utils import CryptographyDeprecationWarning

    warnings.filterwarnings("ignore", category=CryptographyDeprecationWarning,
                            module=_QUIET_MODULES)


def _import_asyncssh() -> Any:
    quiet()
    return importlib.import_module("asyncssh")


if TYPE_CHECKING:
    import asyncssh as asyncssh
else:
    class _OnFirstUse:
        """The asyncssh module, imported on the first attribute read."""

        def __getattr__(self, name: str) -> Any:
            return getattr(_import_asyncssh(), name)

    asyncssh = _OnFirstUse()


_guard = threading.Lock()
_importing: concurrent.futures.Future[None] | None = None


def imported() -> bool:
    """Whether asyncssh is in `sys.modules` and its import is over (not still running in
    another thread: the import system marks a module's spec while it is being executed)."""
    module = sys.modules.get("asyncssh")
    return module is not None and not getattr(getattr(module, "__spec__", None),
                                              "_initializing", False)


def _find_library(name: str) -> str | None:
    """ctypes.util.find_library without the compiler: the dynamic linker's cache (as
    find_library looks first), then the loader itself (LD_LIBRARY_PATH, its default
    folders). find_library goes on to run gcc and ld (`-l NAME`) where the cache has no such
    library, and asyncssh's import asks it for liboqs twice (its post-quantum key exchanges,
    optional): four more processes, 55 ms of wall time and 20 ms of their CPU on the way to
    the first connection on this machine where liboqs is not installed."""
    import ctypes.util  # (ctypes: imported by asyncssh's import, which calls this)

    found = ctypes.util._findSoname_ldconfig(name)  # type: ignore[attr-defined]
    if found:
        return str(found)
    for candidate in (f"lib{name}.so", f"{name}.so"):
        try:
            ctypes.CDLL(candidate)
        except OSError:
            continue
        return candidate
    return None


@contextlib.contextmanager
def _libraries_found_by_the_loader() -> Iterator[None]:
    """ctypes.util.find_library is _find_library while asyncssh is imported (on Linux, where
    find_library falls back to the compiler; asyncssh's own modules are its only callers
    then: the console's other threads do not load libraries)."""
    import ctypes.util

    if not sys.platform.startswith("linux") or not hasattr(ctypes.util, "_findSoname_ldconfig"):
        yield
        return
    original = ctypes.util.find_library
    ctypes.util.find_library = _find_library
    try:
        yield
    finally:
        ctypes.util.find_library = original


def _import() -> concurrent.futures.Future[None]:
    """The one import of asyncssh in a worker thread, started by the first caller."""
    global _importing
    with _guard:
        if _importing is None:
            done: concurrent.futures.Future[None] = concurrent.futures.Future()

            def work() -> None:
                try:
                    with _libraries_found_by_the_loader():
                        _import_asyncssh()
                except BaseException as exc:  # said to every waiter
                    done.set_exception(exc)
                else:
                    done.set_result(None)

            threading.Thread(target=work, name="abtui-import-asyncssh", daemon=True).start()
            _importing = done
        return _importing


async def load() -> None:
    """asyncssh imported, in a worker thread when it is not yet (the event loop goes on); a
    caller that comes while the import runs waits for the same import."""
    if not imported():
        await asyncio.wrap_future(_import())
