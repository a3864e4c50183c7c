"""Setting everything back on exit or Ctrl-C: processes ended, tunnels removed, knobs restored.

The engine calls `set_back` from its shutdown (also when cancelled by Ctrl-C); after a crash,
`abtui recover` does the same from the undo journal.
"""

from __future__ import annotations

import asyncio
from collections.abc import Iterable

from abtui.hosts.knobs import KnobManager
from abtui.hosts.tunnels import TunnelManager
from abtui.hosts.undo import UndoJournal
from abtui.remote.streams import RemoteProcess


async def set_back(knobs: KnobManager | None = None, tunnels: TunnelManager | None = None,
                   journal: UndoJournal | None = None,
                   processes: Iterable[RemoteProcess] = ()) -> list[str]:
    """Undo what this session changed; returns one line per failure (empty: all set back).
    The journal is removed only when everything was set back, else kept for `abtui recover`."""
    failures: list[str] = []
    procs = list(processes)
    ended = await asyncio.gather(*(p.terminate() for p in procs), return_exceptions=True)
    for proc, res in zip(procs, ended, strict=True):
        if isinstance(res, BaseException):
            failures.append(f"{proc.link.alias}: could not end {proc.command[:40]!r}: {res}")
        elif journal is not None and proc.pgid is not None:
            journal.forget_pgid(proc.link.alias, proc.pgid)
    if tunnels is not None:
        try:
            await tunnels.down_all()
        except Exception as exc:  # reported, and the knobs are still restored
            failures.append(str(exc))
    if knobs is not None:
        failures += [f"{r.host}: could not restore {r.setting.label()}: {r.message}"
                     for r in await knobs.restore_all() if not r.ok]
    if journal is not None:
        if failures:
            journal.close()
        else:
            journal.finish()
    return failures
