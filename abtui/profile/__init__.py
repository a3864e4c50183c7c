"""TOML profiles: load and check (errors as `FILE:LINE: FIELD: ...`), save keeping comments.

The format is documented in docs/profiles.md; profiles/example.toml shows every field.
"""

from __future__ import annotations

from abtui.profile.load import check_profile, load_profile, parse_profile
from abtui.profile.schema import RESERVED_KEYS

__all__ = ["RESERVED_KEYS", "check_profile", "load_profile", "parse_profile", "save_profile"]


def __getattr__(name: str) -> object:
    """`save_profile` imports tomlkit, which the console's first frame does not need."""
    if name == "save_profile":
        from abtui.profile.save import save_profile

        return save_profile
    raise AttributeError(f"module 'abtui.profile' has no attribute {name!r}")
