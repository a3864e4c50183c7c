"""`abtui recover` ended by SIGTERM: it stops, says that what it did not set back stays in the
undo journal, and exits 143 (abtui.core.signals), through the CLI's one error line."""

from __future__ import annotations

import asyncio
import os
import signal
from types import SimpleNamespace

import pytest

import abtui.hosts.restore
import abtui.hosts.undo
from abtui.cli import main


def test_sigterm_ends_recover_with_143_and_the_journal_kept(monkeypatch, capsys) -> None:
    ended: list[str] = []

    async def slow(pending, say, **_kw) -> bool:  # type: ignore[no-untyped-def]
        asyncio.get_running_loop().call_later(0.05, os.kill, os.getpid(), signal.SIGTERM)
        try:
            await asyncio.sleep(30)
        finally:
            ended.append("stopped")
        return True

    monkeypatch.setattr(abtui.hosts.undo, "pending_recovery",
                        lambda: [SimpleNamespace(involved=["h1"])])
    monkeypatch.setattr(abtui.hosts.restore, "recover_all", slow)
    assert main(["recover"]) == 143
    assert ended == ["stopped"]
    err = capsys.readouterr().err.strip()
    assert err == ("abtui: ended by SIGTERM: what was not set back stays in the undo journal: "
                   "run `abtui recover` again")


@pytest.fixture(autouse=True)
def _default_handlers():  # type: ignore[no-untyped-def]
    yield
    assert signal.getsignal(signal.SIGTERM) is signal.SIG_DFL
