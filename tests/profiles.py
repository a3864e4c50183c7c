"""Profiles for unit tests, built one way: pair N of a test profile is label A, B, ... with
sender `s`/`r` (`s2`/`r2` from the second on) and target 198.18.N.2, unless a test names its
own; `profile` makes the `Profile` around them, `profile_toml` the same pairs as a profile
file's text for the tests that go through the loader."""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from typing import Any

from abtui.core.model import Knob, KnobKind, Pair, Profile


def pair(n: int = 1, **fields: Any) -> Pair:
    """Pair `n` (1: A): `s`→`r` at 198.18.1.2, `s2`→`r2` at 198.18.2.2, ...; `fields`
    override any of Pair's."""
    suffix = "" if n == 1 else str(n)
    base: dict[str, Any] = {"label": chr(ord("A") + n - 1), "sender": f"s{suffix}",
                            "receiver": f"r{suffix}", "target": f"198.18.{n}.2"}
    return Pair(**(base | fields))


def profile(*knobs: Knob, pairs: int | Sequence[Pair] = 1, name: str = "p",
            **fields: Any) -> Profile:
    """A profile of `knobs` on `pairs` (a count of `pair`s, or the pairs themselves);
    `fields` are Profile's others (test, plan, ...)."""
    made = [pair(n) for n in range(1, pairs + 1)] if isinstance(pairs, int) else list(pairs)
    return Profile(name=name, pairs=made, knobs=list(knobs), **fields)


def sysctl(name: str, key: str, values: Iterable[str], **fields: Any) -> Knob:
    """A sysctl knob."""
    return Knob(name=name, kind=KnobKind.SYSCTL, key=key, values=tuple(values), **fields)


def pairs_toml(*pairs: Pair) -> str:
    """The pairs as a profile file's `[[pairs]]` tables (label, hosts, target, and the
    devices where set)."""
    out = []
    for p in pairs:
        out += ["[[pairs]]", f'label = "{p.label}"', f'sender = "{p.sender}"',
                f'receiver = "{p.receiver}"', f'target = "{p.target}"']
        out += [f'{key} = "{value}"' for key, value in (("sender_device", p.sender_device),
                                                         ("receiver_device", p.receiver_device))
                if value is not None]
    return "\n".join(out) + "\n"


def profile_toml(*pairs: Pair, head: str = "", knobs: str = "") -> str:
    """A profile file's text: `head` (its [profile], [test] ... tables), the pairs, then
    `knobs` (its [[knobs]] tables, as written)."""
    return head + pairs_toml(*pairs) + knobs
