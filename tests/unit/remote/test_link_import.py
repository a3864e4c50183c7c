"""Links connecting while asyncssh is still being imported wait for that one import, run in a
worker thread, without touching the half-built module on the event loop
(abtui.remote.sshlib.load): the console repaints meanwhile.

The import is held at a gate the test opens, so what is checked is the mechanism, not a
timing: before the fix, a second link took asyncssh, already in `sys.modules` while its import
ran, for imported, read an attribute of it on the loop and waited there on the import's lock
(the loop stopped 0.1-0.7 s; a timed version of this test flaked under CI's load)."""

from __future__ import annotations

import asyncio
import importlib.machinery
import sys
import threading
import types

import pytest


async def test_links_connecting_during_the_import_wait_for_it_off_the_loop(
        monkeypatch: pytest.MonkeyPatch) -> None:
    import abtui.remote.sshlib as sshlib

    half_built = types.ModuleType("asyncssh")
    half_built.__spec__ = importlib.machinery.ModuleSpec("asyncssh", None)
    half_built.__spec__._initializing = True  # type: ignore[attr-defined]  # as the import system marks it
    gate, begun = threading.Event(), threading.Event()
    imports: list[str] = []
    loop_thread = threading.get_ident()

    def held_import(name: str) -> types.ModuleType:
        """The import, in whatever thread runs it: in sys.modules at once, whole at the gate."""
        imports.append(name)
        assert threading.get_ident() != loop_thread, "asyncssh imported on the event loop"
        sys.modules[name] = half_built
        begun.set()
        gate.wait(10)
        half_built.__spec__._initializing = False  # type: ignore[union-attr]
        return half_built

    monkeypatch.delitem(sys.modules, "asyncssh", raising=False)
    monkeypatch.setattr(sshlib, "_importing", None)
    monkeypatch.setattr(sshlib.importlib, "import_module", held_import)
    try:
        first = asyncio.create_task(sshlib.load())
        while not begun.is_set():  # the first link's import has begun, in its thread
            await asyncio.sleep(0.005)
        assert "asyncssh" in sys.modules and not sshlib.imported()
        others = [asyncio.create_task(sshlib.load()) for _ in range(3)]
        for _ in range(5):  # the loop goes on while they wait
            await asyncio.sleep(0)
        assert not first.done() and not any(t.done() for t in others), \
            "a link went on with asyncssh half imported"
        gate.set()
        await asyncio.wait_for(asyncio.gather(first, *others), 10)
    finally:
        gate.set()
    assert imports == ["asyncssh"]  # one import for every link
    assert sshlib.imported()
