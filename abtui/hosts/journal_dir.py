"""Where the undo journals live (one file per controller process): named by the journal's
writer and reader (abtui.hosts.undo) and by the start-up check that looks for one before
reading any (abtui.hosts.journals)."""

from __future__ import annotations

from pathlib import Path


def undo_dir() -> Path:
    from platformdirs import user_state_dir

    return Path(user_state_dir("abtui")) / "undo"
