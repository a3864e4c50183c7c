"""Files written whole or not at all: every report, plot, saved copy, compacted session and
profile abtui writes goes through `atomic_file`.

The bytes go to a hidden temporary file in the target's own folder (`.NAME.XXXX.tmp`), are
fsync'ed, and only then renamed over the name asked for, so a kill, a full disk or an I/O
error at any point leaves the file that was there (or none) and never a torn one. Its errors
are one line naming the file (CannotWrite): no such folder, a folder in its place, the error
the system gave.
"""

from __future__ import annotations

import contextlib
import os
import tempfile
from collections.abc import Iterator
from pathlib import Path
from typing import BinaryIO

from abtui.core.errors import CannotWrite


def _umask() -> int:
    """The process's umask, read without changing it (Linux says it in /proc)."""
    with contextlib.suppress(OSError, ValueError):
        for line in Path("/proc/self/status").read_text().splitlines():
            if line.startswith("Umask:"):
                return int(line.split()[1], 8)
    mask = os.umask(0o022)
    os.umask(mask)
    return mask


def why(exc: OSError) -> str:
    """An OSError as a person reads it: the system's words, without Python's prefix."""
    return exc.strerror or str(exc)


def _checked(path: Path) -> None:
    """The target can be written at all: its folder exists, and it is not a folder."""
    if path.is_dir():
        raise CannotWrite(f"{path}: is a folder; give a file name")
    if not path.parent.is_dir():
        raise CannotWrite(f"{path}: no such folder {path.parent}; create it or give "
                          "another path")


@contextlib.contextmanager
def atomic_file(path: str | os.PathLike[str], new_mode: int | None = None
                ) -> Iterator[BinaryIO]:
    """A binary file to write `path`'s new content to; on leaving the block it is fsync'ed
    and renamed over `path` (its permissions kept, a new one made as `open` would, or with
    `new_mode`: a session's 0600). Left by
    an exception, nothing is renamed and the temporary file is removed. OSError, raised by
    the block or on the way out, becomes CannotWrite naming `path`."""
    target = Path(path)
    _checked(target)
    try:
        fd, tmp = tempfile.mkstemp(dir=target.parent, prefix=f".{target.name}.", suffix=".tmp")
    except OSError as exc:
        raise CannotWrite(f"{target}: cannot write there ({why(exc)})") from None
    try:
        with os.fdopen(fd, "wb") as fh:
            yield fh
            fh.flush()
            os.fsync(fh.fileno())
        try:
            mode = target.stat().st_mode & 0o7777
        except FileNotFoundError:
            mode = new_mode if new_mode is not None else 0o666 & ~_umask()
        os.chmod(tmp, mode)
        os.replace(tmp, target)
    except OSError as exc:
        with contextlib.suppress(OSError):
            os.unlink(tmp)
        kept = " (the file there is unchanged)" if target.exists() else ""
        raise CannotWrite(f"{target}: cannot write ({why(exc)}); nothing written{kept}") \
            from None
    except BaseException:
        with contextlib.suppress(OSError):
            os.unlink(tmp)
        raise
    with contextlib.suppress(OSError):  # the rename on disk too; the file is whole already
        fsync_dir(target.parent)


def write_atomic(path: str | os.PathLike[str], data: str | bytes) -> Path:
    """Write `data` (text as UTF-8) to `path` whole or not at all (atomic_file)."""
    with atomic_file(path) as fh:
        fh.write(data.encode() if isinstance(data, str) else data)
    return Path(path)


def fsync_dir(folder: Path) -> None:
    """A folder's entries (a file made, renamed or removed there) on disk."""
    fd = os.open(folder, os.O_RDONLY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)
