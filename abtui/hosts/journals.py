"""The line a command says before it starts when an earlier abtui left changes on hosts.
Kept apart from the journal's records (abtui.hosts.undo, abtui.hosts.undo_records: a score
of dataclasses, 15 ms of CPU to import) so that a console with no journal left, the usual
case, does not import them before its first frame (docs/performance.md: `first_frame_s`);
they are imported when a journal is there to read."""

from __future__ import annotations

from pathlib import Path

from abtui.hosts.journal_dir import undo_dir


def recovery_notice(directory: Path | None = None) -> str | None:
    """One line offering `abtui recover` when an earlier abtui left changes on hosts."""
    d = directory or undo_dir()
    try:
        if not d.is_dir() or next(d.glob("*.jsonl"), None) is None:
            return None  # no journal at all: nothing to read (nor to remove)
        from abtui.hosts.undo import pending_recovery

        pending = pending_recovery(d)
    except OSError:
        return None
    if not pending:
        return None
    hosts = sorted({h for p in pending for h in p.involved})
    return (f"an earlier abtui (killed, or its hosts unreachable) left changes on "
            f"{', '.join(hosts) or 'hosts'}: run `abtui recover` to set them back")
